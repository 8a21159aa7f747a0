#include "run/bs_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bs_clock.h"
#include "bs_file.h"
#include "bs_fork_chan.h"
#include "bs_span.h"
#include "bs_stop.h"
#include "catalog/bs_launcher.h"
#include "catalog/bs_scenario.h"
#include "dev/bs_dev.h"
#include "result/bs_result.h"
#include "run/bs_child_part.h"
#include "run/bs_hangdump.h"
#include "run/bs_parent.h"

/* A worker's word after a run that ended well (its peers read the verdict
 * and return within ms of process 0); an idle worker's wait for its next
 * run (its parent is alive all along: it dies with it); a leaving
 * worker's exit. */
enum { WORD_MS = 5000, IDLE_MS = 3600 * 1000, LEAVE_MS = 2000 };

/* A run's process for worker `proc` (worker 0 also gets the result pipe,
 * as SCM_RIGHTS). */
typedef struct pool_cmd {
  size_t job; /* in the pool's cfgs */
  int proc, nprocs;
  pid_t pids[BS_POOL_MAX]; /* the run's workers: process 0 passes a dump on */
} pool_cmd;

/* What a worker says of itself after its run. */
typedef struct pool_word {
  size_t job;
  int rc;
  int clean; /* kept: the run passed, rc 0, the process as it was */
} pool_word;

typedef struct worker {
  pid_t pid; /* 0: none */
  int fd;    /* the parent's end of its channel, -1: none */
} worker;

static struct {
  const bs_run *cfgs;
  size_t n;
  int size; /* workers; 0: no pool */
  worker w[BS_POOL_MAX];
  char dir[64]; /* the runs' folders: dir/job<j> */
  pid_t parent;
  size_t runs, forked; /* served, and workers forked in all */
} pool;

static double now_ms(void) {
  return (double)bs_clock_mono_ns() / 1e6;
}

static void job_dir(size_t job, char *out, size_t n) {
  snprintf(out, n, "%s/job%zu", pool.dir, job);
}

bool bs_pool_wanted(const bs_run *cfgs, size_t n, int jobs) {
  const char *v = getenv("BS_RANK_POOL");
  if (!v || strcmp(v, "1") != 0 || jobs != 1)
    return false;
  for (size_t i = 0; i < n; i++)
    if (cfgs[i].spawn)
      return true;
  return false;
}

/* ---- the worker ---- */

/* Waits (bounded) for the next run; false: the parent closed the channel,
 * or the wait or the message failed. */
static bool recv_cmd(int sock, pool_cmd *c, int *fd) {
  return bs_fork_chan_get(sock, c, sizeof *c, fd, IDLE_MS) && c->job < pool.n;
}

/* Whether the run, as process 0 published it in the run's folder, passed
 * (a fault it contained included: the driver disarms every fault and
 * mutant before it arms the next run's, and the core's state is the
 * run's own; tests/test_pool.c compares every fault scenario's report in
 * and out of the pool). */
