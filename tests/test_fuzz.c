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
#include "bs_fault_parse.h"
#include "bs_test_faults.h"
#include "catalog/bs_scenario.h"
#include "explore/bs_fuzz.h"
#include "oracles/bs_expect.h"
#include "run/bs_child.h"
#include "run/bs_parent.h"

static bs_status drive(const bs_run *cfg, bs_record *rec) {
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
static bs_models models; /* the draws' */
static const bs_mutants NONE = {0};

/* The draws of the first n scenarios of pool, at most max_ranks ranks. */
static bs_fuzz_pool of(size_t n, int max_ranks) {
  return (bs_fuzz_pool){
      .scn = pool, .n = n, .max_ranks = max_ranks, .models = &models};
}

static int setup(void **state) {
  (void)state;
  pool[0] = bs_scenario_find("fz-plain");
  pool[1] = bs_scenario_find("fz-maincast");
  pool[2] = bs_scenario_find("fz-driver");
  return pool[0] && pool[1] && pool[2] ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  bs_models_free(&models);
  return 0;
}

/* A counting run that reached two points on rank 0 in cycle 0. */
static const bs_result *reached_rank0(void) {
  static bs_fault_reach r[] = {{BS_FP_ENGINE_SEND, 0, 0, 3},
                               {BS_FP_COPY_FAIL, 0, 0, 5}};
  static bs_result count = {.reaches = r, .nreaches = 2};
  return &count;
}

/* The same seed and index draw the same run; every draw is in bounds. */
static void test_draw(void **state) {
  (void)state;
  const bs_result *count = reached_rank0();
  bs_fuzz_pool p = of(3, 3);
  bs_fuzz_run a, b;
  size_t differ = 0, drivers = 0;
  for (size_t i = 0; i < 200; i++) {
    bs_fuzz_draw(7, i, &p, &a);
    bs_fuzz_draw_faults(7, count, &a);
    bs_fuzz_draw(7, i, &p, &b);
    bs_fuzz_draw_faults(7, count, &b);
    assert_memory_equal(&a, &b, sizeof a);
    bs_fuzz_draw(8, i, &p, &b);
    bs_fuzz_draw_faults(8, count, &b);
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

/* Whether count reached f's point on a rank and in a cycle its filters
 * keep, nth times at least (nth counts per rank and cycle). */
static bool reached(const bs_result *count, const bs_fuzz_fault *f) {
  for (size_t i = 0; i < count->nreaches; i++) {
    const bs_fault_reach *x = &count->reaches[i];
    if ((int)x->point == f->point && (f->rank < 0 || f->rank == x->rank) &&
        (f->cycle < 0 || f->cycle == x->cycle) && x->count >= f->nth)
      return true;
  }
  return false;
}

/* Faults drawn from a counting run arm only what it reached, with nth
 * within the reaches the filters keep; the shares of pinned ranks and
 * cycles stay; a configuration that reached nothing draws no fault. */
static void test_draw_reached(void **state) {
  (void)state;
  static bs_fault_reach r[] = {{BS_FP_ENGINE_SEND, 0, 0, 2},
                               {BS_FP_ENGINE_SEND, 1, 0, 2},
                               {BS_FP_COPY_FAIL, 1, 1, 10}};
  bs_result count = {.reaches = r, .nreaches = 3};
  bs_fuzz_pool p = of(2, 2);
  size_t faults = 0, send = 0, pinned_rank = 0, pinned_cycle = 0, high = 0;
  for (size_t i = 0; i < 300; i++) {
    bs_fuzz_run a, b;
    bs_fuzz_draw(3, i, &p, &a);
    a.ranks = 2; /* the world the counts came from */
    a.cycles = 2;
    b = a;
    bs_fuzz_draw_faults(3, &count, &a);
    bs_fuzz_draw_faults(3, &count, &b);
    assert_memory_equal(&a, &b, sizeof a);
    assert_true(a.nfaults >= 1 && a.nfaults <= BS_FUZZ_FAULTS);
    for (size_t k = 0; k < a.nfaults; k++) {
      const bs_fuzz_fault *f = &a.faults[k];
      if (!reached(&count, f))
        fail_msg("run %zu fault %zu: %s rank %d cycle %d nth %ld unreached", i,
                 k, bs_fault_catalogue_get(f->point)->name, f->rank, f->cycle,
                 f->nth);
      faults++;
      send += f->point == BS_FP_ENGINE_SEND;
      pinned_rank += f->rank >= 0;
      pinned_cycle += f->cycle >= 0;
      high += f->nth > 2; /* only copy/fail gets there */
    }
  }
  /* Each reached point alike, however often reached; half the ranks and
   * cycles pinned; copy/fail's nth up to its 10 reaches. */
  assert_true(send > faults / 3 && send < 2 * faults / 3);
  assert_true(pinned_rank > faults / 3 && pinned_rank < 2 * faults / 3);
  assert_true(pinned_cycle > faults / 3 && pinned_cycle < 2 * faults / 3);
  assert_true(high > faults / 10);
  bs_result none = {0};
  bs_fuzz_run c;
  bs_fuzz_draw(3, 0, &p, &c);
  bs_fuzz_draw_faults(3, &none, &c);
  assert_int_equal(c.nfaults, 0);
}

/* A configuration that fails with no drawn fault runs plain: an invariant
 * broke, setup failed, a hang; only the scenario's expectation failing
 * (it describes its own world and cycles) still draws faults. */
static void test_plain_fails(void **state) {
  (void)state;
  static bs_fault_reach r[] = {{BS_FP_COPY_FAIL, 0, 0, 5}};
  bs_oracle_result o[2] = {{.name = "expectation", .ok = false},
                           {.name = "bit-identity", .ok = true}};
  bs_result count = {.verdict = BS_FAIL,
                     .oracles = o,
                     .noracles = 2,
                     .reaches = r,
                     .nreaches = 1};
  bs_fuzz_run a;
  bs_fuzz_pool p = of(2, 2);
  bs_fuzz_draw(5, 1, &p, &a);
  assert_false(bs_fuzz_plain_fails(&count));
  bs_fuzz_draw_faults(5, &count, &a);
  assert_true(a.nfaults >= 1);
  o[1].ok = false;
  assert_true(bs_fuzz_plain_fails(&count));
  bs_fuzz_draw_faults(5, &count, &a);
  assert_int_equal(a.nfaults, 0);
  count.noracles = 0; /* failed, no oracle said so: its setup */
  assert_true(bs_fuzz_plain_fails(&count));
  count.verdict = BS_HANG;
  assert_true(bs_fuzz_plain_fails(&count));
  count.verdict = BS_VACUOUS; /* its own fault never fired */
  assert_false(bs_fuzz_plain_fails(&count));
}

/* MainCast-only points (restore, backup and master corruption). */
static bool maincast_only(int point) {
  return point == BS_FP_RESTORE_BITFLIP || point == BS_FP_BACKUP_CORRUPT ||
         point == BS_FP_MASTER_CORRUPT;
}

/* A real counting run of scn (its own settings, 2 ranks, 2 cycles), then
 * draws from it: every drawn fault at a point it reached, nth within the
 * reaches; how many drawn faults were at MainCast-only points. */
static size_t draws_of_real_count(const bs_scenario *scn) {
  bs_run base = {.backend = "sim",
                 .device = "host",
                 .scale = 1.0,
                 .timeout_ms = 1000,
                 .deadline_s = 60,
                 .exe = getenv("BACKSTOP_BIN"), /* the engines' */
                 .nprocs = 1};
  bs_fuzz_run r = {.scn = scn, .ranks = 2, .cycles = 2};
  bs_fuzz_cfg c;
  bs_result count;
  bs_parent_opts o = {.jobs = 1, .verbosity = -1, .child = bs_child_run};
  size_t maincast = 0;
  assert_int_equal(bs_fuzz_count_cfg(&r, &base, &models, &c), BS_OK);
  assert_int_equal(c.cfg.nfaults, 0);
  assert_true(c.cfg.count_reaches);
  assert_int_equal(bs_parent_run(&c.cfg, 1, &o, &count), BS_OK);
  for (size_t i = 0; i < count.noracles; i++)
    if (!count.oracles[i].ok)
      print_message("%s: %s\n", count.oracles[i].name, count.oracles[i].detail);
  if (count.verdict != BS_PASS)
    fail_msg("counting run of %s: %s: %s", scn->name,
             bs_result_verdict_name(count.verdict),
             count.note ? count.note : "");
  assert_true(count.nreaches > 0);
  for (size_t i = 0; i < 100; i++) {
    r.index = i;
    bs_fuzz_draw_faults(1, &count, &r);
    for (size_t k = 0; k < r.nfaults; k++) {
      assert_true(reached(&count, &r.faults[k]));
      maincast += maincast_only(r.faults[k].point);
    }
  }
  bs_result_free(&count);
  return maincast;
}

/* On the Normal backuper no MainCast-only point is drawn (the blind draw
 * drew them as often as any); on MainCast they are. */
static void test_draw_real_count(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  assert_non_null(getenv("BACKSTOP_BIN")); /* set by ctest */
  assert_int_equal(draws_of_real_count(pool[0]), 0);
  assert_true(draws_of_real_count(pool[1]) > 0);
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
  bs_run base = {.backend = "sim", .spawn = true, .scale = 1.0};
  bs_fuzz_run r = {.scn = pool[0], .ranks = 1, .cycles = 2, .seed = 9};
  bs_fuzz_cfg c;
  assert_int_equal(bs_fuzz_cfg_make(&r, &base, &models, &c), BS_OK);
  assert_int_equal(c.cfg.ranks, 1);
  assert_int_equal(c.cfg.cycles, 2);
  assert_false(c.cfg.spawn);
  r.ranks = 3;
  assert_int_equal(bs_fuzz_cfg_make(&r, &base, &models, &c), BS_OK);
  assert_true(c.cfg.spawn);
  base.spawn = false;
  assert_int_equal(bs_fuzz_cfg_make(&r, &base, &models, &c), BS_OK);
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
  size_t n = bs_fuzz_shrink(&r, NONE, c, 64);
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
  assert_int_equal(bs_fuzz_shrink(&r, NONE, c, 3), 3); /* bounded */
  /* A drawn schedule, last: the run's own seed, one change point fewer,
   * random. */
  r.seed = 5;
  r.schedule = (bs_sched_spec){.policy = BS_SCHED_PCT, .depth = 3, .seed = 77};
  size_t m = bs_fuzz_shrink(&r, NONE, c, 64);
  assert_int_equal(m, n + 3);
  assert_true(c[n].schedule.seed == 5 && c[n].schedule.depth == 3);
  assert_true(c[n + 1].schedule.seed == 77 && c[n + 1].schedule.depth == 2);
  assert_int_equal(c[n + 2].schedule.policy, BS_SCHED_RANDOM);
}

/* Each run draws its schedule from a stream of its own (the rest of the
 * draw as without it): random and PCT, seeded by the run's seed or one of
 * its own, the same for the same seed; a campaign's --schedule (and
 * --schedule-seed) instead wherever given. */
static void test_draw_schedule(void **state) {
  (void)state;
  bs_fuzz_pool p = of(2, 3), threads = of(2, 3);
  p.schedule.policy = BS_SCHED_RANDOM;
  size_t pct = 0, own = 0;
  for (size_t i = 0; i < 200; i++) {
    bs_fuzz_run a, b, t;
    bs_fuzz_draw(7, i, &p, &a);
    bs_fuzz_draw(7, i, &p, &b);
    bs_fuzz_draw(7, i, &threads, &t);
    assert_memory_equal(&a.schedule, &b.schedule, sizeof a.schedule);
    assert_int_equal(t.schedule.policy, BS_SCHED_THREADS);
    t.schedule = a.schedule; /* nothing else of the draw moved */
    assert_memory_equal(&a, &t, sizeof a);
    pct += a.schedule.policy == BS_SCHED_PCT;
    own += a.schedule.seed != a.seed;
    assert_true(a.schedule.policy != BS_SCHED_PCT ||
                (a.schedule.depth >= 2 && a.schedule.depth <= 4));
  }
  assert_true(pct > 20 && pct < 90);
  assert_true(own > 60 && own < 140);
  p.schedule = (bs_sched_spec){.policy = BS_SCHED_PCT, .depth = 5, .seed = 3};
  p.schedule_given = p.schedule_seeded = true;
  bs_fuzz_run g;
  bs_fuzz_draw(7, 11, &p, &g);
  assert_true(g.schedule.policy == BS_SCHED_PCT && g.schedule.depth == 5 &&
              g.schedule.seed == 3);
}

/* A vacuous run is a pass when a drawn fault fired (another's reaches cut
 * off), not when only the scenario's own did; other verdicts stand. */
static void test_verdict(void **state) {
  (void)state;
  static const char *const own[] = {"name=engine/send", NULL};
  bs_scenario scn = {.name = "fz-own", .faults = own};
  bs_fuzz_run r = {.scn = &scn, .nfaults = 1};
  bs_armed a[2] = {{.fired_total = 0}, {.fired_total = 1}};
  bs_result res = {.verdict = BS_VACUOUS, .armed = a, .narmed = 2};
  bool pre = false;
  assert_true(bs_fuzz_drawn_fired(&r, &res, 0));
  assert_int_equal(bs_fuzz_verdict(&r, &res, &pre), BS_PASS);
  assert_true(pre);
  a[0].fired_total = 1, a[1].fired_total = 0; /* only the scenario's own */
  assert_false(bs_fuzz_drawn_fired(&r, &res, 0));
  assert_int_equal(bs_fuzz_verdict(&r, &res, &pre), BS_VACUOUS);
  assert_false(pre);
  a[1].fired_total = 2;
  const bs_verdict kept[] = {BS_FAIL, BS_HANG, BS_CRASH, BS_PASS};
  for (size_t i = 0; i < 4; i++) {
    res.verdict = kept[i];
    assert_int_equal(bs_fuzz_verdict(&r, &res, &pre), kept[i]);
    assert_false(pre);
  }
  res.narmed = 1; /* the drawn fault was never armed */
  assert_false(bs_fuzz_drawn_fired(&r, &res, 0));
}

/* Two drawn faults; the second fired in one run of the seed and not in
 * the other (its rank learnt of the first one's failure sooner): the tally
 * is the same both times, and nothing counts when none fired. */
static void test_drawn_hit(void **state) {
  (void)state;
  bs_scenario scn = {.name = "fz-none"};
  bs_fuzz_run r = {.scn = &scn, .nfaults = 2};
  bs_armed a[2] = {{.fired_total = 1}, {.fired_total = 1}};
  bs_result res = {.verdict = BS_PASS, .armed = a, .narmed = 2};
  bool both[2], one[2];
  for (size_t i = 0; i < 2; i++)
    both[i] = bs_fuzz_drawn_hit(&r, &res, i);
  a[1].fired_total = 0;
  res.verdict = BS_VACUOUS;
  for (size_t i = 0; i < 2; i++)
    one[i] = bs_fuzz_drawn_hit(&r, &res, i);
  assert_memory_equal(both, one, sizeof both);
  assert_true(one[0] && one[1]);
  a[0].fired_total = 0;
  assert_false(bs_fuzz_drawn_hit(&r, &res, 0));
  assert_false(bs_fuzz_drawn_hit(&r, &res, 1));
  assert_false(bs_fuzz_drawn_hit(&r, &res, 2)); /* no such fault */
}

static bs_result failing(const char *oracle, const char *detail,
                         const char *fired, bs_armed *a) {
  static bs_oracle_result o;
  o = (bs_oracle_result){.ok = false};
  snprintf(o.name, sizeof o.name, "%s", oracle);
  snprintf(o.detail, sizeof o.detail, "%s", detail);
  *a = (bs_armed){.nfired = 1, .fired_total = 1};
  a->fired[0].point = bs_fault_catalogue_find(fired)->id;
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
  assert_true(bs_fuzz_known(&mc, NONE, &r, why, sizeof why));
  assert_non_null(strstr(why, "cycles 0 and 1"));
  r = failing("bit-identity", "rank 0, cycle 1 restore: ...", "master/corrupt",
              &a);
  assert_false(
      bs_fuzz_known(&mc, NONE, &r, why, sizeof why)); /* it must catch */
  mc.sets[0] = "ci_test=0";
  mc.nsets = 1;
  assert_true(bs_fuzz_known(&mc, NONE, &r, why, sizeof why));
  assert_non_null(strstr(why, "ci_test=1"));
  r = failing("bit-identity", "rank 0, cycle 1 restore: ...", "copy/fail", &a);
  assert_false(
      bs_fuzz_known(&mc, NONE, &r, why, sizeof why)); /* no corruption */
  r = failing("agreement", "rank 0 ...", "master/corrupt", &a);
  assert_false(bs_fuzz_known(&mc, NONE, &r, why, sizeof why));
  r.verdict = BS_VACUOUS;
  assert_false(bs_fuzz_is_finding(&r));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_draw),
      cmocka_unit_test(test_draw_reached),
      cmocka_unit_test(test_plain_fails),
      cmocka_unit_test(test_draw_real_count),
      cmocka_unit_test(test_spec),
      cmocka_unit_test(test_cfg_make),
      cmocka_unit_test(test_shrink),
      cmocka_unit_test(test_draw_schedule),
      cmocka_unit_test(test_verdict),
      cmocka_unit_test(test_drawn_hit),
      cmocka_unit_test(test_known),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
