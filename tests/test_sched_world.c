/* Scheduled worlds on virtual time: a watchdog of 10 s waited out in no
 * wall time, detection and the record on the virtual clock; a rank's
 * exchanges with its engine process (a real process) are steps whose
 * outcome and cost do not depend on how long the OS takes. That a run's
 * report bytes are a function of its seed, quiet and beside 64 busy
 * processes, is tests/same_bytes.sh's (ctest suite_same_bytes); on one
 * core is how every scheduled run runs (its worker's CPU: run/bs_child.c).
 * Its ranks are fibers on the thread that runs the world, and make the
 * same decisions as when they are threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bs_clock.h"
#include "bs_test_cli.h"
#include "bs_test_faults.h"
#include "bs_test_sanitized.h"
#include "bs_test_world.h"
#include "sync/bs_engine_main.h"

/* ---- load ---- */

enum { BUSY = 64 };
static atomic_bool busy_stop;
static pthread_t busy[BUSY];

static void *spin(void *arg) {
  (void)arg;
  volatile uint64_t x = 0;
  while (!atomic_load(&busy_stop))
    x = x + 1;
  return NULL;
}

static void load(bool on) {
  atomic_store(&busy_stop, !on);
  for (int i = 0; i < BUSY; i++)
    if (on)
      assert_int_equal(pthread_create(&busy[i], NULL, spin, NULL), 0);
    else
      pthread_join(busy[i], NULL);
}

static double wall_ms(void) {
  return (double)bs_clock_real_ns() / 1e6;
}

/* ---- the watchdog on virtual time ---- */

/* Rank 3 is busy elsewhere for a minute, then ends; its peers wait for it
 * in a barrier under a 10 s watchdog. */
static bs_status late_rank(bs_comm *c, void *arg) {
  (void)arg;
  if (bs_comm_rank(c) != 3)
    return bs_comm_barrier(c);
  bs_comm_sleep_ms(c, 60000);
  return BS_OK;
}

static void test_watchdog_costs_no_wall_time(void **state) {
  (void)state;
  static const char *const schedules[] = {"random", "pct:3"};
  for (size_t i = 0; i < 2; i++) {
    bs_world_opts o = {.size = 4,
                       .timeout_ms = 10000,
                       .fingerprint = true,
                       .schedule = schedules[i]};
    bs_world *w = NULL;
    assert_int_equal(bs_world_create(&o, &w), BS_OK);
    double t0 = wall_ms();
    assert_int_equal(bs_world_run(w, NULL, late_rank, NULL), BS_ERR_TIMEOUT);
    double took = wall_ms() - t0;
    bs_err_clear();
    assert_non_null(strstr(bs_world_report(w), "missing from #1: rank 3"));
    /* Caught at the timeout, to the tick, in a small share of a second. */
    double d = bs_world_detect_ms(w);
    if (d < 10000.0 || d > 10000.1 || took > 1000.0)
      fail_msg("%s: detect_ms %.3f, %.0f ms of wall time", schedules[i], d,
               took);
    bs_world_destroy(w);
  }
}

/* ---- the engine exchange ---- */

/* init (an engine per rank), one weight sync, the end. */
static bs_status syncs(bs_comm *c, void *arg) {
  tw *t = arg;
  bs_actor *a = NULL;
  bs_sync_result res = {0};
  bs_actor_opts o = {
      .cfg = &t->cfg, .model = &t->model, .seed = 7, .engine_exe = TW_SELF};
  bs_status st = bs_actor_init(c, &o, &a);
  if (st == BS_OK)
    st = bs_actor_update_weights(a, &res);
  t->out[bs_comm_rank(c)] = (long)res.ntensors;
  bs_sync_result_free(&res);
  bs_status end = bs_actor_end(a);
  return st != BS_OK ? st : end;
}

typedef struct sync_run {
  uint64_t hash, steps;
  long tensors;
} sync_run;

static sync_run sync_world_on(uint64_t seed, bool threads) {
  tw t;
  bs_dev *devs[2] = {0};
  void *args[2] = {&t, &t};
  bs_world_opts o = {.size = 2,
                     .timeout_ms = 10000,
                     .fingerprint = true,
                     .schedule = "random",
                     .schedule_seed = seed,
                     .outside = threads};
  tw_init(&t, 2, "tiny");
  for (int r = 0; r < 2; r++)
    assert_int_equal(bs_dev_host_create(&devs[r]), BS_OK);
  assert_int_equal(bs_world_create(&o, &t.w), BS_OK);
  assert_int_equal(bs_world_run(t.w, devs, syncs, args), BS_OK);
  sync_run out = {bs_world_sched_hash(t.w), bs_world_sched_steps(t.w),
                  t.out[0] + t.out[1]};
  for (int r = 0; r < 2; r++)
    bs_dev_destroy(devs[r]);
  tw_free(&t);
  return out;
}

