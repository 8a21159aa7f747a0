/* Planning and the campaigns without the binary (harness/plan,
 * harness/explore): the plan refuses what cannot run, the sweep plans two
 * runs per reach its filters keep and runs them, the fuzz draws and runs
 * its budget, the kill matrix plans and judges. The runs are forked from this
 * process (bs_parent_run); the engine processes are BACKSTOP_BIN's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_mutant.h"
#include "bs_test_faults.h"
#include "catalog/bs_scenario.h"
#include "explore/bs_fuzz_campaign.h"
#include "explore/bs_kill_matrix.h"
#include "explore/bs_sweep_campaign.h"
#include "plan/bs_plan.h"
#include "run/bs_parent.h"

BS_SCENARIO(target){.name = "campaign-target",
                    .labels = "@test",
                    .targets = BS_LIST("pause-not-in-finally")};
BS_SCENARIO(small){.name = "campaign-small",
                   .labels = "@test",
                   .model = "tiny",
                   .cycles = 1,
                   .default_ranks = 2,
                   .min_ranks = 2};

static void parse(char **argv, int argc, bs_opts_run *o) {
  assert_int_equal(bs_opts_parse_run(argc, argv, o), BS_OK);
}

static void test_plan_refuses(void **state) {
  (void)state;
  bs_opts_run o;
  bs_plan p;
  char *one[] = {"run", "campaign-small", "--ranks", "1", "-q"};
  parse(one, 5, &o);
  assert_int_equal(bs_plan_runs(&o, "b", &p), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "needs at least 2 ranks"));
  assert_null(p.runs);
  bs_err_clear();
  BS_TEST_NEEDS_FAULTS();
  char *argv[] = {"run", "campaign-small", "--fault", "name=engine/send,rank=5",
                  "-q"};
  parse(argv, 5, &o);
  assert_int_equal(bs_plan_runs(&o, "b", &p), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "rank 5 is outside the world of "
                                            "2 ranks of campaign-small"));
  bs_err_clear();
}

/* The campaigns' defaults are the plan's: thousands of runs each waiting
 * out a watchdog must wait short. */
static void test_command_defaults(void **state) {
  (void)state;
  bs_opts_run o;
  bs_opts_sweep w;
  bs_opts_fuzz z;
  char *run[] = {"run"}, *sweep[] = {"sweep"}, *fuzz[] = {"fuzz"};
  parse(run, 1, &o);
  assert_int_equal(o.timeout_ms, 0); /* the scenario's */
  assert_string_equal(o.artifacts, "backstop-artifacts");
  assert_true(o.deadline_s == BS_RUN_DEADLINE_S);
  assert_int_equal(bs_opts_parse_sweep(1, sweep, &w), BS_OK);
  assert_int_equal(w.run.timeout_ms, 1000);
  assert_null(w.run.artifacts);
  /* A job per CPU on scheduled worlds, two on real threads (their waits
   * are real). */
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  assert_int_equal(w.run.jobs, cpus > 32 ? 32 : cpus);
  char *threads[] = {"sweep", "--schedule", "threads"};
  bs_opts_sweep t;
  assert_int_equal(bs_opts_parse_sweep(3, threads, &t), BS_OK);
  assert_int_equal(t.run.jobs, 2 * w.run.jobs);
  assert_int_equal(w.rank, -1);
  assert_int_equal(bs_opts_parse_fuzz(1, fuzz, &z), BS_OK);
  assert_int_equal(z.run.timeout_ms, 1000);
  assert_true(z.run.deadline_s == 20);
  assert_int_equal(z.max_ranks, 4);
}

/* A deadline is the same whatever the world's size or the machine: on
 * real threads the parent's, in real time; on a scheduled world on its
 * virtual clock, the parent keeping only a generous guard in real time. */
static void test_deadline_real_or_virtual(void **state) {
  (void)state;
  bs_run r = {.deadline_s = BS_RUN_DEADLINE_S};
  assert_true(bs_parent_limit_s(&r) == BS_RUN_DEADLINE_S);
  r.schedule.policy = BS_SCHED_RANDOM;
  assert_true(bs_parent_limit_s(&r) == BS_PARENT_GUARD_S);
  r.deadline_s = 100;
  assert_true(bs_parent_limit_s(&r) == 500);
}

