/* The world's crowd clock (comm/front/bs_world_crowd.h) and what a rank's
 * CPU waits make of it: a wait in a collective for peers that are queued
 * for a CPU is the simulator's, a wait with every peer blocked is the
 * rank's own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "bs_clock.h"
#include "comm/bs_comm.h"
#include "comm/front/bs_world_crowd.h"

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* The clock runs only while more ranks want to run than there are CPUs,
 * and never goes back. */
static void test_clock_runs_while_crowded(void **state) {
  (void)state;
  bs_world_crowd k;
  bs_world_crowd_init(&k, 2);
  bs_world_crowd_want(&k, 2);
  sleep_ms(20);
  assert_int_equal(bs_world_crowd_ns(&k), 0); /* two on two CPUs */
  bs_world_crowd_want(&k, 1);
  sleep_ms(20);
  uint64_t crowded = bs_world_crowd_ns(&k);
  assert_true(crowded >= 15 * 1000000ull);
  bs_world_crowd_want(&k, -1);
  uint64_t stopped = bs_world_crowd_ns(&k);
  assert_true(stopped >= crowded);
  sleep_ms(20);
  assert_int_equal(bs_world_crowd_ns(&k), stopped);
  bs_world_crowd_fini(&k);
}

/* Rank 0 enters a barrier at once and the others spin for a while
 * first: more of them than CPUs, every one wanting to run. */
typedef struct crowd_run {
  long spin_ms;
  double wall_ms, wait_ms; /* rank 0's barrier */
} crowd_run;

static void spin(long ms) {
  uint64_t until = bs_clock_mono_ns() + (uint64_t)ms * 1000000ull;
  while (bs_clock_mono_ns() < until)
    ;
}

/* Rank 0's barrier: its wall time and what of it was CPU wait. */
static bs_status timed_barrier(bs_comm *c, crowd_run *x) {
  bs_comm_times t0 = bs_comm_times_now(c);
  double w0 = (double)bs_clock_mono_ns() / 1e6;
  bs_status st = bs_comm_barrier(c);
  x->wall_ms = (double)bs_clock_mono_ns() / 1e6 - w0;
  x->wait_ms = bs_comm_cpu_wait_ms_since(c, &t0);
  return st;
}

static bs_status barrier_last(bs_comm *c, void *arg) {
  crowd_run *x = arg;
  if (bs_comm_rank(c) != 0) {
    spin(x->spin_ms);
    return bs_comm_barrier(c);
  }
  return timed_barrier(c, x);
}

/* Real threads: a crowd is theirs (a scheduled world runs one rank at a
 * time and has none). */
static void run_crowd(int n, long spin_ms, bs_rank_fn fn, crowd_run *x) {
  bs_world_opts o = {.size = n, .timeout_ms = 60000, .schedule = "threads"};
  bs_world *w = NULL;
  void **args = calloc((size_t)n, sizeof *args);
  assert_non_null(args);
  *x = (crowd_run){.spin_ms = spin_ms};
  for (int r = 0; r < n; r++)
    args[r] = x;
  assert_int_equal(bs_world_create(&o, &w), BS_OK);
  assert_int_equal(bs_world_run(w, NULL, fn, args), BS_OK);
  bs_world_destroy(w);
  free(args);
}

/* Rank 0 waited for peers that were queued for a CPU nearly all of its
 * barrier: that is the simulator's time, not its own (it was blocked, so
 * neither a turn's wait nor the kernel's run delay said so). */
static void test_wait_for_crowded_peers_is_cpu_wait(void **state) {
  (void)state;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int n = (int)(cpus < 1 ? 1 : cpus) * 2 + 65; /* takes turns */
  crowd_run x;
  run_crowd(n, 20, barrier_last, &x);
  assert_true(x.wall_ms > 0);
  assert_true(x.wait_ms >= 0.5 * x.wall_ms);
  assert_true(x.wait_ms <= x.wall_ms + 1.0);
}

/* Rank 1 sleeps before the barrier (stuck, as a rank that hangs outside
 * a collective is) while every other rank waits in it: no crowd stands
 * behind the wait, so it stays rank 0's own and the containment bound
 * still sees it. */
static bs_status one_sleeps(bs_comm *c, void *arg) {
  crowd_run *x = arg;
  if (bs_comm_rank(c) == 1)
    sleep_ms(x->spin_ms);
  if (bs_comm_rank(c) != 0)
    return bs_comm_barrier(c);
  return timed_barrier(c, x);
}

static void test_wait_for_a_stuck_peer_is_its_own(void **state) {
  (void)state;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int n = (int)(cpus < 1 ? 1 : cpus) * 2 + 65;
  crowd_run x;
  run_crowd(n, 1000, one_sleeps, &x);
  assert_true(x.wall_ms >= 500.0);
  assert_true(x.wait_ms < 0.5 * x.wall_ms);
}

/* A world of no more ranks than run at once keeps no crowd: its waits are
 * its own. */
static void test_small_world_waits_are_its_own(void **state) {
  (void)state;
  crowd_run x;
  run_crowd(4, 20, barrier_last, &x);
  assert_true(x.wait_ms == 0.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clock_runs_while_crowded),
      cmocka_unit_test(test_wait_for_crowded_peers_is_cpu_wait),
      cmocka_unit_test(test_wait_for_a_stuck_peer_is_its_own),
      cmocka_unit_test(test_small_world_waits_are_its_own),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
