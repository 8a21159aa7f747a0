#include "sync/bs_engine_keep.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sync/bs_engine_zygote.h"
#include "sync/bs_wire.h"

/* Engines kept at most: the largest world a worker's runs have, and more
 * than any simulated run of the suites and campaigns. */
#define KEEP_CAP 64
#define QUIT_MS 2000

static struct {
  pthread_mutex_t mu;
  int max, n;
  pid_t pid[KEEP_CAP];
  int fd[KEEP_CAP];
} kept = {.mu = PTHREAD_MUTEX_INITIALIZER};

static atomic_int busy;

/* An idle engine told to quit, waited for (bounded), killed past it. */
static void quit(pid_t pid, int fd) {
  bs_wire_frame(fd, BS_EMSG_QUIT, NULL, 0, 0, QUIT_MS);
  close(fd);
  for (int ms = 0; waitpid(pid, NULL, WNOHANG) == 0; ms++) {
    if (ms >= QUIT_MS) {
      kill(pid, SIGKILL);
      while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
      return;
    }
    struct timespec tick = {0, 1000000};
    nanosleep(&tick, NULL);
  }
}

void bs_engine_keep(int max) {
  /* A process that keeps engines starts many: it forks them from a
   * zygote (bs_engine_zygote.h). */
  bs_engine_zygote_enable(max > 0);
  pthread_mutex_lock(&kept.mu);
  kept.max = max < 0 ? 0 : max > KEEP_CAP ? KEEP_CAP : max;
  while (kept.n > kept.max) {
    kept.n--;
    quit(kept.pid[kept.n], kept.fd[kept.n]);
  }
  pthread_mutex_unlock(&kept.mu);
}

int bs_engine_keep_busy(void) {
  return atomic_load(&busy);
}

bool bs_engine_keep_park(pid_t pid, int fd) {
  pthread_mutex_lock(&kept.mu);
  bool ok = kept.n < kept.max;
  if (ok) {
    kept.pid[kept.n] = pid;
    kept.fd[kept.n++] = fd;
  }
  pthread_mutex_unlock(&kept.mu);
  return ok;
}

bool bs_engine_keep_take(pid_t *pid, int *fd) {
  pthread_mutex_lock(&kept.mu);
  bool ok = kept.n > 0;
  if (ok) {
    *pid = kept.pid[--kept.n];
    *fd = kept.fd[kept.n];
  }
  pthread_mutex_unlock(&kept.mu);
  return ok;
}

void bs_engine_keep_use(int delta) {
  atomic_fetch_add(&busy, delta);
}
