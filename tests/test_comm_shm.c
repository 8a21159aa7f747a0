/* The sim communicator across processes (bs_comm_shm.c): real processes,
 * forked, each with a world of its own share of the ranks, meeting in one
 * shared file. The bytes of every collective match a one-process sim world
 * bit for bit; a desync, a rank that dies and a process that vanishes are
 * seen by every rank of every process at once, not at the timeout.
 *
 * No abort_dir: the failure crosses processes through the shared file
 * alone. The parent never starts a thread (TSan and fork): every world, the
 * one-process reference included, runs in a child, which writes what its
 * ranks saw to a MAP_SHARED area and _exit()s; the parent reaps with a
 * bound and kills what outlives it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bs_fork.h"
#include "bs_kernels.h"
#include "comm/bs_comm.h"

enum { MAX_RANKS = 4, OUT_MAX = 4096, COUNT = 37, UNSET = -1 };
#define LONG_TIMEOUT_MS 10000
#define REAP_BOUND_MS 5000.0

/* What one global rank saw. */
typedef struct rank_out {
  int st; /* the world's status of the rank; UNSET: never recorded */
  char msg[256];
  int aux; /* a body's second status */
  size_t n;
  unsigned char bytes[OUT_MAX];
} rank_out;

typedef bs_status (*body_fn)(bs_comm *c, rank_out *o);

/* What the parent and its children share. */
typedef struct board {
  rank_out out[MAX_RANKS];
  atomic_int reaped; /* children the parent has reaped */
} board;

typedef struct job {
  int procs, ranks;
  body_fn body;
  board *b; /* MAP_SHARED */
  rank_out *out;
  char dir[512];
} job;

static atomic_int *reaped; /* this job's, for the rank bodies */

#ifdef __SANITIZE_THREAD__
/* TSan sleeps a second in every _exit by default: a child that ends would
 * look alive that long. */
const char *__tsan_default_options(void);
const char *__tsan_default_options(void) {
  return "atexit_sleep_ms=0";
}
#endif

static char root[256];
static int njobs;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static bs_status rank_main(bs_comm *c, void *arg) {
  const job *j = arg;
  return j->body(c, &j->out[bs_comm_rank(c)]);
}

static void record(const job *j, bs_world *w, int first, int local,
                   bs_status setup) {
  for (int k = 0; k < local; k++) {
    rank_out *o = &j->out[first + k];
    bs_error e = *bs_err();
    o->st = w ? (int)bs_world_rank_status(w, k, &e) : (int)setup;
    snprintf(o->msg, sizeof o->msg, "%s", e.message);
  }
}

/* Process p of the job: its world, its ranks, what they saw; never
 * returns. */
static void child(const job *j, int p) {
  int local = j->ranks / j->procs, first = p * local;
  bool spread = j->procs > 1;
  char shm[600];
  void *args[MAX_RANKS];
  snprintf(shm, sizeof shm, "%s/sim.shm", j->dir);
  for (int k = 0; k < local; k++)
    args[k] = (void *)j;
  bs_world_opts o = {.size = local,
                     .timeout_ms = LONG_TIMEOUT_MS,
                     .global_size = spread ? j->ranks : 0,
                     .first_rank = first,
                     .shm_path = spread ? shm : NULL};
  bs_world *w = NULL;
  bs_status st = bs_world_create(&o, &w);
  if (st == BS_OK)
    bs_world_run(w, NULL, rank_main, args);
  record(j, w, first, local, st);
  bs_world_destroy(w);
  bs_fork_exit(0);
}

/* Reaps every child within the bound; kills and fails otherwise. */
static void reap(pid_t *pid, int n, atomic_int *count) {
  double t0 = now_ms();
  int left = n;
  while (left > 0) {
    for (int i = 0; i < n; i++)
      if (pid[i] > 0 && waitpid(pid[i], NULL, WNOHANG) == pid[i]) {
        pid[i] = 0;
        left--;
        atomic_fetch_add(count, 1);
      }
    if (left > 0 && now_ms() - t0 > REAP_BOUND_MS) {
      for (int i = 0; i < n; i++)
        if (pid[i] > 0) {
          kill(pid[i], SIGKILL);
          waitpid(pid[i], NULL, 0);
        }
      fail_msg("%d processes still running after %.0f ms", left, REAP_BOUND_MS);
    }
    sleep_ms(1);
  }
}

