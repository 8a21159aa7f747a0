/* The building blocks of scenario expectations, on synthetic records: each
 * holds on one record and fails on another, naming the rank and phase. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "bs_expect.h"

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
    bs_fail(st, tensor, "injected");
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
  snprintf(rec.rank[2].ev[6].err.tensor, sizeof rec.rank[2].ev[6].err.tensor,
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
  assert_true(bs_expect_fast_failures(&rec, 5000, d, sizeof d));
  e->t1_ms = 9000;
  assert_false(bs_expect_fast_failures(&rec, 5000, d, sizeof d));
  HAS("rank 0: the failed restore took 8990 ms");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_all_ok, teardown),
      cmocka_unit_test_teardown(test_failed_alike, teardown),
      cmocka_unit_test_teardown(test_failed_and_stopped, teardown),
      cmocka_unit_test_teardown(test_recovered_and_stopped, teardown),
      cmocka_unit_test_teardown(test_fast_failures, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
