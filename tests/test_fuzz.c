/* The fuzz's draws, specs, shrink steps and known truths
 * (harness/explore/bs_fuzz.h), over scenarios of its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_fault_control.h"
#include "explore/bs_fuzz.h"
#include "oracles/bs_expect.h"

static bs_status drive(const bs_run_cfg *cfg, bs_record *rec) {
  (void)cfg, (void)rec;
  return BS_OK;
}

BS_SCENARIO(fz_plain){.name = "fz-plain",
                      .model = "tiny",
                      .cycles = 3,
                      .default_ranks = 4,
                      .min_ranks = 2};
BS_SCENARIO(fz_maincast){.name = "fz-maincast",
                         .model = "tiny",
                         .cycles = 3,
                         .default_ranks = 4,
                         .min_ranks = 1,
                         .sets = BS_LIST("rematerialize=1", "ci_test=1")};
BS_SCENARIO(fz_driver){.name = "fz-driver",
                       .model = "tiny",
                       .cycles = 0,
                       .default_ranks = 1,
                       .min_ranks = 1,
                       .drive = drive};

static const bs_scenario *pool[3];

static int setup(void **state) {
  (void)state;
  pool[0] = bs_scenario_find("fz-plain");
  pool[1] = bs_scenario_find("fz-maincast");
  pool[2] = bs_scenario_find("fz-driver");
  return pool[0] && pool[1] && pool[2] ? 0 : -1;
}

/* The same seed and index draw the same run; every draw is in bounds. */
static void test_draw(void **state) {
  (void)state;
  bs_fuzz_run a, b;
  size_t differ = 0, drivers = 0;
  for (size_t i = 0; i < 200; i++) {
    bs_fuzz_draw(7, i, 3, pool, 3, &a);
    bs_fuzz_draw(7, i, 3, pool, 3, &b);
    assert_memory_equal(&a, &b, sizeof a);
    bs_fuzz_draw(8, i, 3, pool, 3, &b);
    differ += memcmp(&a, &b, sizeof a) != 0;
    assert_int_equal(a.index, i);
    if (a.scn->drive) { /* runs as it is */
      assert_int_equal(a.nfaults + a.nsets, 0);
      drivers++;
      continue;
    }
    assert_true(a.ranks >= a.scn->min_ranks && a.ranks <= 3);
    assert_true(a.cycles >= 1 && a.cycles <= 3);
    assert_true(a.nfaults >= 1 && a.nfaults <= BS_FUZZ_FAULTS);
    for (size_t k = 0; k < a.nfaults; k++) {
      const bs_fuzz_fault *f = &a.faults[k];
      char spec[160];
      bs_fault_spec s;
      assert_true(f->rank < a.ranks && f->cycle < a.cycles);
      bs_fuzz_spec(f, spec, sizeof spec);
      if (bs_fault_spec_parse(spec, &s) != BS_OK)
        fail_msg("drawn spec '%s': %s", spec, bs_err()->message);
    }
  }
  assert_true(differ > 150); /* another seed, other runs (a driver run
                              * drawn by both is the same) */
  assert_true(drivers > 30 && drivers < 110);
}

static void test_spec(void **state) {
  (void)state;
  char spec[160];
  bs_fuzz_fault f = {.point = BS_FP_COPY_FAIL,
                     .rank = 1,
                     .cycle = 0,
                     .nth = 2,
                     .times = 0,
                     .prob = 0.5,
                     .failinfo = 5,
                     .onetime = true};
  bs_fuzz_spec(&f, spec, sizeof spec);
  assert_string_equal(spec, "name=copy/fail,rank=1,cycle=0,nth=2,persistent,"
                            "prob=0.5,failinfo=5,onetime");
  f = (bs_fuzz_fault){.point = BS_FP_ENGINE_SEND,
                      .rank = -1,
                      .cycle = -1,
                      .times = 3,
                      .prob = 1};
  bs_fuzz_spec(&f, spec, sizeof spec);
  assert_string_equal(spec, "name=engine/send"); /* times needs an nth */
}

/* A draw's run config: the draw's own fields over the base, and --spawn
 * only where there is more than one rank to spread. */
static void test_cfg_make(void **state) {
  (void)state;
  bs_run_cfg base = {.backend = "sim", .spawn = true, .scale = 1.0};
  bs_fuzz_run r = {.scn = pool[0], .ranks = 1, .cycles = 2, .seed = 9};
  bs_fuzz_cfg c;
  bs_fuzz_cfg_make(&r, &base, &c);
  assert_int_equal(c.cfg.ranks, 1);
  assert_int_equal(c.cfg.cycles, 2);
  assert_false(c.cfg.spawn);
  r.ranks = 3;
  bs_fuzz_cfg_make(&r, &base, &c);
  assert_true(c.cfg.spawn);
  base.spawn = false;
  bs_fuzz_cfg_make(&r, &base, &c);
  assert_false(c.cfg.spawn);
}

