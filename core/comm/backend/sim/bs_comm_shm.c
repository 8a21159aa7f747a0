/* The sim communicator across processes of one host: the staged
 * rendezvous of bs_rounds.c on a board in a MAP_SHARED mapping of one
 * file (o.shm_path), guarded by a robust, process-shared mutex and
 * condition variable. Reports call it "sim": only the memory differs.
 *
 * The file: a header (round, the world's shared failure), one slot per
 * global rank, the pid of each rank's process, then a staging region of
 * BS_SHM_STAGE_CAP bytes per global rank (the file is sparse). The process
 * of global rank 0 writes it whole under a temporary name and renames it,
 * so a process that finds the file finds it initialised.
 *
 * Failures cross processes through the header: whoever fails its world
 * writes the status and cause there before it wakes the waiters, and a
 * waiter of another process that finds it fails its own world alike. A
 * process that dies without leaving is found by its pid and its ranks are
 * gone from then on. Nothing polls per rank: a waiter on the world's board
 * sleeps on its futex until a broadcast (or its timeout), and the pids are
 * looked at by one process of the job per PID_CHECK_NS, from its watchdog
 * thread's tick (hundreds of processes each waking every slice to look at
 * every pid kept 512 of them from reaching their first collective). */
#include "bs_clock.h"
#include "comm/backend/sim/bs_rounds.h"

#include "comm/backend/sim/bs_p2p_files.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SHM_MAGIC 0x316d68737362ull /* "bsshm1" */
/* How often the job looks for processes that died (one process does). */
#define PID_CHECK_MS 20
#define PID_CHECK_NS (PID_CHECK_MS * 1000000ull)
/* A process's share of the start-up grace of the others' joins. */
#define JOIN_GRACE_MS 20
/* How often a process looks for the file global rank 0 makes: from the
 * first, doubling up to the last (hundreds of processes started before
 * it, looking every few ms, slow its start). */
#define OPEN_POLL_FIRST_NS (1 * 1000000L)
#define OPEN_POLL_LAST_NS (64 * 1000000L)

typedef struct shm_hdr {
  uint64_t magic; /* written before the file gets its name */
  int32_t gsize;
  uint64_t cap;
  pthread_mutex_t mu;
  bs_rounds_board b;
  /* The world's first failure, BS_OK while healthy: written under mu,
   * looked at without it by every tick. */
  _Atomic int32_t abort_st;
  _Atomic uint64_t checked_ns; /* the job's last pid check (monotonic) */
  uint64_t stall_ns;
  char cause[256];
} shm_hdr;

/* Byte offsets in the file. */
typedef struct shm_layout {
  size_t slots, pids, stage, total;
} shm_layout;

typedef struct shm {
  bs_rounds r; /* first: w->impl */
  shm_hdr *h;
  int32_t *pid; /* of each global rank's process; 0 until it joins */
  size_t len;
  int32_t self;
} shm;

static size_t align_up(size_t n, size_t a) {
  return (n + a - 1) / a * a;
}

static shm_layout layout_of(int g) {
  shm_layout l;
  l.slots = align_up(sizeof(shm_hdr), 64);
  l.pids = align_up(l.slots + (size_t)g * sizeof(bs_rounds_slot), 64);
  l.stage = align_up(l.pids + (size_t)g * sizeof(int32_t), 4096);
  l.total = l.stage + (size_t)g * BS_SHM_STAGE_CAP;
  return l;
}

static void init_hdr(shm_hdr *h, int g) {
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&h->mu, &ma);
  pthread_mutexattr_destroy(&ma);
  h->gsize = g;
  h->cap = BS_SHM_STAGE_CAP;
  h->b.n = g;
  h->magic = SHM_MAGIC;
}

