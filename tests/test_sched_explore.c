/* Interleavings on purpose: the ordering mutant failure-before-ready
 * (faults/bs_mutants.def) is a race, which the default schedule does not
 * expose and exploring schedules does. In a world: rank 0 completes a round
 * and at once fails the world; a peer that looks at the failure before at
 * its round fails the round alone (the ranks split on whether it
 * completed). Exploring seeds of random and of PCT finds a schedule that
 * splits them, that schedule splits them again every time it is run, and
 * the fixed core splits them under none of the same schedules. Then the
 * same through the binary: comm-init-fail, the scenario that targets the
 * mutant, passes at its default schedule and fails under others; the kill
 * matrix finds it so, and its repro fails every time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_mutant.h"
#include "bs_test_cli.h"
#include "bs_test_faults.h"
#include "comm/bs_comm.h"

enum { N = 4, SEEDS = 24 };

static atomic_int round_st[N]; /* each rank's status of the round */

/* The round, then rank 0 fails the world at once while its peers go on
 * to their next collective. */
static bs_status round_then_abort(bs_comm *c, void *arg) {
  (void)arg;
  int32_t one = 1, sum = 0;
  int r = bs_comm_rank(c);
  bs_status st = bs_comm_all_reduce(c, &one, &sum, 1, BS_I32, BS_SUM);
  atomic_store(&round_st[r], st);
  if (st != BS_OK)
    return st;
  if (r == 0) {
    bs_comm_abort(c, "rank 0 went on and failed the world");
    return BS_ERR_ABORTED;
  }
  return bs_comm_barrier(c);
}

typedef struct outcome {
  bool split; /* ranks differ on whether the round completed */
  uint64_t hash, steps;
} outcome;

static outcome run_once(const char *schedule, uint64_t seed, bool mutant) {
  bs_world_opts o = {.size = N,
                     .timeout_ms = 10000,
                     .fingerprint = true,
                     .schedule = schedule,
                     .schedule_seed = seed};
  bs_world *w = NULL;
  outcome out = {0};
  bs_mutant_set(BS_MUT_FAILURE_BEFORE_READY, mutant);
  assert_int_equal(bs_world_create(&o, &w), BS_OK);
  assert_string_equal(bs_world_sched_name(w), schedule);
  bs_world_run(w, NULL, round_then_abort, NULL);
  bs_err_clear();
  for (int r = 1; r < N; r++)
    out.split |= atomic_load(&round_st[r]) != atomic_load(&round_st[0]);
  out.hash = bs_world_sched_hash(w);
  out.steps = bs_world_sched_steps(w);
  assert_true(out.steps > 0);
  bs_world_destroy(w);
  bs_mutant_reset();
  return out;
}

/* The first of SEEDS seeds whose schedule splits the ranks (-1: none). */
static int first_split(const char *schedule, bool mutant) {
  for (int seed = 0; seed < SEEDS; seed++)
    if (run_once(schedule, (uint64_t)seed, mutant).split)
      return seed;
  return -1;
}

static const char *const schedules[] = {"random", "pct:2", "pct:3"};

static void test_exploring_finds_the_race(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof schedules / sizeof *schedules; i++) {
    int seed = first_split(schedules[i], true);
    if (seed < 0)
      fail_msg("%s: no split in %d seeds", schedules[i], SEEDS);
    /* The schedule is the repro: the same split, the same decisions. */
    outcome a = run_once(schedules[i], (uint64_t)seed, true);
    for (int k = 0; k < 3; k++) {
      outcome b = run_once(schedules[i], (uint64_t)seed, true);
      assert_true(b.split);
      assert_true(b.hash == a.hash && b.steps == a.steps);
    }
    fprintf(stderr, "%s: seed %d splits the ranks\n", schedules[i], seed);
  }
}

/* Not every schedule shows it: seed 0 of random (the default) does not. */
static void test_default_schedule_hides_it(void **state) {
  (void)state;
  assert_false(run_once("random", 0, true).split);
}

static void test_fixed_core_survives_the_exploration(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof schedules / sizeof *schedules; i++)
    assert_int_equal(first_split(schedules[i], false), -1);
}

/* Seeds are interleavings: of SEEDS seeds, most decide differently. */
static void test_seeds_are_interleavings(void **state) {
  (void)state;
  uint64_t seen[SEEDS];
  int distinct = 0;
  for (int seed = 0; seed < SEEDS; seed++) {
    uint64_t h = run_once("random", (uint64_t)seed, false).hash;
    bool fresh = true;
    for (int k = 0; k < distinct; k++)
      fresh &= seen[k] != h;
    if (fresh)
      seen[distinct++] = h;
  }
  if (distinct < SEEDS / 2)
    fail_msg("%d distinct schedules of %d seeds", distinct, SEEDS);
}

/* Through the binary: comm-init-fail with the mutant passes at the default
 * schedule (seed 0), fails under some of seeds 1..8, and the fixed core
 * passes under all of them. */
static int cli_run(uint64_t seed, bool mutant) {
  char args[256];
  snprintf(args, sizeof args, "run comm-init-fail --seed %llu -q%s",
           (unsigned long long)seed,
           mutant ? " --mutant failure-before-ready" : "");
  return backstop(args);
}

static void test_scenario_explored(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  int killed = 0;
  assert_int_equal(cli_run(0, true), 0);
  for (uint64_t seed = 1; seed <= 8; seed++) {
    killed += cli_run(seed, true) != 0;
    assert_int_equal(cli_run(seed, false), 0);
  }
  if (killed == 0)
    fail_msg("no seed of 1..8 killed failure-before-ready");
}

/* The kill matrix explores schedules for the ordering mutant and names the
 * one that killed it; that schedule's repro line fails every time it is
 * run, and --repeat runs one schedule per repeat: the first (the default)
 * passes, the later ones name their own seeds and fail where it kills. */
static void test_matrix_kill_reproduces(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  /* Exit 1: the mutants comm-init-fail does not target survive it. */
  assert_int_equal(backstop("mutants comm-init-fail --targeted -q"), 1);
  const char *row = strstr(out_text, "failure-before-ready");
  while (row && !strstr(row, "comm-init-fail (--schedule "))
    row = strstr(row + 1, "failure-before-ready");
  assert_non_null(row);
  const char *how = strstr(row, "(--schedule ") + 1;
  char run[300];
  snprintf(run, sizeof run,
           "run comm-init-fail --mutant failure-before-ready -q %.*s",
           (int)strcspn(how, ")"), how);
  for (int i = 0; i < 3; i++)
    assert_int_equal(backstop(run), 1);
  assert_int_equal(backstop("run comm-init-fail --mutant failure-before-ready "
                            "-q --repeat 3"),
                   1);
  assert_non_null(strstr(out_text, "--schedule random --schedule-seed 1 "));
  assert_null(strstr(out_text, "--schedule random --mutant"));
}

/* The binary's runs name their schedule (random by default, its seed the
 * run's); this process's worlds take BS_SCHEDULE's where they name none. */
static int setup(void **state) {
  (void)state;
  setenv("BS_SCHEDULE", "random", 1);
  return cli_setup("bs_explore_");
}

static int teardown(void **state) {
  (void)state;
  return cli_teardown();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exploring_finds_the_race),
      cmocka_unit_test(test_default_schedule_hides_it),
      cmocka_unit_test(test_fixed_core_survives_the_exploration),
      cmocka_unit_test(test_seeds_are_interleavings),
      cmocka_unit_test(test_scenario_explored),
      cmocka_unit_test(test_matrix_kill_reproduces),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