static bool passed(const bs_run *cfg) {
  char dir[1024], path[1100], *data = NULL;
  size_t n = 0;
  bs_result r;
  bool ok = false;
  bs_launcher_run_dir(cfg, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/result.bin", dir);
  if (bs_file_read(path, &data, &n) == BS_OK &&
      bs_result_pack_read(data, n, &r) == BS_OK) {
    ok = r.verdict == BS_PASS;
    bs_result_free(&r);
  }
  bs_err_clear();
  free(data);
  return ok;
}

/* Whether the process is as a fresh worker would be: no process of the
 * run left behind (an engine it started; the ended ones are reaped here)
 * and a CUDA context that a later run can use (no sticky error). */
static bool as_new(void) {
  int ws;
  pid_t pid;
  while ((pid = waitpid(-1, &ws, WNOHANG)) > 0)
    ;
  bool ok = pid < 0 && errno == ECHILD && bs_dev_cuda_settled() == BS_OK;
  bs_err_clear();
  return ok;
}

/* A dump signal still pending after the run: it came at the run's end
 * (the deadline), and would start the next run's dump. */
static bool dump_pending(void) {
  sigset_t set;
  struct timespec zero = {0, 0};
  bool any = false;
  sigemptyset(&set);
  sigaddset(&set, BS_DUMP_SIGNAL);
  while (sigtimedwait(&set, NULL, &zero) == BS_DUMP_SIGNAL)
    any = true;
  return any;
}

/* Process c->proc of run c->job, as a spawned process would run it. */
static int serve_one(const pool_cmd *c, int fd, bool *clean) {
  char dir[1024];
  job_dir(c->job, dir, sizeof dir);
  bs_run cfg = pool.cfgs[c->job];
  cfg.spawn = false;
  cfg.spawned = true;
  cfg.rendezvous = dir;
  cfg.run_index = 0;
  cfg.nprocs = c->nprocs;
  cfg.proc = c->proc;
  if (fd < 0)
    fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  pid_t pids[BS_POOL_MAX];
  memcpy(pids, c->pids, sizeof pids);
  int rc = bs_child_part_run(&cfg, fd, c->proc == 0 ? pids : NULL);
  close(fd);
  *clean = !dump_pending() && rc == 0 && passed(&cfg) && as_new();
  return rc;
}

static _Noreturn void serve(int sock) {
  pool_cmd c;
  int fd;
  while (recv_cmd(sock, &c, &fd)) {
    bool clean = false;
    pool_word w = {.job = c.job};
    w.rc = serve_one(&c, fd, &clean);
    w.clean = clean;
    bs_span_save(); /* before the word: the parent may kill it next */
    if (send(sock, &w, sizeof w, MSG_NOSIGNAL) != (ssize_t)sizeof w || !clean)
      bs_fork_exit(w.rc ? w.rc : 3);
  }
  bs_fork_exit(0);
}

/* Forks worker i (the parent has no threads). */
static bs_status fork_worker(int i) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return bs_err_fail(BS_ERR_INTERNAL, NULL, "rank pool: socketpair: %s",
                       strerror(errno));
  fflush(NULL);
  bs_span_mark_fork();
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]);
    close(sv[1]);
    return bs_err_fail(BS_ERR_INTERNAL, NULL, "rank pool: fork: %s",
                       strerror(errno));
  }
  if (pid == 0) {
    bs_span_forked();
    bs_stop_child(pool.parent); /* it dies with backstop */
    for (int j = 0; j < BS_POOL_MAX; j++)
      if (pool.w[j].fd >= 0)
        close(pool.w[j].fd);
    close(sv[0]);
    bs_hangdump_block(); /* each run's dump thread takes it */
    serve(sv[1]);
  }
  close(sv[1]);
  pool.w[i] = (worker){.pid = pid, .fd = sv[0]};
  pool.forked++;
  return BS_OK;
}

bs_status bs_pool_start(const bs_run *cfgs, size_t n) {
  bs_status st = BS_OK;
  int size = 0;
  for (size_t i = 0; i < n; i++)
    if (cfgs[i].spawn && cfgs[i].ranks > size)
      size = cfgs[i].ranks;
  size = size > BS_POOL_MAX ? BS_POOL_MAX : size;
  memset(&pool, 0, sizeof pool);
  for (int i = 0; i < BS_POOL_MAX; i++)
    pool.w[i].fd = -1;
  BS_CHECK(bs_file_scratch("backstop-pool", pool.dir, sizeof pool.dir));
  pool.cfgs = cfgs;
  pool.n = n;
  pool.parent = getpid();
  pool.size = size;
  for (int i = 0; i < size; i++)
    BS_CHECK(fork_worker(i));
  fprintf(stderr,
          "backstop: rank pool: %d worker processes kept across %zu runs\n",
          size, n);
out:
  if (st != BS_OK)
    bs_pool_stop();
  return st;
}