static bs_status map_fd(int fd, const char *path, size_t len, void **map) {
  *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  /* A page at a time: each rank stages a few bytes at the start of its
   * region, and read-ahead of the sparse file around every one of them
   * (zeroed pages, in every process) was most of a large world's time. */
  if (*map != MAP_FAILED && madvise(*map, len, MADV_RANDOM) != 0)
    errno = 0; /* only advice */
  if (*map != MAP_FAILED)
    return BS_OK;
  *map = NULL;
  return bs_err_fail(BS_ERR_NOMEM, NULL, "sim: cannot map %zu bytes of %s: %s",
                     len, path, strerror(errno));
}

/* Global rank 0's process: the file, whole, under its name at once. */
static bs_status create(const char *path, const shm_layout *l, int g,
                        void **map) {
  bs_status st = BS_OK;
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)l->total) != 0)
    BS_FAIL(BS_ERR_CONFIG, NULL, "sim: cannot make %s (%zu bytes): %s", tmp,
            l->total, strerror(errno));
  BS_CHECK(map_fd(fd, tmp, l->total, map));
  init_hdr(*map, g);
  if (rename(tmp, path) != 0)
    BS_FAIL(BS_ERR_CONFIG, NULL, "sim: cannot rename %s to %s: %s", tmp, path,
            strerror(errno));
out:
  if (fd >= 0)
    close(fd);
  if (st != BS_OK)
    unlink(tmp);
  return st;
}

static int open_within(const char *path, int timeout_ms) {
  uint64_t deadline = bs_clock_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
  struct timespec nap = {0, OPEN_POLL_FIRST_NS};
  int fd;
  while ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0 && errno == ENOENT &&
         bs_clock_mono_ns() < deadline) {
    nanosleep(&nap, NULL);
    nap.tv_nsec = nap.tv_nsec * 2 < OPEN_POLL_LAST_NS ? nap.tv_nsec * 2
                                                      : OPEN_POLL_LAST_NS;
  }
  return fd;
}

static bs_status check_hdr(const shm_hdr *h, const char *path, int g) {
  if (h->magic != SHM_MAGIC || h->cap != BS_SHM_STAGE_CAP)
    return bs_err_fail(BS_ERR_CONFIG, NULL,
                       "sim: %s is not the shared state of this build", path);
  if (h->gsize != g)
    return bs_err_fail(BS_ERR_CONFIG, NULL,
                       "sim: %s holds a world of %d ranks, this one has %d",
                       path, (int)h->gsize, g);
  return BS_OK;
}

/* The other processes: the file global rank 0's process made. */
static bs_status join(const char *path, const shm_layout *l, int g,
                      int timeout_ms, void **map) {
  bs_status st = BS_OK;
  struct stat sb;
  int fd = open_within(path, timeout_ms);
  if (fd < 0 && errno == ENOENT)
    BS_FAIL(BS_ERR_TIMEOUT, NULL,
            "sim: no shared state in %s after %d ms (is global rank 0 up?)",
            path, timeout_ms);
  if (fd < 0 || fstat(fd, &sb) != 0)
    BS_FAIL(BS_ERR_CONFIG, NULL, "sim: cannot open %s: %s", path,
            strerror(errno));
  if ((size_t)sb.st_size != l->total)
    BS_FAIL(BS_ERR_CONFIG, NULL,
            "sim: %s has %lld bytes, a world of %d ranks needs %zu", path,
            (long long)sb.st_size, g, l->total);
  BS_CHECK(map_fd(fd, path, l->total, map));
  BS_CHECK(check_hdr(*map, path, g));
out:
  if (fd >= 0)
    close(fd);
  return st;
}

/* A process that no longer exists; another user's is alive (EPERM). */
static bool process_gone(const shm *m, int32_t pid) {
  return pid != 0 && pid != m->self && kill((pid_t)pid, 0) == -1 &&
         errno == ESRCH;
}

/* The job's pid check is due: PID_CHECK_NS since the last, by any process. */
static bool check_due(const shm_hdr *h) {
  return bs_clock_mono_ns() - atomic_load(&h->checked_ns) >= PID_CHECK_NS;
}