static void test_sweep_plans_and_runs(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS(); /* no fault points, no reaches to plan */
  bs_sweep_campaign w = {0};
  char *argv[] = {"sweep",       "campaign-small", "--point",
                  "engine/send", "--sample",       "2",
                  "-q"};
  assert_int_equal(bs_opts_parse_sweep(7, argv, &w.o), BS_OK);
  const char *exe = getenv("BACKSTOP_BIN");
  assert_non_null(exe);
  assert_int_equal(bs_plan_runs(&w.o.run, exe, &w.plan), BS_OK);
  w.batch = (bs_batch){.jobs = 2};
  assert_int_equal(bs_sweep_campaign_plan(&w), BS_OK);
  assert_int_equal(w.plan.n, 1);
  assert_true(bs_sweep_campaign_count_ok(&w.sc[0]));
  assert_true(w.sc[0].total >= 2);
  assert_int_equal(w.n, 4); /* two reaches, transient and persistent */
  for (size_t i = 0; i < w.n; i++) {
    const char *spec = w.runs[i].faults[w.runs[i].nfaults - 1].text;
    assert_non_null(strstr(spec, "name=engine/send,"));
    assert_int_equal(strstr(spec, ",persistent") != NULL, i % 2);
  }
  assert_int_equal(bs_sweep_campaign_run(&w), BS_OK);
  for (size_t i = 0; i < w.n; i++)
    assert_int_not_equal(bs_sweep_judge(&w.res[i], w.sc[0].fixed),
                         BS_SWEEP_FAIL);
  bs_sweep_campaign_free(&w);
}

static void test_fuzz_draws_its_budget(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  bs_fuzz_campaign z = {.t0 = bs_fuzz_campaign_now_s()};
  char *argv[] = {"fuzz", "campaign-small", "--seed", "1", "--runs", "4", "-q"};
  assert_int_equal(bs_opts_parse_fuzz(7, argv, &z.o), BS_OK);
  assert_int_equal(bs_fuzz_campaign_init(&z, getenv("BACKSTOP_BIN")), BS_OK);
  assert_int_equal(z.npool, 1);
  z.batch = (bs_batch){.jobs = 2};
  assert_int_equal(bs_fuzz_campaign_draw(&z), BS_OK);
  assert_int_equal(z.runs, 4);
  size_t judged = 0;
  for (int v = 0; v < BS_VERDICT_COUNT; v++)
    judged += z.count[v];
  assert_int_equal(judged, 4);
  assert_true(z.nc >= 1); /* a counting run per configuration drawn */
  size_t drawn = 0;
  for (int p = 0; p < BS_FP_COUNT; p++)
    drawn += z.drawn[p];
  assert_true(drawn >= 1);
  assert_int_equal(bs_fuzz_campaign_shrink(&z), BS_OK);
  assert_int_equal(bs_fuzz_campaign_unexplained(&z), 0);
  bs_fuzz_campaign_free(&z);
}

/* The matrix runs the fixed core, then each mutant (targeted: only over
 * the scenarios that target it); a failed run kills its mutant, a vacuous
 * one does not. */
static void test_kill_matrix(void **state) {
  (void)state;
  const bs_run base[] = {{.scn = bs_scenario_find("campaign-small")},
                         {.scn = bs_scenario_find("campaign-target")}};
  int *mut;
  bool *explored;
  size_t n;
  bs_run *all = bs_kill_matrix_plan(base, 2, true, &mut, &explored, &n);
  assert_non_null(all);
  assert_int_equal(n, 3); /* the fixed core's two, one targeted */
  assert_int_equal(mut[0], -1);
  assert_int_equal(mut[1], -1);
  assert_int_equal(mut[2], BS_MUT_PAUSE_NOT_IN_FINALLY);
  assert_ptr_equal(all[2].scn, base[1].scn);
  assert_int_equal(all[2].nmutants, 1);
  assert_int_equal(all[2].mutants[0], BS_MUT_PAUSE_NOT_IN_FINALLY);
  assert_int_equal(all[2].run_index, 2);
  bs_result res[3] = {{.verdict = BS_PASS},
                      {.verdict = BS_PASS},
                      {.verdict = BS_FAIL, .scenario = "campaign-target"}};
  bs_kill k[BS_MUT_COUNT];
  assert_int_equal(bs_kill_matrix_judge(res, mut, explored, n, k), BS_OK);
  assert_int_equal(k[BS_MUT_PAUSE_NOT_IN_FINALLY].nkilled, 1);
  assert_string_equal(k[BS_MUT_PAUSE_NOT_IN_FINALLY].killed_by[0],
                      "campaign-target");
  assert_false(k[BS_MUT_PAUSE_NOT_IN_FINALLY].survived);
  res[2].verdict = BS_VACUOUS; /* proves nothing: the mutant survives */
  for (int m = 0; m < BS_MUT_COUNT; m++)
    bs_report_kill_free(&k[m]);
  assert_int_equal(bs_kill_matrix_judge(res, mut, explored, n, k), BS_OK);
  assert_int_equal(k[BS_MUT_PAUSE_NOT_IN_FINALLY].nkilled, 0);
  assert_true(k[BS_MUT_PAUSE_NOT_IN_FINALLY].survived);
  for (int m = 0; m < BS_MUT_COUNT; m++)
    bs_report_kill_free(&k[m]);
  free(mut);
  free(explored);
  free(all);
}

/* An ordering mutant's scheduled run is explored: BS_KILL_SCHEDULES more
 * schedules after its own, random and pct:3 seeded past its own seed, the
 * same every time; a run killing it only under one is named with it. */