static sync_run sync_world(uint64_t seed) {
  return sync_world_on(seed, false);
}

/* The engines are real processes, slower under load; each exchange with
 * one is a step of its rank's, so the decisions and their virtual times
 * (the hash) are the same quiet and loaded. */
static void test_engine_exchange_is_one_step(void **state) {
  (void)state;
  sync_run quiet = sync_world(3);
  assert_true(quiet.tensors > 0);
  load(true);
  sync_run loaded = sync_world(3);
  load(false);
  assert_true(loaded.hash == quiet.hash);
  assert_true(loaded.steps == quiet.steps);
  assert_int_equal(loaded.tensors, quiet.tensors);
  sync_run other = sync_world(4);
  assert_true(other.hash != quiet.hash);
}

/* ---- fibers ---- */

/* The threads of this process, from /proc/self/status. */
static int threads_now(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  int n = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "Threads: %d", &n) == 1)
      break;
  if (f)
    fclose(f);
  return n;
}

static atomic_int most_threads;

static bs_status counts_threads(bs_comm *c, void *arg) {
  (void)arg;
  int n = threads_now();
  int was = atomic_load(&most_threads);
  while (n > was && !atomic_compare_exchange_weak(&most_threads, &was, n))
    ;
  return bs_comm_barrier(c);
}

/* The most threads the process had while a scheduled world of 128 ranks
 * ran (threads: ranks that step outside keep threads of their own). */
static int threads_of_world(bool threads) {
  bs_world_opts o = {.size = 128,
                     .timeout_ms = 10000,
                     .schedule = "random",
                     .outside = threads};
  bs_world *w = NULL;
  atomic_store(&most_threads, 0);
  assert_int_equal(bs_world_create(&o, &w), BS_OK);
  assert_int_equal(bs_world_run(w, NULL, counts_threads, NULL), BS_OK);
  bs_world_destroy(w);
  return atomic_load(&most_threads);
}

static void test_ranks_are_fibers(void **state) {
  (void)state;
  int fibers = threads_of_world(false), threads = threads_of_world(true);
  if (fibers > 8 || threads < 128)
    fail_msg("%d threads as fibers, %d as threads", fibers, threads);
}

/* A frame of 4 KiB, n deep: past a fiber's 256 KiB stack at 100. */
static __attribute__((noinline)) long deep(int n) {
  volatile char frame[4096];
  frame[0] = (char)n;
  return n > 0 ? deep(n - 1) + frame[0] : frame[0];
}

static bs_status overflows(bs_comm *c, void *arg) {
  (void)arg;
  bs_status st = bs_comm_barrier(c);
  if (bs_comm_rank(c) == 2)
    st = deep(1000) > 0 ? bs_comm_barrier(c) : BS_ERR_INTERNAL;
  else
    st = bs_comm_barrier(c);
  return st;
}

/* A fiber that runs past its stack meets the guard below it: the process
 * dies of SIGSEGV (the trap's handler, on the thread's signal stack,
 * forwards what is not a paused read), a crash its parent reports, not a
 * hang. */
static void test_fiber_stack_overflow_is_a_crash(void **state) {
  (void)state;
  if (BS_TEST_SANITIZED)
    skip(); /* the sanitizers report an overflow their own way */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    bs_world_opts o = {.size = 4, .timeout_ms = 10000, .schedule = "random"};
    bs_world *w = NULL;
    if (bs_world_create(&o, &w) != BS_OK)
      _exit(3);
    bs_world_run(w, NULL, overflows, NULL);
    _exit(0);
  }
  int ws = 0;
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  if (!WIFSIGNALED(ws) || WTERMSIG(ws) != SIGSEGV)
    fail_msg("the child ended with status %#x, not by SIGSEGV", ws);
}

/* Ranks as fibers and as threads: the same decisions at the same virtual
 * times, engine exchanges and all. */
static void test_fibers_decide_as_threads_do(void **state) {
  (void)state;
  sync_run fibers = sync_world_on(5, false), threads = sync_world_on(5, true);
  assert_true(fibers.hash == threads.hash);
  assert_true(fibers.steps == threads.steps);
  assert_int_equal(fibers.tensors, threads.tensors);
}

static int setup(void **state) {
  (void)state;
  return cli_setup("bs_schedw_");
}

static int teardown(void **state) {
  (void)state;
  return cli_teardown();
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "engine") == 0)
    return bs_engine_main(argc - 1, argv + 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_watchdog_costs_no_wall_time),
      cmocka_unit_test(test_engine_exchange_is_one_step),
      cmocka_unit_test(test_ranks_are_fibers),
      cmocka_unit_test(test_fibers_decide_as_threads_do),
      cmocka_unit_test(test_fiber_stack_overflow_is_a_crash),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