/* Runs body on ranks global ranks in procs processes; returns the wall
 * time in ms. out must be munmap'd by the caller (free_out). */
static double run_job(job *j, int procs, int ranks, body_fn body) {
  pid_t pid[MAX_RANKS] = {0};
  *j = (job){.procs = procs, .ranks = ranks, .body = body};
  snprintf(j->dir, sizeof j->dir, "%s/job%d", root, njobs++);
  assert_int_equal(mkdir(j->dir, 0700), 0);
  j->b = mmap(NULL, sizeof *j->b, PROT_READ | PROT_WRITE,
              MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  assert_true(j->b != MAP_FAILED);
  j->out = j->b->out;
  reaped = &j->b->reaped;
  for (int r = 0; r < MAX_RANKS; r++)
    j->out[r].st = UNSET;
  double t0 = now_ms();
  for (int p = 0; p < procs; p++) {
    pid[p] = fork();
    assert_true(pid[p] >= 0);
    if (pid[p] == 0)
      child(j, p);
  }
  reap(pid, procs, &j->b->reaped);
  return now_ms() - t0;
}

static void free_out(job *j) {
  munmap(j->b, sizeof *j->b);
}

/* ---- the bytes ---- */

/* Element i of rank r: fractions whose sums round differently in another
 * order, so only the same order of reduction gives the same bits. */
static float val(int r, size_t i) {
  uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(r * 40503u + 17u);
  return (float)(h % 20011u) / 97.0f - 100.0f;
}

static void put(void *buf, size_t i, bs_dtype dt, float v) {
  if (dt == BS_BF16)
    ((uint16_t *)buf)[i] = bs_k_cast_f32_to_bf16(v);
  else
    ((float *)buf)[i] = v;
}

static bs_status append(rank_out *o, const void *p, size_t n) {
  if (o->n + n > OUT_MAX)
    return bs_err_fail(BS_ERR_INTERNAL, NULL, "test: output overflow");
  memcpy(o->bytes + o->n, p, n);
  o->n += n;
  return BS_OK;
}

typedef struct coll_case {
  bs_coll op;
  bs_dtype dt;
  bs_redop redop;
  bool inplace;
} coll_case;

static const coll_case cases[] = {
    {BS_COLL_ALL_GATHER, BS_F32, BS_SUM, false}, /* first: checked alone */
    {BS_COLL_ALL_GATHER, BS_BF16, BS_SUM, true},
    {BS_COLL_REDUCE_SCATTER, BS_BF16, BS_SUM, false},
    {BS_COLL_REDUCE_SCATTER, BS_F32, BS_SUM, true},
    {BS_COLL_ALL_REDUCE, BS_BF16, BS_SUM, false},
    {BS_COLL_ALL_REDUCE, BS_F32, BS_SUM, true},
    {BS_COLL_ALL_REDUCE, BS_F32, BS_MAX, false},
    {BS_COLL_BROADCAST, BS_F32, BS_SUM, true}, /* root: the last rank */
    {BS_COLL_BARRIER, BS_U8, BS_SUM, false},
};

static bs_status issue(bs_comm *c, const coll_case *k, const char *in,
                       char *out) {
  int n = bs_comm_size(c), r = bs_comm_rank(c);
  size_t chunk = COUNT * bs_dtype_size(k->dt);
  switch (k->op) {
  case BS_COLL_ALL_GATHER:
    return bs_comm_all_gather(c, k->inplace ? out + (size_t)r * chunk : in, out,
                              COUNT, k->dt);
  case BS_COLL_REDUCE_SCATTER:
    return bs_comm_reduce_scatter(c, k->inplace ? out : in,
                                  k->inplace ? out + (size_t)r * chunk : out,
                                  COUNT, k->dt, k->redop);
  case BS_COLL_ALL_REDUCE:
    return bs_comm_all_reduce(c, k->inplace ? out : in, out, COUNT, k->dt,
                              k->redop);
  case BS_COLL_BROADCAST:
    return bs_comm_broadcast(c, out, COUNT, k->dt, n - 1);
  default:
    return bs_comm_barrier(c);
  }
}

/* Input in `in` and, for the in-place forms, where NCCL wants it in out. */
static void fill(bs_comm *c, const coll_case *k, char *in, char *out) {
  int n = bs_comm_size(c), r = bs_comm_rank(c);
  size_t es = bs_dtype_size(k->dt), chunk = COUNT * es;
  size_t nin = k->op == BS_COLL_REDUCE_SCATTER ? COUNT * (size_t)n : COUNT;
  if (k->op == BS_COLL_BARRIER)
    return;
  for (size_t i = 0; i < nin; i++)
    put(in, i, k->dt, val(r, i));
  if (!k->inplace)
    return;
  if (k->op == BS_COLL_ALL_GATHER)
    memcpy(out + (size_t)r * chunk, in, chunk);
  else if (k->op != BS_COLL_BROADCAST || r == n - 1)
    memcpy(out, in, nin * es);
}

/* One collective; what this rank got is appended to its output. */
static bs_status one(bs_comm *c, rank_out *o, const coll_case *k) {
  bs_status st = BS_OK;
  int n = bs_comm_size(c), r = bs_comm_rank(c);
  size_t es = bs_dtype_size(k->dt), big = COUNT * (size_t)n * es;
  char *in = calloc(1, big), *out = calloc(1, big);
  if (!in || !out)
    BS_FAIL(BS_ERR_NOMEM, NULL, "test buffers");
  fill(c, k, in, out);
  BS_CHECK(issue(c, k, in, out));
  if (k->op == BS_COLL_ALL_GATHER)
    BS_CHECK(append(o, out, big));
  else if (k->op == BS_COLL_REDUCE_SCATTER && k->inplace)
    BS_CHECK(append(o, out + (size_t)r * COUNT * es, COUNT * es));
  else if (k->op != BS_COLL_BARRIER)
    BS_CHECK(append(o, out, COUNT * es));
out:
  free(in);
  free(out);
  return st;
}

static bs_status every_coll(bs_comm *c, rank_out *o) {
  bs_status st = BS_OK;
  for (size_t i = 0; i < sizeof cases / sizeof *cases && st == BS_OK; i++)
    st = one(c, o, &cases[i]);
  return st;
}

/* procs processes give what one process gives, bit for bit. */
static void same_as_one_process(int procs, int ranks) {
  job ref, spread;
  run_job(&ref, 1, ranks, every_coll);
  run_job(&spread, procs, ranks, every_coll);
  for (int r = 0; r < ranks; r++) {
    const rank_out *a = &ref.out[r], *b = &spread.out[r];
    if (a->st != BS_OK || b->st != BS_OK)
      fail_msg("rank %d: %d/%d: %s / %s", r, a->st, b->st, a->msg, b->msg);
    assert_true(b->n > 0);
    assert_int_equal(a->n, b->n);
    assert_memory_equal(a->bytes, b->bytes, a->n);
    /* The first all-gather holds every rank's input, not just zeros. */
    for (int j = 0; j < ranks; j++)
      for (size_t i = 0; i < COUNT; i++) {
        float f;
        memcpy(&f, b->bytes + ((size_t)j * COUNT + i) * sizeof f, sizeof f);
        assert_true(f == val(j, i));
      }
  }
  free_out(&ref);
  free_out(&spread);
}

static void test_two_by_one(void **state) {
  (void)state;
  same_as_one_process(2, 2);
}

static void test_two_by_two(void **state) {
  (void)state;
  same_as_one_process(2, 4);
}

/* ---- failures ---- */

static void expect(const job *j, int from, int to, bs_status want,
                   const char *msg_part) {
  for (int r = from; r <= to; r++) {
    const rank_out *o = &j->out[r];
    if (o->st != (int)want)
      fail_msg("rank %d: status %d (%s), want %s", r, o->st, o->msg,
               bs_status_name(want));
    if (msg_part && !strstr(o->msg, msg_part))
      fail_msg("rank %d: '%s' lacks '%s'", r, o->msg, msg_part);
  }
}

/* After a barrier, the last rank all-reduces where the others gather. */
static bs_status diverges(bs_comm *c, rank_out *o) {
  float buf[MAX_RANKS] = {0};
  (void)o;
  bs_status st = bs_comm_barrier(c);
  if (st != BS_OK)
    return st;
  if (bs_comm_rank(c) == bs_comm_size(c) - 1)
    return bs_comm_all_reduce(c, buf, buf, 1, BS_F32, BS_SUM);
  return bs_comm_all_gather(c, buf, buf, 1, BS_F32);
}

static void test_desync(void **state) {
  (void)state;
  job j;
  double ms = run_job(&j, 2, 4, diverges);
  expect(&j, 0, 3, BS_ERR_DESYNC, "different collectives");
  assert_string_equal(j.out[0].msg, j.out[1].msg);
  assert_string_equal(j.out[1].msg, j.out[2].msg);
  assert_true(ms < LONG_TIMEOUT_MS / 5);
  free_out(&j);
}

/* Rank 1 dies while the others, in both processes, wait in a barrier. */
static bs_status dies(bs_comm *c, rank_out *o) {
  (void)o;
  if (bs_comm_rank(c) == 1) {
    sleep_ms(30); /* let the others block first */
    bs_comm_die(c, "test kills it");
  }
  return bs_comm_barrier(c);
}

static void test_rank_dies(void **state) {
  (void)state;
  job j;
  double ms = run_job(&j, 2, 4, dies);
  expect(&j, 0, 3, BS_ERR_RANK_DEAD, NULL);
  expect(&j, 2, 3, BS_ERR_RANK_DEAD, "rank 1 is gone");
  /* The other process failed with the very same cause. */
  assert_string_equal(j.out[2].msg, j.out[0].msg);
  assert_true(ms < LONG_TIMEOUT_MS / 5);
  free_out(&j);
}

static void *end_process(void *arg) {
  (void)arg;
  sleep_ms(30);
  bs_fork_exit(3);
}

/* After one barrier, process 1 ends while both its ranks wait in the
 * second, without leaving; rank 1 comes late, once the process is reaped
 * and rank 0 has had five pid checks to find it gone: the ranks that died
 * there must not count as arrived (the barrier would complete). */
static bs_status vanishes(bs_comm *c, rank_out *o) {
  pthread_t t;
  (void)o;
  bs_status st = bs_comm_barrier(c);
  if (st != BS_OK)
    return st;
  if (bs_comm_rank(c) == 2 && pthread_create(&t, NULL, end_process, NULL))
    return BS_ERR_INTERNAL;
  for (int ms = 0; bs_comm_rank(c) == 1 && ms < 3000; ms++) {
    if (atomic_load(reaped) > 0) {
      sleep_ms(100);
      break;
    }
    sleep_ms(1);
  }
  return bs_comm_barrier(c);
}

static void test_process_exits(void **state) {
  (void)state;
  job j;
  double ms = run_job(&j, 2, 4, vanishes);
  expect(&j, 0, 1, BS_ERR_RANK_DEAD, "ranks 2 and 1 more are gone");
  assert_int_equal(j.out[2].st, UNSET); /* it never wrote a thing */
  assert_true(ms < LONG_TIMEOUT_MS / 5);
  free_out(&j);
}

/* Rank 1 comes to the barrier a second late; rank 0's process, waiting,
 * counts how often its threads woke meanwhile: the waiter sleeps until
 * woken and the watchdog thread looks for news every PID_CHECK_MS, where
 * polling (a waiter every 20 ms, the watchdog every millisecond) woke it
 * over a thousand times. */
enum { LATE_MS = 1000, MAX_WAKES = 400 };

static long wakes(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_nvcsw;
}

static bs_status comes_late(bs_comm *c, rank_out *o) {
  if (bs_comm_rank(c) == 1)
    sleep_ms(LATE_MS);
  long before = wakes();
  bs_status st = bs_comm_barrier(c);
  o->aux = (int)(wakes() - before);
  return st;
}

static void test_waiting_does_not_poll(void **state) {
  (void)state;
  job j;
  run_job(&j, 2, 2, comes_late);
  expect(&j, 0, 1, BS_OK, NULL);
  if (j.out[0].aux >= MAX_WAKES)
    fail_msg("rank 0's process woke %d times in a %d ms wait", j.out[0].aux,
             LATE_MS);
  free_out(&j);
}

/* One byte more than a rank can stage: every rank fails alike, and the
 * world goes on. The buffers are never touched, so cost no memory. */
static bs_status too_big(bs_comm *c, rank_out *o) {
  size_t n = BS_SHM_STAGE_CAP + 1;
  char *send = calloc(1, n), *recv = calloc((size_t)bs_comm_size(c), n);
  bs_status st = BS_ERR_NOMEM;
  if (send && recv)
    st = bs_comm_all_gather(c, send, recv, n, BS_U8);
  free(send);
  free(recv);
  bs_error e = *bs_err();
  o->aux = (int)bs_comm_barrier(c);
  *bs_err() = e;
  return st;
}

static void test_staging_capacity(void **state) {
  (void)state;
  job j;
  run_job(&j, 2, 2, too_big);
  expect(&j, 0, 1, BS_ERR_NOMEM, "BS_SHM_STAGE_CAP");
  assert_non_null(strstr(j.out[0].msg, "67108865 bytes per rank"));
  assert_int_equal(j.out[0].aux, BS_OK);
  assert_int_equal(j.out[1].aux, BS_OK);
  free_out(&j);
}

/* ---- options (no threads, no children) ---- */

static bs_status create_world(int size, int global, int first, const char *path,
                              int timeout_ms, bs_world **w) {
  bs_world_opts o = {.size = size,
                     .global_size = global,
                     .first_rank = first,
                     .shm_path = path,
                     .timeout_ms = timeout_ms};
  bs_err_clear();
  *w = NULL;
  return bs_world_create(&o, w);
}

static void test_missing_shm_path(void **state) {
  (void)state;
  bs_world *w;
  assert_int_equal(create_world(1, 2, 0, NULL, 0, &w), BS_ERR_CONFIG);
  assert_null(w);
  assert_non_null(strstr(bs_err()->message, "need shm_path"));
}

/* Nobody makes the file: a bounded wait with a reason. */
static void test_no_rank_zero(void **state) {
  (void)state;
  char path[600];
  bs_world *w;
  snprintf(path, sizeof path, "%s/nobody.shm", root);
  double t0 = now_ms();
  assert_int_equal(create_world(1, 2, 1, path, 50, &w), BS_ERR_TIMEOUT);
  assert_true(now_ms() - t0 < 1000.0);
  assert_non_null(strstr(bs_err()->message, "is global rank 0 up?"));
}

/* A file made for another world size is refused, not misread. */
static void test_other_world(void **state) {
  (void)state;
  char path[600];
  bs_world *maker, *w;
  snprintf(path, sizeof path, "%s/two.shm", root);
  assert_int_equal(create_world(1, 2, 0, path, 0, &maker), BS_OK);
  assert_int_equal(create_world(2, 4, 2, path, 0, &w), BS_ERR_CONFIG);
  assert_non_null(strstr(bs_err()->message, "a world of 4 ranks needs"));
  assert_int_equal(create_world(1, 2, 1, path, 0, &w), BS_OK);
  assert_string_equal(bs_world_report(w), "");
  bs_world_destroy(w);
  bs_world_destroy(maker);
}

static int setup(void **state) {
  (void)state;
  snprintf(root, sizeof root, "/tmp/bs_shm_XXXXXX");
  return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_by_one),
      cmocka_unit_test(test_two_by_two),
      cmocka_unit_test(test_desync),
      cmocka_unit_test(test_rank_dies),
      cmocka_unit_test(test_process_exits),
      cmocka_unit_test(test_waiting_does_not_poll),
      cmocka_unit_test(test_staging_capacity),
      cmocka_unit_test(test_missing_shm_path),
      cmocka_unit_test(test_no_rank_zero),
      cmocka_unit_test(test_other_world),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
