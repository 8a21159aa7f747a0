#include "sync/bs_engine_zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bs_digest.h"
#include "bs_fork_chan.h"
#include "bs_limits.h"
#include "sync/bs_wire.h"

/* The longest the trainer waits for the zygote's answer (a fork or two). */
#define ANSWER_MS 10000
#define PREFIX_MAX 32

_Static_assert(BS_ENGINE_GROUP_MAX <= BS_FORK_CHAN_FDS_MAX,
               "an engine process's sockets fit one channel message");

/* A request: ranks rank..rank+k-1, their sockets in the message's
 * SCM_RIGHTS; the CPUs the asking thread may run on (an engine spawned
 * would have them). The answer: the engine's pid, or <= 0. */
typedef struct ask {
  int32_t k, rank;
  cpu_set_t cpus;
} ask;

/* The process that enabled it (0: none): read before mu is taken, so
 * that a child forked while a thread held mu never waits for it. */
static atomic_int enabled;

/* This process's zygote. Under mu. */
static struct {
  pthread_mutex_t mu;
  pid_t pid;   /* the zygote; 0: none */
  int fd;      /* its socket */
  bool broken; /* it failed once: engines are spawned from then on */
  char *exe, *prefix[PREFIX_MAX + 1];
} z = {.mu = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

static void forget(void) {
  free(z.exe);
  for (int i = 0; z.prefix[i]; i++)
    free(z.prefix[i]);
  memset(z.prefix, 0, sizeof z.prefix);
  z.exe = NULL;
  z.pid = 0;
  z.fd = -1;
}

/* Closes the socket (the zygote ends when it sees it closed) and reaps
 * the zygote, SIGKILL if it lingers. */
static void stop(void) {
  if (z.fd >= 0)
    close(z.fd);
  for (int ms = 0; z.pid > 0 && waitpid(z.pid, NULL, WNOHANG) == 0; ms++) {
    if (ms >= 2000) {
      kill(z.pid, SIGKILL);
      while (waitpid(z.pid, NULL, 0) < 0 && errno == EINTR)
        ;
      break;
    }
    struct timespec tick = {0, 1000000};
    nanosleep(&tick, NULL);
  }
  forget();
}

void bs_engine_zygote_enable(bool on) {
  pthread_mutex_lock(&z.mu);
  if (z.pid > 0 && !on)
    stop();
  atomic_store(&enabled, on ? getpid() : 0);
  z.broken = false;
  pthread_mutex_unlock(&z.mu);
}

static bool same_prefix(char *const *prefix) {
  int i = 0;
  while (prefix && prefix[i] && z.prefix[i] && !strcmp(prefix[i], z.prefix[i]))
    i++;
  return (!prefix || !prefix[i]) && !z.prefix[i];
}

/* The zygote for exe [prefix...], started as an engine would be. This
 * process becomes the reaper of its orphaned descendants: the engines. */
static bool start(const char *exe, char *const *prefix) {
  int sv[2], theirs = -1;
  char fd[16];
  const char *argv[PREFIX_MAX + 6];
  size_t na = 0;
  posix_spawn_file_actions_t fa;
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return false;
  theirs = fcntl(sv[1], F_DUPFD_CLOEXEC, BS_ENGINE_FD + 1);
  close(sv[1]);
  bool ok = theirs >= 0 && (z.exe = strdup(exe)) != NULL &&
            prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  argv[na++] = exe;
  for (int i = 0; ok && prefix && prefix[i]; i++) {
    ok = i < PREFIX_MAX && (z.prefix[i] = strdup(prefix[i]));
    argv[na++] = prefix[i];
  }
  snprintf(fd, sizeof fd, "%d", BS_ENGINE_FD);
  const char *tail[] = {"engine", "--zygote", "--fd", fd, NULL};
  memcpy(&argv[na], tail, sizeof tail);
  posix_spawn_file_actions_init(&fa);
  ok = ok && posix_spawn_file_actions_adddup2(&fa, theirs, BS_ENGINE_FD) == 0 &&
       posix_spawn(&z.pid, exe, &fa, NULL, (char *const *)argv, environ) == 0;
  posix_spawn_file_actions_destroy(&fa);
  if (theirs >= 0)
    close(theirs);
  z.fd = sv[0];
  if (!ok) {
    z.pid = 0;
    stop();
  }
  return ok;
}

/* Sends the request with the sockets; the answer within ANSWER_MS. */
static pid_t request(const int *fds, int k, int rank) {
  ask a = {.k = k, .rank = rank};
  int32_t pid = -1;
  if (sched_getaffinity(0, sizeof a.cpus, &a.cpus) != 0)
    CPU_ZERO(&a.cpus);
  if (!bs_fork_chan_put_fds(z.fd, &a, sizeof a, fds, k) ||
      !bs_fork_chan_get(z.fd, &pid, sizeof pid, NULL, ANSWER_MS))
    return -1;
  return pid;
}

bool bs_engine_zygote_spawn(const char *exe, char *const *prefix,
                            const int *fds, int k, int rank, pid_t *pid) {
  if (atomic_load(&enabled) != getpid())
    return false;
  pthread_mutex_lock(&z.mu);
  bool ok = !z.broken && k >= 1 && k <= BS_ENGINE_GROUP_MAX;
  if (ok && z.pid <= 0 && !start(exe, prefix)) {
    z.broken = true;
    ok = false;
  }
  ok = ok && !strcmp(exe, z.exe) && same_prefix(prefix);
  pid_t got = ok ? request(fds, k, rank) : -1;
  if (ok && got <= 0) { /* gone or unable: spawn from now on */
    z.broken = true;
    stop();
  }
  pthread_mutex_unlock(&z.mu);
  if (got > 0)
    *pid = got;
  return got > 0;
}

/* ---- the zygote ---- */

/* In the engine: its sockets as fds BS_ENGINE_FD.., nothing else open
 * but stdin, stdout and stderr, the asking thread's CPUs; then the body as
 * an executed engine runs it. */
static void run_engine(const ask *a, const int *fds,
                       int (*body)(int argc, char **argv)) {
  int tmp[BS_ENGINE_GROUP_MAX];
  char fd[16], rank[16], count[16];
  close(BS_ENGINE_FD); /* the zygote's socket */
  for (int i = 0; i < a->k; i++)
    if ((tmp[i] = fcntl(fds[i], F_DUPFD, BS_ENGINE_FD + a->k)) < 0)
      _exit(127);
  for (int i = 0; i < a->k; i++)
    if (dup2(tmp[i], BS_ENGINE_FD + i) < 0)
      _exit(127);
  close_range(BS_ENGINE_FD + (unsigned)a->k, ~0U, 0);
  if (CPU_COUNT(&a->cpus) > 0)
    sched_setaffinity(0, sizeof a->cpus, &a->cpus);
  snprintf(fd, sizeof fd, "%d", BS_ENGINE_FD);
  snprintf(rank, sizeof rank, "%d", a->rank);
  snprintf(count, sizeof count, "%d", a->k);
  char *argv[] = {"engine", "--fd", fd, "--rank", rank, NULL, NULL, NULL};
  if (a->k > 1) { /* as bs_engine.c spells a shared process */
    argv[5] = "--count";
    argv[6] = count;
  }
  exit(body(a->k > 1 ? 7 : 5, argv));
}

/* The engine forked through a middle process that exits at once (the
 * engine goes to the asking process, the reaper of this one's orphans):
 * its pid, or -1. */
static pid_t fork_engine(const ask *a, const int *fds,
                         int (*body)(int argc, char **argv)) {
  int p[2];
  pid_t pid = -1;
  if (pipe2(p, O_CLOEXEC) != 0)
    return -1;
  pid_t mid = fork();
  if (mid == 0) {
    pid = fork();
    if (pid == 0)
      run_engine(a, fds, body);
    _exit(write(p[1], &pid, sizeof pid) == sizeof pid ? 0 : 1);
  }
  close(p[1]);
  if (mid > 0 && read(p[0], &pid, sizeof pid) != sizeof pid)
    pid = -1;
  close(p[0]);
  /* Once the middle process is reaped, the engine has its new parent. */
  while (mid > 0 && waitpid(mid, NULL, 0) < 0 && errno == EINTR)
    ;
  return pid;
}

int bs_engine_zygote_serve(int fd, int (*body)(int argc, char **argv)) {
  /* What the trainer had open without CLOEXEC is no engine's business. */
  close_range((unsigned)fd + 1, ~0U, 0);
  bs_digest_prepare(); /* each engine hashes what it is sent */
  for (;;) {
    ask a;
    int fds[BS_ENGINE_GROUP_MAX], n = 0;
    /* No bound: the trainer's closing the socket is the zygote's end. */
    if (!bs_fork_chan_get_fds(fd, &a, sizeof a, fds, BS_ENGINE_GROUP_MAX, &n,
                              -1))
      return 0;
    int32_t pid = n == a.k && a.k >= 1 ? fork_engine(&a, fds, body) : -1;
    for (int i = 0; i < n; i++)
      close(fds[i]);
    if (!bs_fork_chan_put(fd, &pid, sizeof pid, -1))
      return 1;
  }
}