/* Every shrink candidate is one step smaller and still a valid run. */
static void test_shrink(void **state) {
  (void)state;
  bs_fuzz_run r = {.scn = pool[0],
                   .ranks = 4,
                   .cycles = 3,
                   .model = "dense",
                   .nsets = 1,
                   .nfaults = 2,
                   .sets = {"with_ref=1"}};
  r.faults[0] = (bs_fuzz_fault){.point = BS_FP_COPY_FAIL,
                                .rank = 3,
                                .cycle = 2,
                                .nth = 3,
                                .times = 1,
                                .prob = 1};
  r.faults[1] = (bs_fuzz_fault){.point = BS_FP_ENGINE_SEND,
                                .rank = -1,
                                .cycle = -1,
                                .times = 1,
                                .prob = 0.5};
  bs_fuzz_run c[64];
  size_t n = bs_fuzz_shrink(&r, c, 64);
  /* 2 faults, 1 set, the model, ranks 2..3, cycles 1..2 (ruled out by the
   * fault in cycle 2), nth 1..2, an earlier cycle, fault 1 plainer. */
  assert_int_equal(n, 2 + 1 + 1 + 2 + 0 + 2 + 1 + 1);
  assert_int_equal(c[0].nfaults, 1);
  assert_int_equal(c[0].faults[0].point, BS_FP_ENGINE_SEND);
  assert_int_equal(c[2].nsets, 0);
  assert_null(c[3].model);
  assert_int_equal(c[4].ranks, 2);
  assert_int_equal(c[4].faults[0].rank, 1); /* moved to the last rank */
  assert_int_equal(c[6].faults[0].nth, 1);
  assert_int_equal(c[8].faults[0].cycle, 1);
  assert_true(c[9].faults[1].prob == 1.0);
  assert_int_equal(bs_fuzz_shrink(&r, c, 3), 3); /* bounded */
}

static bs_result failing(const char *oracle, const char *detail,
                         const char *fired, bs_armed *a) {
  static bs_oracle_result o;
  o = (bs_oracle_result){.ok = false};
  snprintf(o.name, sizeof o.name, "%s", oracle);
  snprintf(o.detail, sizeof o.detail, "%s", detail);
  *a = (bs_armed){.nfired = 1, .fired_total = 1};
  snprintf(a->fired[0].point, sizeof a->fired[0].point, "%s", fired);
  return (bs_result){.verdict = BS_FAIL,
                     .oracles = &o,
                     .noracles = 1,
                     .armed = a,
                     .narmed = 1};
}

/* A corrupted restore the core's check does not cover is a known truth;
 * one inside its window, or any other failure, is not. */
static void test_known(void **state) {
  (void)state;
  char why[400], sig[96];
  bs_armed a;
  bs_fuzz_run mc = {.scn = pool[1], .ranks = 1, .cycles = 3};
  bs_result r = failing("bit-identity",
                        "rank 0, cycle 2 restore: restored "
                        "weights: 1/9 tensors differ",
                        "master/corrupt", &a);
  bs_fuzz_signature(&r, sig, sizeof sig);
  assert_string_equal(sig, "fail bit-identity");
  assert_true(bs_fuzz_is_finding(&r));
  assert_true(bs_fuzz_known(&mc, &r, why, sizeof why));
  assert_non_null(strstr(why, "cycles 0 and 1"));
  r = failing("bit-identity", "rank 0, cycle 1 restore: ...", "master/corrupt",
              &a);
  assert_false(bs_fuzz_known(&mc, &r, why, sizeof why)); /* it must catch */
  mc.sets[0] = "ci_test=0";
  mc.nsets = 1;
  assert_true(bs_fuzz_known(&mc, &r, why, sizeof why));
  assert_non_null(strstr(why, "ci_test=1"));
  r = failing("bit-identity", "rank 0, cycle 1 restore: ...", "copy/fail", &a);
  assert_false(bs_fuzz_known(&mc, &r, why, sizeof why)); /* no corruption */
  r = failing("agreement", "rank 0 ...", "master/corrupt", &a);
  assert_false(bs_fuzz_known(&mc, &r, why, sizeof why));
  r.verdict = BS_VACUOUS;
  assert_false(bs_fuzz_is_finding(&r));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_draw),     cmocka_unit_test(test_spec),
      cmocka_unit_test(test_cfg_make), cmocka_unit_test(test_shrink),
      cmocka_unit_test(test_known),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
