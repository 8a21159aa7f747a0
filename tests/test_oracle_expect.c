/* The building blocks of scenario expectations, on synthetic records: each
 * holds on one record and fails on another, naming the rank and phase. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracles/bs_expect.h"

static bs_record rec;
static char d[256];

static int teardown(void **state) {
  (void)state;
  bs_record_free(&rec);
  bs_err_clear();
  return 0;
}

static bs_event *ev(int rank, const char *phase, int cycle, bs_status st,
                    const char *tensor) {
  bs_err_clear();
  bs_event *e = bs_record_begin(&rec, rank, phase, cycle);
  assert_non_null(e);
  if (st != BS_OK)
    bs_err_fail(st, tensor, "injected");
  bs_record_end(&rec, rank, st);
  bs_err_clear();
  return e;
}

/* init, then per cycle update_weights..sleep; `fail` on the given step. */
static void lifecycle(int ranks, int cycles, int fail_cycle,
                      const char *fail_phase, bs_status st) {
  static const char *const phases[] = {"update_weights", "wake_up", "restore",
                                       "train_step", "sleep"};
  assert_int_equal(bs_record_init(&rec, ranks, cycles), BS_OK);
  for (int k = 0; k < ranks; k++) {
    ev(k, "init", 0, BS_OK, NULL);
    for (int c = 0; c < cycles; c++)
      for (size_t p = 0; p < 5; p++) {
        bool f = c == fail_cycle && strcmp(phases[p], fail_phase) == 0;
        ev(k, phases[p], c, f ? st : BS_OK, f ? "w.0" : NULL);
      }
  }
}

#define HAS(s) assert_non_null(strstr(d, (s)))

static void test_all_ok(void **state) {
  (void)state;
  lifecycle(2, 2, -1, "", BS_OK);
  assert_true(bs_expect_all_ok(&rec, d, sizeof d));
  HAS("all 22 phases on 2 ranks ok");
  ev(1, "update_weights", 2, BS_ERR_COPY, NULL);
  assert_false(bs_expect_all_ok(&rec, d, sizeof d));
  HAS("rank 1, cycle 2 update_weights: copy-failed");
  teardown(NULL);
  /* init alone is not a run that went well */
  assert_int_equal(bs_record_init(&rec, 1, 2), BS_OK);
  ev(0, "init", 0, BS_OK, NULL);
  assert_false(bs_expect_all_ok(&rec, d, sizeof d));
  HAS("no cycle ran");
}

static void test_failed_alike(void **state) {
  (void)state;
  lifecycle(3, 2, 1, "update_weights", BS_ERR_ENGINE_DEAD);
  assert_true(bs_expect_failed_alike(&rec, "update_weights", BS_ERR_ENGINE_DEAD,
                                     true, d, sizeof d));
  HAS("all 3 ranks: engine-dead in update_weights [w.0]");
  assert_false(bs_expect_failed_alike(&rec, "restore", BS_ERR_ENGINE_DEAD,
                                      false, d, sizeof d));
  HAS("rank 0: expected engine-dead in restore, got engine-dead in "
      "update_weights");
  snprintf(rec.rank[2].ev[6].err->tensor, sizeof rec.rank[2].ev[6].err->tensor,
           "other");
  assert_false(bs_expect_failed_alike(&rec, "update_weights",
                                      BS_ERR_ENGINE_DEAD, true, d, sizeof d));
  HAS("rank 2: the error names tensor 'other'");
}

static void test_failed_and_stopped(void **state) {
  (void)state;
  lifecycle(2, 1, 0, "sleep", BS_ERR_NOMEM);
  /* NULL / BS_OK: whatever rank 0's first failure was */
  assert_true(
      bs_expect_failed_and_stopped(&rec, NULL, BS_OK, true, d, sizeof d));
  HAS("all 2 ranks: out-of-memory in sleep [w.0]; the run stopped there");
  ev(1, "wake_up", 1, BS_OK, NULL);
  assert_false(bs_expect_failed_and_stopped(&rec, "sleep", BS_ERR_NOMEM, false,
                                            d, sizeof d));
  HAS("rank 1 went on to wake_up of cycle 1");
  teardown(NULL);
  lifecycle(1, 1, -1, "", BS_OK);
  assert_false(
      bs_expect_failed_and_stopped(&rec, NULL, BS_OK, false, d, sizeof d));
  HAS("rank 0 never failed");
}

