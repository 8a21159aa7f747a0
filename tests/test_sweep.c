/* The sweep's plan and judgement (harness/explore/bs_sweep.h): every reach
 * of a counting pass, the filters, an even and repeatable sample, the spec
 * of a reach, and each outcome of a run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "bs_fault_parse.h"
#include "explore/bs_sweep.h"
#include "plan/bs_plan.h"

/* A counting pass: engine/send 2x on ranks 0, 1 of cycle 0; copy/fail 10x
 * on rank 0 of cycles 0 and 1. */
static bs_result counted(void) {
  static bs_fault_reach r[] = {{BS_FP_ENGINE_SEND, 0, 0, 2},
                               {BS_FP_ENGINE_SEND, 1, 0, 2},
                               {BS_FP_COPY_FAIL, 0, 0, 10},
                               {BS_FP_COPY_FAIL, 0, 1, 10}};
  return (bs_result){.reaches = r, .nreaches = 4};
}

static void test_every_reach(void **state) {
  (void)state;
  bs_result c = counted();
  bs_sweep_filter f = {.rank = -1, .cycle = -1};
  bs_sweep_reach *r;
  size_t n, total;
  assert_int_equal(bs_sweep_reaches(&c, &f, &r, &n, &total), BS_OK);
  assert_int_equal(n, 24);
  assert_int_equal(total, 24);
  assert_int_equal(r[0].point, BS_FP_ENGINE_SEND);
  assert_int_equal(r[1].nth, 2);
  assert_int_equal(r[2].rank, 1);
  assert_int_equal(r[23].point, BS_FP_COPY_FAIL);
  assert_int_equal(r[23].cycle, 1);
  assert_int_equal(r[23].nth, 10);
  free(r);
  /* Filters: a point (prefix), a rank, a cycle. */
  static const char *const points[] = {"copy/*"};
  f = (bs_sweep_filter){.points = points, .npoints = 1, .rank = 0, .cycle = 1};
  assert_int_equal(bs_sweep_reaches(&c, &f, &r, &n, &total), BS_OK);
  assert_int_equal(n, 10);
  assert_int_equal(r[0].cycle, 1);
  free(r);
}

static void test_sample(void **state) {
  (void)state;
  bs_result c = counted();
  bs_sweep_filter f = {.rank = -1, .cycle = -1, .sample = 6};
  bs_sweep_reach *r, *again;
  size_t n, total, m;
  assert_int_equal(bs_sweep_reaches(&c, &f, &r, &n, &total), BS_OK);
  assert_int_equal(total, 24);
  assert_int_equal(n, 6); /* 3 of each point */
  for (size_t i = 0; i < 3; i++) {
    assert_int_equal(r[i].point, BS_FP_ENGINE_SEND);
    assert_int_equal(r[3 + i].point, BS_FP_COPY_FAIL);
  }
  /* Spread over the point's reaches: both cycles of copy/fail. */
  assert_int_equal(r[3].cycle, 0);
  assert_int_equal(r[5].cycle, 1);
  assert_int_equal(bs_sweep_reaches(&c, &f, &again, &m, &total), BS_OK);
  assert_int_equal(m, n);
  assert_memory_equal(r, again, n * sizeof *r);
  free(r);
  free(again);
  /* A point with fewer reaches than its share leaves the rest to others. */
  f.sample = 20;
  assert_int_equal(bs_sweep_reaches(&c, &f, &r, &n, &total), BS_OK);
  assert_int_equal(n, 20);
  assert_int_equal(r[3].point, BS_FP_ENGINE_SEND);
  assert_int_equal(r[4].point, BS_FP_COPY_FAIL);
  free(r);
  /* One reach, from the offset-th point on. */
  f.sample = 1;
  f.offset = 1;
  assert_int_equal(bs_sweep_reaches(&c, &f, &r, &n, &total), BS_OK);
  assert_int_equal(n, 1);
  assert_int_equal(r[0].point, BS_FP_COPY_FAIL);
  free(r);
}

/* A reach the run's own faults take for sure is not armed again: in the
 * window of a fault of its point, rank and cycle that always fires;
 * persistent, every reach from it on. */
static void test_taken_by_own_faults(void **state) {
  (void)state;
  bs_run_fault own[2];
  assert_int_equal(
      bs_plan_fault("name=engine/send,rank=1,cycle=1,nth=2", &own[0]), BS_OK);
  bs_sweep_reach r = {BS_FP_ENGINE_SEND, 1, 1, 2, 2};
  assert_true(bs_sweep_taken(own, 1, &r, false));
  assert_true(bs_sweep_taken(own, 1, &r, true));
  r.nth = 1; /* its first reach is no one's; from it on, the first */
  assert_false(bs_sweep_taken(own, 1, &r, false));
  assert_false(bs_sweep_taken(own, 1, &r, true));
  r.rank = 0;
  r.nth = 2;
  assert_false(bs_sweep_taken(own, 1, &r, false));
  /* Every reach of the cycle (no nth), but not at random or once. */
  assert_int_equal(bs_plan_fault("name=engine/*,rank=0,cycle=1", &own[1]),
                   BS_OK);
  r.nth = 1;
  assert_true(bs_sweep_taken(own, 2, &r, true));
  assert_int_equal(
      bs_plan_fault("name=engine/send,rank=0,cycle=1,prob=0.5", &own[1]),
      BS_OK);
  assert_false(bs_sweep_taken(own, 2, &r, false));
  assert_int_equal(bs_plan_fault("name=engine/send,onetime", &own[1]), BS_OK);
  assert_false(bs_sweep_taken(own, 2, &r, false));
}

static void test_spec_and_judge(void **state) {
  (void)state;
  bs_sweep_reach x = {BS_FP_COMM_STALL, 3, 1, 7, 9};
  char spec[128];
  bs_sweep_spec(&x, false, spec, sizeof spec);
  assert_string_equal(spec, "name=comm/stall,rank=3,cycle=1,nth=7");
  bs_sweep_spec(&x, true, spec, sizeof spec);
  assert_string_equal(spec, "name=comm/stall,rank=3,cycle=1,nth=7,persistent");
  bs_fault_spec parsed;
  assert_int_equal(bs_fault_spec_parse(spec, &parsed), BS_OK);

  bs_armed a[2] = {{.fired_total = 0}, {.fired_total = 1}};
  bs_rank_outcome ok = {.status = "ok"}, dead = {.status = "engine-dead"};
  bs_result r = {.verdict = BS_PASS,
                 .armed = a,
                 .narmed = 2,
                 .outcomes = &ok,
                 .noutcomes = 1};
  assert_int_equal(bs_sweep_judge(&r, 1), BS_SWEEP_RECOVERED);
  assert_int_equal(bs_sweep_judge(&r, 0), BS_SWEEP_VACUOUS);
  r.outcomes = &dead;
  assert_int_equal(bs_sweep_judge(&r, 1), BS_SWEEP_CONTAINED);
  r.verdict = BS_VACUOUS; /* the scenario's own fault was pre-empted */
  assert_int_equal(bs_sweep_judge(&r, 1), BS_SWEEP_CONTAINED);
  r.verdict = BS_HANG;
  assert_int_equal(bs_sweep_judge(&r, 1), BS_SWEEP_FAIL);
  assert_string_equal(bs_sweep_outcome_name(BS_SWEEP_CONTAINED),
                      "contained-and-agreed");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_reach),
      cmocka_unit_test(test_sample),
      cmocka_unit_test(test_taken_by_own_faults),
      cmocka_unit_test(test_spec_and_judge),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