/* Locked: true for the one process that takes the due check. */
static bool take_check(shm_hdr *h) {
  uint64_t was = atomic_load(&h->checked_ns), now = bs_clock_mono_ns();
  return now - was >= PID_CHECK_NS &&
         atomic_compare_exchange_strong(&h->checked_ns, &was, now);
}

/* Locked: the ranks of processes that died are gone. A process's ranks are
 * consecutive slots: one look at each pid. */
static void find_gone(shm *m, bs_world *w) {
  bs_rounds *r = &m->r;
  int32_t pid = 0;
  bool gone = false;
  for (int i = 0; i < r->b->n; i++) {
    if (r->s[i].gone)
      continue;
    if (m->pid[i] != pid) {
      pid = m->pid[i];
      gone = process_gone(m, pid);
    }
    if (gone)
      bs_rounds_leave(r, w, i);
  }
  bs_rounds_check(r, w);
}

/* Another process's failure fails this world alike; a process that died
 * takes its ranks with it. */
static void shm_poll(bs_rounds *r, bs_world *w) {
  shm *m = (shm *)r;
  shm_hdr *h = m->h;
  bs_status st = (bs_status)atomic_load(&h->abort_st);
  if (st != BS_OK && bs_world_abort_status(w) == BS_OK)
    bs_world_fail(w, st, h->stall_ns, NULL, 0, "%s", h->cause);
  if (bs_world_abort_status(w) == BS_OK && take_check(h))
    find_gone(m, w);
}

static void shm_publish(bs_rounds *r, bs_world *w) {
  shm_hdr *h = ((shm *)r)->h;
  bs_status st = bs_world_abort_status(w);
  if (st == BS_OK || atomic_load(&h->abort_st) != BS_OK)
    return;
  pthread_mutex_lock(&w->mu);
  h->stall_ns = w->stall_ns;
  pthread_mutex_unlock(&w->mu);
  bs_world_cause(w, h->cause, sizeof h->cause);
  atomic_store(&h->abort_st, (int32_t)st);
}

/* On the watchdog thread: the waiters sleep until something changes, so
 * the arrivals of other processes' ranks reach this process's watchdog
 * here (bs_watchdog_hold), and news from outside (a failure, the due pid
 * check) is taken under the lock only when there is some. */
static void shm_tick(void *arg) {
  bs_world *w = arg;
  shm *m = w->impl;
  shm_hdr *h = m->h;
  bs_watchdog_hold(w->wd, atomic_load(&h->b.held_ns));
  if (bs_world_abort_status(w) != BS_OK ||
      (atomic_load(&h->abort_st) == BS_OK && !check_due(h)))
    return;
  bs_rounds_lock(&m->r);
  shm_poll(&m->r, w);
  bs_rounds_unlock(&m->r);
  if (bs_world_abort_status(w) != BS_OK)
    bs_rounds_wake(w);
}

/* The header holds the job's first failure: written once (the first
 * process to fail writes it, under the board's lock), it is what every
 * rank of every process returns. */
static void shm_settle(bs_world *w) {
  shm *m = w->impl;
  char cause[sizeof m->h->cause];
  bs_rounds_lock(&m->r);
  shm_publish(&m->r, w);
  bs_status st = (bs_status)atomic_load(&m->h->abort_st);
  uint64_t stall = m->h->stall_ns;
  snprintf(cause, sizeof cause, "%s", m->h->cause);
  bs_rounds_unlock(&m->r);
  if (st != BS_OK)
    bs_world_adopt(w, st, stall, cause);
}

/* Every rank checks the whole collective's input, so that all fail alike
 * (a broadcast's root is not the only one to learn of it). */