/* The failure alike and stopped, and its message saying what it must. */
static void test_failed_saying(void **state) {
  (void)state;
  lifecycle(2, 2, 1, "sleep", BS_ERR_STATE); /* the last phase: stopped */
  assert_true(bs_expect_failed_saying(&rec, "sleep", BS_ERR_STATE, "injected",
                                      d, sizeof d));
  HAS("(cycle 1): injected");
  assert_false(bs_expect_failed_saying(&rec, "sleep", BS_ERR_STATE,
                                       "already paused", d, sizeof d));
  HAS("cycle 1 sleep: the error does not say 'already paused': injected");
  /* Failed otherwise: that is what it says. */
  assert_false(bs_expect_failed_saying(&rec, "sleep", BS_ERR_DESYNC, "injected",
                                       d, sizeof d));
  assert_null(strstr(d, "does not say"));
}

static void test_recovered_and_stopped(void **state) {
  (void)state;
  lifecycle(2, 3, 1, "update_weights", BS_ERR_ENGINE_DEAD);
  assert_true(bs_expect_recovered(&rec, "restore", d, sizeof d));
  assert_false(bs_expect_stopped(&rec, d, sizeof d));
  HAS("rank 0 went on to sleep of cycle 2 after failing update_weights");
  teardown(NULL);
  lifecycle(2, 1, 0, "sleep", BS_ERR_STATE);
  assert_true(bs_expect_stopped(&rec, d, sizeof d));
  assert_false(bs_expect_recovered(&rec, "restore", d, sizeof d));
  HAS("rank 0: no successful restore after its failure");
}

static void test_fast_failures(void **state) {
  (void)state;
  lifecycle(1, 1, 0, "restore", BS_ERR_DESYNC);
  bs_event *e = &rec.rank[0].ev[3];
  e->t0_ms = 10;
  e->t1_ms = 20;
  assert_true(bs_expect_fast_failures(&rec, 5000, 10000, d, sizeof d));
  e->t1_ms = 9000;
  assert_false(bs_expect_fast_failures(&rec, 5000, 10000, d, sizeof d));
  HAS("rank 0: the failed restore of cycle 0 lasted 5000 ms or more beyond "
      "its longest success");
  teardown(NULL);
  /* The bound counts beyond the phase's longest success on that rank: a
   * backend whose restores take 3 s fails one in 7 s within 5000 ms. */
  lifecycle(1, 2, 1, "restore", BS_ERR_DESYNC);
  bs_event *ok = &rec.rank[0].ev[3], *bad = &rec.rank[0].ev[8];
  ok->t0_ms = 0, ok->t1_ms = 3000;
  bad->t0_ms = 10000, bad->t1_ms = 17000;
  assert_true(bs_expect_fast_failures(&rec, 5000, 10000, d, sizeof d));
  bad->t1_ms = 18000;
  assert_false(bs_expect_fast_failures(&rec, 5000, 10000, d, sizeof d));
  /* Successes slower than the watchdog (2 s NCCL update_weights at 8
   * ranks on one GPU, a 2 s timeout): a failure in 1.5 s is fast, one that
   * waited the 2 s timeout out is not, however slow the successes. */
  ok->t1_ms = 2100;
  bad->t1_ms = 11500;
  assert_true(bs_expect_fast_failures(&rec, 1000, 2000, d, sizeof d));
  bad->t1_ms = 12000;
  assert_false(bs_expect_fast_failures(&rec, 1000, 2000, d, sizeof d));
}

static void test_find_and_after_failure(void **state) {
  (void)state;
  lifecycle(2, 3, 1, "update_weights", BS_ERR_ENGINE_DEAD);
  const bs_event *e = bs_expect_find(&rec, 1, "restore", 2);
  assert_non_null(e);
  assert_int_equal(e->cycle, 2);
  assert_string_equal(e->phase, "restore");
  assert_null(bs_expect_find(&rec, 0, "restore", 5));
  e = bs_expect_after_failure(&rec, 1, "update_weights");
  assert_non_null(e);
  assert_int_equal(e->cycle, 2);
  teardown(NULL);
  lifecycle(1, 2, 1, "update_weights", BS_ERR_ENGINE_DEAD);
  assert_null(bs_expect_after_failure(&rec, 0, "update_weights"));
}