/* ---- a run's child ---- */

/* Worker 0's result to fd until it closes the pipe; the dump signal the
 * parent sends at the deadline goes on to worker 0. Bounded by the
 * parent's kill (deadline and grace) and a second more. 0: a result. */
static int relay(const bs_run *cfg, int from, int sig, int fd) {
  double limit = bs_parent_limit_s(cfg);
  double until = now_ms() + 1e3 * (limit + bs_parent_grace_s(limit) + 1);
  size_t got = 0;
  for (;;) {
    struct pollfd p[2] = {{.fd = from, .events = POLLIN},
                          {.fd = sig, .events = POLLIN}};
    double left = until - now_ms();
    if (left <= 0 || (poll(p, 2, (int)left + 1) < 0 && errno != EINTR))
      break;
    struct signalfd_siginfo si;
    if (p[1].revents && read(sig, &si, sizeof si) == (ssize_t)sizeof si)
      kill(pool.w[0].pid, BS_DUMP_SIGNAL);
    if (!p[0].revents)
      continue;
    char chunk[65536];
    ssize_t n = read(from, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0 || !bs_fork_write_all(fd, chunk, (size_t)n))
      break;
    got += (size_t)n;
  }
  return got ? 0 : 4;
}

/* Whether cfg is a run the pool serves (every worker it needs there). */
static bool served(const bs_run *cfg) {
  if (!pool.size || cfg < pool.cfgs || cfg >= pool.cfgs + pool.n ||
      !cfg->spawn || cfg->ranks > pool.size)
    return false;
  for (int p = 0; p < cfg->ranks; p++)
    if (pool.w[p].fd < 0)
      return false;
  return true;
}

int bs_pool_run(const bs_run *cfg, int fd) {
  if (!served(cfg))
    return -1;
  int res[2], rc = 4, sig = -1;
  pool_cmd c = {.job = (size_t)(cfg - pool.cfgs), .nprocs = cfg->ranks};
  char dir[1024];
  job_dir(c.job, dir, sizeof dir);
  if (bs_file_remove_tree(dir) != BS_OK || bs_file_mkdir_p(dir) != BS_OK ||
      pipe2(res, O_CLOEXEC) != 0) {
    fprintf(stderr, "backstop: rank pool: %s\n", bs_err()->message);
    return rc;
  }
  for (int p = 1; p < cfg->ranks; p++) /* [0] unused (bs_child_part.h) */
    c.pids[p] = pool.w[p].pid;
  bs_hangdump_block();
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, BS_DUMP_SIGNAL);
  sig = signalfd(-1, &set, SFD_CLOEXEC);
  bool sent = sig >= 0;
  for (int p = 0; sent && p < cfg->ranks; p++) {
    c.proc = p;
    sent = bs_fork_chan_put(pool.w[p].fd, &c, sizeof c, p == 0 ? res[1] : -1);
  }
  close(res[1]);
  if (sent)
    rc = relay(cfg, res[0], sig, fd);
  else
    fprintf(stderr, "backstop: rank pool: a worker of %s is gone\n",
            cfg->scn->name);
  close(res[0]);
  if (sig >= 0)
    close(sig);
  return rc;
}

/* ---- the parent ---- */

/* Worker p's word on run job, waited for until `until` (mono ms). */
static bool word_of(int p, size_t job, double until, pool_word *w) {
  struct pollfd pf = {.fd = pool.w[p].fd, .events = POLLIN};
  for (;;) {
    double left = until - now_ms();
    int r = poll(&pf, 1, left > 0 ? (int)left + 1 : 0);
    if (r < 0 && errno == EINTR && !bs_stop_signal())
      continue;
    if (r <= 0 || !(pf.revents & POLLIN))
      return false;
    return recv(pf.fd, w, sizeof *w, 0) == (ssize_t)sizeof *w && w->job == job;
  }
}

