#include "bs_stop.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static const int stop_sigs[] = {SIGINT, SIGTERM, SIGHUP};
/* Lock-free, so the handler may set it, and other threads read it (a
 * replay's watch, bs_replay_stop.c): a sig_atomic_t is only for the thread
 * the signal interrupts. */
static atomic_int stop_sig;
static int stop_fds[2] = {-1, -1};

/* Async-signal-safe: a flag and one byte. */
static void on_stop(int sig) {
  int saved = errno;
  int none = 0;
  atomic_compare_exchange_strong(&stop_sig, &none, sig);
  if (stop_fds[1] >= 0 && write(stop_fds[1], "", 1) < 0) {
    /* full: the runner has a byte to wake on already */
  }
  errno = saved;
}

bs_status bs_stop_catch(void) {
  if (stop_fds[0] >= 0)
    return BS_OK;
  if (pipe2(stop_fds, O_CLOEXEC | O_NONBLOCK) != 0)
    return bs_err_fail(BS_ERR_INTERNAL, NULL, "signal pipe: %s",
                       strerror(errno));
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop; /* no SA_RESTART: a blocking wait returns */
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof stop_sigs / sizeof stop_sigs[0]; i++)
    sigaction(stop_sigs[i], &sa, NULL);
  return BS_OK;
}

int bs_stop_signal(void) {
  return atomic_load(&stop_sig);
}

int bs_stop_fd(void) {
  return stop_fds[0];
}

const char *bs_stop_name(void) {
  switch (atomic_load(&stop_sig)) {
  case SIGINT:
    return "interrupted by SIGINT";
  case SIGTERM:
    return "interrupted by SIGTERM";
  case SIGHUP:
    return "interrupted by SIGHUP";
  default:
    return "interrupted";
  }
}

void bs_stop_child(pid_t parent) {
  for (size_t i = 0; i < sizeof stop_sigs / sizeof stop_sigs[0]; i++)
    signal(stop_sigs[i], SIG_DFL);
  for (int i = 0; i < 2; i++)
    if (stop_fds[i] >= 0) {
      close(stop_fds[i]);
      stop_fds[i] = -1;
    }
  atomic_store(&stop_sig, 0);
  /* Armed first, then checked: a parent that died in between is seen. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent)
    _exit(1); /* nothing of it ran: nothing to count or flush */
}