/* A flight-recorder dump: one collective per "label@ms" (label "-": a data
 * collective), times aligned with a record that started at 0. */
static char *flight(const char *const *colls, size_t n) {
  char *s = calloc(4096, 1);
  assert_non_null(s);
  int len = snprintf(s, 4096, "{\"entries\": [");
  for (size_t i = 0; i < n; i++) {
    char label[16];
    double ms;
    assert_int_equal(sscanf(colls[i], "%15[^@]@%lf", label, &ms), 2);
    len += snprintf(s + len, 4096 - (size_t)len,
                    "%s{\"collective_seq_id\": %zu, \"profiling_name\": "
                    "\"nccl:all_gather\", \"label\": \"%s\", "
                    "\"time_created_ns\": %.0f}",
                    i ? ", " : "", i + 1, strcmp(label, "-") ? label : "",
                    ms * 1e6);
  }
  snprintf(s + len, 4096 - (size_t)len, "]}");
  return s;
}

static void test_collectives_per_phase(void **state) {
  (void)state;
  static const char *const full[] = {"agree@9", "agree@11", "-@12",
                                     "-@13",    "agree@19", "agree@21"};
  static const char *const short_[] = {"agree@9", "agree@11", "-@12",
                                       "agree@19", "agree@21"};
  bs_coll_count c;
  lifecycle(3, 2, -1, "", BS_OK);
  rec.start_real_ms = 0;
  for (int k = 0; k < 3; k++) {
    bs_event *e = (bs_event *)bs_expect_find(&rec, k, "update_weights", 1);
    e->t0_ms = 10;
    e->t1_ms = 20;
    rec.rank[k].flight = flight(full, 6);
  }
  assert_true(bs_expect_count_collectives(
      &rec, 1, bs_expect_find(&rec, 1, "update_weights", 1), &c, d, sizeof d));
  assert_int_equal(c.all, 4);
  assert_int_equal(c.data, 2);
  assert_true(
      bs_expect_same_collectives(&rec, "update_weights", 1, &c, d, sizeof d));
  HAS("cycle 1 update_weights: every rank issued 4 collectives (2 data)");
  free(rec.rank[2].flight);
  rec.rank[2].flight = flight(short_, 5);
  assert_false(
      bs_expect_same_collectives(&rec, "update_weights", 1, &c, d, sizeof d));
  HAS("rank 2 issued 3 collectives (1 data), rank 0 4 (2 data)");
  assert_false(
      bs_expect_same_collectives(&rec, "update_weights", 4, &c, d, sizeof d));
  HAS("rank 0 never ran update_weights of cycle 4");
  free(rec.rank[1].flight);
  rec.rank[1].flight = NULL;
  assert_false(
      bs_expect_same_collectives(&rec, "update_weights", 1, &c, d, sizeof d));
  HAS("rank 1: no readable flight recorder");
}

static void test_checks_ok(void **state) {
  (void)state;
  assert_int_equal(bs_record_init(&rec, 0, 0), BS_OK);
  assert_false(bs_expect_checks_ok(&rec, d, sizeof d));
  HAS("no check was recorded");
  assert_int_equal(bs_record_check(&rec, "a", true, "fine"), BS_OK);
  assert_true(bs_expect_checks_ok(&rec, d, sizeof d));
  HAS("all 1 checks hold");
  assert_int_equal(bs_record_check(&rec, "b", false, "rule %d", 7), BS_OK);
  assert_false(bs_expect_checks_ok(&rec, d, sizeof d));
  HAS("b: rule 7");
}

static const char report[] =
    "backstop: rank-dead at collective #13 (4 ranks, sim backend)\n"
    "  cause: rank 3 is gone while 3 ranks wait for it in a collective\n"
    "  ranks 0-2: all_gather #13 (32 x uint8) [fingerprint]\n"
    "  rank 3: dead after #12: fault comm/rank_exit\n"
    "  missing from #13: rank 3\n"
    "  stall -> detection: 0.003 ms (watchdog timeout 2000 ms)\n";