static bs_status shm_room(bs_rounds *r, int rank, const bs_coll_args *a,
                          size_t n) {
  size_t need = bs_coll_in_bytes(a, r->b->n);
  (void)rank;
  (void)n;
  if (need <= BS_SHM_STAGE_CAP)
    return BS_OK;
  return bs_err_fail(
      BS_ERR_NOMEM, NULL,
      "sim: %s stages %zu bytes per rank, more than the %zu each "
      "rank has in the shared staging (BS_SHM_STAGE_CAP)",
      bs_coll_name(a->op) + strlen("nccl:"), need, BS_SHM_STAGE_CAP);
}

static void group_publish(bs_rounds *r, bs_world *w);

static bool local(const bs_world *w, int rank) {
  return rank >= w->o.first_rank && rank < w->o.first_rank + w->o.size;
}

/* This process's view of the mapping of the world's board (pg NULL) or a
 * group's; its ranks' pids, for the others. */
static void attach(shm *m, bs_world *w, const bs_pg *pg, void *map,
                   const shm_layout *l) {
  char *base = map;
  int n = pg ? pg->n : w->o.global_size;
  m->h = map;
  m->len = l->total;
  m->pid = (int32_t *)(base + l->pids);
  m->self = (int32_t)getpid();
  m->r.b = &m->h->b;
  m->r.s = (bs_rounds_slot *)(base + l->slots);
  m->r.mu = &m->h->mu;
  m->r.timeout_ns = (uint64_t)w->o.timeout_ms * 1000000ull;
  /* The world's waiters sleep until woken (the tick looks for news); a
   * group's look at the world's failure every slice, as the one-process
   * sim's do. */
  m->r.slice_ns = pg ? PID_CHECK_NS : 0;
  m->r.room = shm_room;
  m->r.poll = shm_poll;
  m->r.publish = pg ? group_publish : shm_publish;
  m->r.pg = pg;
  for (int i = 0; i < n; i++)
    m->r.in[i] = base + l->stage + (size_t)i * BS_SHM_STAGE_CAP;
  bs_rounds_lock(&m->r);
  for (int i = 0; i < n; i++)
    if (local(w, bs_pg_global(pg, i)))
      m->pid[i] = m->self;
  bs_rounds_unlock(&m->r);
}

/* How long a process waits for global rank 0's file: a timeout, and a
 * start-up grace that grows with the processes started before it (512 of
 * them on 2 cores take seconds to start: that is no stall). */
static int join_ms(const bs_world *w) {
  return w->o.timeout_ms + JOIN_GRACE_MS * w->o.procs;
}