/* Worker p, to be replaced: killed unless it is dead already (then the
 * signal it died of, 0 for an exit, is the result). Reaped by reap_worker,
 * so that workers whose CUDA contexts the kernel tears down go together. */
static int kill_worker(int p) {
  int ws = 0;
  pid_t pid = pool.w[p].pid;
  if (pid > 0 && waitpid(pid, &ws, WNOHANG) == pid) {
    pool.w[p].pid = 0;
    return WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
  }
  if (pid > 0)
    kill(pid, SIGKILL);
  return 0;
}

static void reap_worker(int p) {
  pid_t pid = pool.w[p].pid;
  while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
  if (pool.w[p].fd >= 0)
    close(pool.w[p].fd);
  pool.w[p] = (worker){.fd = -1};
}

void bs_pool_after(size_t job, bs_job_out *out) {
  if (!pool.size || job >= pool.n || !served(&pool.cfgs[job]))
    return;
  char dir[1024];
  bool gone[BS_POOL_MAX] = {false};
  int n = pool.cfgs[job].ranks;
  bool ended = out->end == BS_JOB_EXITED;
  pool.runs++;
  double until = now_ms() + (ended ? WORD_MS : 0);
  for (int p = 0; p < n; p++) {
    pool_word w;
    gone[p] = !(ended && word_of(p, job, until, &w) && w.clean);
  }
  for (int p = 0; p < n; p++) {
    int sig = gone[p] ? kill_worker(p) : 0;
    if (p == 0 && sig && !out->len && ended) {
      out->end = BS_JOB_SIGNALED;
      out->code = sig;
    }
  }
  for (int p = 0; p < n; p++) {
    if (!gone[p])
      continue;
    reap_worker(p);
    if (!bs_stop_signal() && fork_worker(p) != BS_OK) {
      fprintf(stderr, "backstop: rank pool: %s\n", bs_err()->message);
      bs_err_clear();
    }
  }
  job_dir(job, dir, sizeof dir);
  if (bs_file_remove_tree(dir) != BS_OK)
    bs_err_clear(); /* a leftover in /tmp does not change a verdict */
}

void bs_pool_stop(void) {
  if (!pool.parent)
    return;
  bool now = bs_stop_signal() != 0;
  for (int p = 0; p < BS_POOL_MAX; p++) {
    if (pool.w[p].fd >= 0)
      close(pool.w[p].fd); /* it leaves, its spans written */
    pool.w[p].fd = -1;
    if (now && pool.w[p].pid > 0)
      kill(pool.w[p].pid, SIGKILL);
  }
  double until = now_ms() + LEAVE_MS;
  for (int p = 0; p < BS_POOL_MAX; p++) {
    pid_t pid = pool.w[p].pid;
    while (pid > 0 && waitpid(pid, NULL, WNOHANG) == 0) {
      if (now_ms() >= until)
        kill(pid, SIGKILL);
      struct timespec nap = {0, 1000000L};
      nanosleep(&nap, NULL);
    }
  }
  if (pool.dir[0] && bs_file_remove_tree(pool.dir) != BS_OK)
    bs_err_clear();
  if (pool.size)
    fprintf(stderr, "backstop: rank pool: %zu runs on %zu worker processes\n",
            pool.runs, pool.forked);
  memset(&pool, 0, sizeof pool);
}

bs_status bs_pool_run_all(const bs_run *cfgs, size_t n, const bs_parent_opts *o,
                          bs_result *out) {
  bs_status st = BS_OK;
  bs_parent_opts po = *o;
  bool pooled = bs_pool_wanted(cfgs, n, o->jobs);
  if (pooled) {
    BS_CHECK(bs_pool_start(cfgs, n));
    po.ended = bs_pool_after;
  }
  st = bs_parent_run(cfgs, n, &po, out);
out:
  if (pooled)
    bs_pool_stop();
  return st;
}