static void test_report_lines(void **state) {
  (void)state;
  char line[128];
  assert_int_equal(bs_record_init(&rec, 4, 1), BS_OK);
  assert_int_equal(bs_expect_report_timeout_ms(&rec), -1);
  assert_false(bs_expect_report_line(&rec, 3, line, sizeof line));
  rec.world_report = strdup(report);
  assert_int_equal(bs_expect_report_timeout_ms(&rec), 2000);
  assert_true(bs_expect_report_line(&rec, 3, line, sizeof line));
  assert_string_equal(line, "rank 3: dead after #12: fault comm/rank_exit");
  /* grouped ranks have no line of their own; 30 is not 3 */
  assert_false(bs_expect_report_line(&rec, 1, line, sizeof line));
  assert_false(bs_expect_report_line(&rec, 30, line, sizeof line));
  assert_true(bs_expect_names_dead(&rec, 3, false, d, sizeof d));
  HAS("rank 3: dead after #12");
  assert_false(bs_expect_names_dead(&rec, 1, true, d, sizeof d));
  HAS("the report does not name rank 1 as dead");
  /* A rank that left its function reads "exited", accepted when asked. */
  free(rec.world_report);
  rec.world_report = strdup("backstop: rank-dead at collective #13\n"
                            "  rank 3: exited after #12: returned\n");
  assert_false(bs_expect_names_dead(&rec, 3, false, d, sizeof d));
  assert_true(bs_expect_names_dead(&rec, 3, true, d, sizeof d));
}

static void test_contained_fast(void **state) {
  (void)state;
  lifecycle(2, 1, 0, "update_weights", BS_ERR_RANK_DEAD);
  assert_false(bs_expect_contained_fast(&rec, d, sizeof d));
  HAS("nothing was contained");
  rec.world_report = strdup(report);
  assert_false(bs_expect_contained_fast(&rec, d, sizeof d));
  rec.detect_ms = 2.5;
  assert_true(bs_expect_contained_fast(&rec, d, sizeof d));
  HAS("contained under 1000 ms (detect_ms), every failure too (timeout 2000 "
      "ms)");
  rec.detect_ms = 1500;
  assert_false(bs_expect_contained_fast(&rec, d, sizeof d));
  HAS("detection (detect_ms) not under 1000 ms (timeout 2000 ms)");
  rec.detect_ms = 2.5;
  bs_event *e = (bs_event *)bs_expect_first_failure(&rec, 1);
  e->t0_ms = 0;
  e->t1_ms = 1200;
  assert_false(bs_expect_contained_fast(&rec, d, sizeof d));
  HAS("rank 1: the failed update_weights of cycle 0 lasted 1000 ms or more");
}

/* Across processes (the sim's board, NCCL's notes) the bound is the same
 * as in one process. */
static void test_contained_across_processes(void **state) {
  (void)state;
  lifecycle(2, 1, 0, "update_weights", BS_ERR_RANK_DEAD);
  rec.world_report = strdup(report);
  rec.nprocs = 2;
  snprintf(rec.backend, sizeof rec.backend, "nccl");
  rec.detect_ms = 2100;
  assert_false(bs_expect_contained_fast(&rec, d, sizeof d));
  HAS("not under 1000 ms");
  rec.detect_ms = 12;
  assert_true(bs_expect_contained_fast(&rec, d, sizeof d));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_all_ok, teardown),
      cmocka_unit_test_teardown(test_failed_alike, teardown),
      cmocka_unit_test_teardown(test_failed_and_stopped, teardown),
      cmocka_unit_test_teardown(test_failed_saying, teardown),
      cmocka_unit_test_teardown(test_recovered_and_stopped, teardown),
      cmocka_unit_test_teardown(test_fast_failures, teardown),
      cmocka_unit_test_teardown(test_find_and_after_failure, teardown),
      cmocka_unit_test_teardown(test_collectives_per_phase, teardown),
      cmocka_unit_test_teardown(test_checks_ok, teardown),
      cmocka_unit_test_teardown(test_report_lines, teardown),
      cmocka_unit_test_teardown(test_contained_fast, teardown),
      cmocka_unit_test_teardown(test_contained_across_processes, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