static bs_status shm_world_init(bs_world *w) {
  bs_status st = BS_OK;
  int g = w->o.global_size;
  shm_layout l = layout_of(g);
  void *map = NULL;
  shm *m = calloc(1, sizeof *m);
  if (!w->o.shm_path)
    BS_FAIL(BS_ERR_CONFIG, NULL,
            "sim: ranks in several processes (%d of %d here) need shm_path "
            "for their shared state",
            w->o.size, g);
  if (!m || !(m->r.in = calloc((size_t)g, sizeof *m->r.in)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "sim: %d ranks", g);
  if (w->o.first_rank == 0)
    BS_CHECK(create(w->o.shm_path, &l, g, &map));
  else
    BS_CHECK(join(w->o.shm_path, &l, g, join_ms(w), &map));
  attach(m, w, NULL, map, &l);
  w->impl = m;
  m = NULL;
  map = NULL;
out:
  if (map)
    munmap(map, l.total);
  if (m)
    free(m->r.in);
  free(m);
  return st;
}

/* The file and its mutex stay: other processes may still use them. */
static void shm_world_fini(bs_world *w) {
  shm *m = w->impl;
  munmap(m->h, m->len);
  free(m->r.in);
  free(m);
  w->impl = NULL;
}

/* ---- process groups: a board of the members in a file of their own ----
 *
 * o.shm_path.pg.<name> (bs_pg_file), laid out as the
 * world's over the group's ranks, made by the process of the group's rank
 * 0 and joined by the others' as the world's is. A failure found on it is
 * the world's too: it goes to the world's header, where every process's
 * watchdog thread finds it. */
/* A group's maker may start later than its other members' processes (a
 * launcher starts them one by one): their wait for its file gets this
 * beyond the timeout. */
enum { GROUP_GRACE_MS = 10000 };

typedef struct shm_group {
  shm m; /* first: pg->impl is a bs_rounds */
  pthread_mutex_t mu;
  bool mapped;
} shm_group;

static void publish_world(bs_world *w);

static void group_publish(bs_rounds *r, bs_world *w) {
  shm_publish(r, w);
  publish_world(w);
}

static bs_status shm_group_new(bs_world *w, bs_pg *pg) {
  shm_group *g = calloc(1, sizeof *g);
  if (!g || !(g->m.r.in = calloc((size_t)pg->n, sizeof *g->m.r.in))) {
    free(g);
    return bs_err_fail(BS_ERR_NOMEM, NULL, "sim: group %s", pg->name);
  }
  (void)w;
  pthread_mutex_init(&g->mu, NULL);
  pg->impl = g;
  return BS_OK;
}

static void shm_group_free(bs_world *w, bs_pg *pg) {
  shm_group *g = pg->impl;
  (void)w;
  if (!g)
    return;
  if (g->mapped)
    munmap(g->m.h, g->m.len);
  pthread_mutex_destroy(&g->mu);
  free(g->m.r.in);
  free(g);
  pg->impl = NULL;
}

/* The first member here maps the group's file (makes it, on the process
 * of the group's rank 0); the others find it mapped. */
static bs_status shm_group_rank_init(bs_comm *c) {
  bs_status st = BS_OK;
  shm_group *g = c->pg->impl;
  const bs_pg *pg = c->pg;
  shm_layout l = layout_of(pg->n);
  void *map = NULL;
  char path[4300];
  pthread_mutex_lock(&g->mu);
  if (g->mapped)
    goto out;
  bs_pg_file(pg, c->w->o.shm_path, path, sizeof path);
  if (local(c->w, pg->members[0])) /* the maker */
    BS_CHECK(create(path, &l, pg->n, &map));
  else
    BS_CHECK(join(path, &l, pg->n, c->w->o.timeout_ms + GROUP_GRACE_MS, &map));
  attach(&g->m, c->w, pg, map, &l);
  g->mapped = true;
out:
  pthread_mutex_unlock(&g->mu);
  return st;
}

/* The world's failure to the world's header, where every process's
 * watchdog thread finds it. */
static void publish_world(bs_world *w) {
  shm *m = w->impl;
  bs_rounds_lock(&m->r);
  shm_publish(&m->r, w);
  bs_rounds_unlock(&m->r);
}

static bs_status shm_p2p(bs_comm *c, const bs_p2p_op *ops, size_t n,
                         bool *done) {
  return bs_p2p_files_run(c, ops, n, done, publish_world);
}

static void shm_rank_gone(bs_comm *c) {
  bs_rounds_rank_gone(c);
  bs_rounds_leave_groups(c);
}

const bs_comm_backend bs_comm_shm_backend = {
    .name = "sim",
    .world_init = shm_world_init,
    .world_fini = shm_world_fini,
    .rank_init = bs_rounds_rank_init,
    .rank_fini = bs_p2p_files_free,
    .coll = bs_rounds_coll,
    .rank_gone = shm_rank_gone,
    .wake = bs_rounds_wake,
    .settle = shm_settle,
    .tick = shm_tick,
    .tick_ms = PID_CHECK_MS,
    .group_new = shm_group_new,
    .group_free = shm_group_free,
    .group_rank_init = shm_group_rank_init,
    .group_rank_fini = bs_p2p_files_free,
    .p2p = shm_p2p,
};