static void test_kill_matrix_explores_schedules(void **state) {
  (void)state;
  bs_run base = {.scn = bs_scenario_find("campaign-small"),
                 .schedule = {.policy = BS_SCHED_RANDOM, .seed = 5}};
  int *mut;
  bool *explored;
  size_t n, at = 0;
  bs_run *all = bs_kill_matrix_plan(&base, 1, false, &mut, &explored, &n);
  assert_non_null(all);
  assert_int_equal(n, 1 + BS_MUT_COUNT + BS_KILL_SCHEDULES);
  while (at < n && mut[at] != BS_MUT_FAILURE_BEFORE_READY)
    at++;
  assert_false(explored[at]);
  assert_true(all[at].schedule.seed == 5);
  static const char *const want[] = {"random", "pct:3", "random", "pct:3"};
  for (int k = 1; k <= BS_KILL_SCHEDULES; k++) {
    char spec[32];
    assert_int_equal(mut[at + k], BS_MUT_FAILURE_BEFORE_READY);
    assert_true(explored[at + k]);
    bs_sched_spec_format(&all[at + k].schedule, spec, sizeof spec);
    assert_string_equal(spec, want[k - 1]);
    assert_true(all[at + k].schedule.seed == 5 + (uint64_t)(k + 1) / 2);
  }
  bs_result *res = calloc(n, sizeof *res);
  assert_non_null(res);
  res[at + 2] = (bs_result){.verdict = BS_FAIL,
                            .scenario = "campaign-small",
                            .schedule = "pct:3",
                            .schedule_seed = 6};
  res[at + 3] = res[at + 2]; /* named once: the first that killed it */
  bs_kill k[BS_MUT_COUNT];
  assert_int_equal(bs_kill_matrix_judge(res, mut, explored, n, k), BS_OK);
  assert_int_equal(k[BS_MUT_FAILURE_BEFORE_READY].nkilled, 1);
  assert_string_equal(k[BS_MUT_FAILURE_BEFORE_READY].killed_by[0],
                      "campaign-small (--schedule pct:3 --schedule-seed 6)");
  for (int m = 0; m < BS_MUT_COUNT; m++)
    bs_report_kill_free(&k[m]);
  free(res);
  free(mut);
  free(explored);
  free(all);
}

/* An ordering mutant on real threads (what NCCL and --spawn runs resolve
 * to) is not explored, and when no run killed it, it is untested (no
 * schedule was tried), not survived; a scheduled run of it that passed
 * leaves it survived. */
static void test_kill_matrix_threads_untested(void **state) {
  (void)state;
  bs_run base = {.scn = bs_scenario_find("campaign-small"),
                 .schedule = {.policy = BS_SCHED_THREADS}};
  int *mut;
  bool *explored;
  size_t n, at = 0;
  bs_run *all = bs_kill_matrix_plan(&base, 1, false, &mut, &explored, &n);
  assert_non_null(all);
  assert_int_equal(n, 1 + BS_MUT_COUNT); /* nothing explored */
  while (at < n && mut[at] != BS_MUT_FAILURE_BEFORE_READY)
    at++;
  assert_true(at < n);
  bs_result *res = calloc(n, sizeof *res);
  assert_non_null(res);
  for (size_t i = 0; i < n; i++)
    res[i] = (bs_result){.verdict = BS_PASS, .schedule = "threads"};
  bs_kill k[BS_MUT_COUNT];
  assert_int_equal(bs_kill_matrix_judge(res, mut, explored, n, k), BS_OK);
  assert_false(k[BS_MUT_FAILURE_BEFORE_READY].survived);
  assert_ptr_equal(k[BS_MUT_FAILURE_BEFORE_READY].untested, bs_kill_unexplored);
  assert_true(k[BS_MUT_PAUSE_NOT_IN_FINALLY].survived); /* not ordering */
  for (int m = 0; m < BS_MUT_COUNT; m++)
    bs_report_kill_free(&k[m]);
  snprintf(res[at].schedule, sizeof res[at].schedule, "random");
  assert_int_equal(bs_kill_matrix_judge(res, mut, explored, n, k), BS_OK);
  assert_true(k[BS_MUT_FAILURE_BEFORE_READY].survived);
  assert_null(k[BS_MUT_FAILURE_BEFORE_READY].untested);
  for (int m = 0; m < BS_MUT_COUNT; m++)
    bs_report_kill_free(&k[m]);
  free(res);
  free(mut);
  free(explored);
  free(all);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plan_refuses),
      cmocka_unit_test(test_command_defaults),
      cmocka_unit_test(test_deadline_real_or_virtual),
      cmocka_unit_test(test_sweep_plans_and_runs),
      cmocka_unit_test(test_fuzz_draws_its_budget),
      cmocka_unit_test(test_kill_matrix),
      cmocka_unit_test(test_kill_matrix_explores_schedules),
      cmocka_unit_test(test_kill_matrix_threads_untested),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
