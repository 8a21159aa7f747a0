#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "bs_dtype.h"
#include "bs_err.h"

static int fail_line; /* the line of the BS_FAIL below */

static bs_status fails_then_cleans(int *cleaned) {
  bs_status st = BS_OK;
  BS_CHECK(BS_OK);
  fail_line = __LINE__ + 1;
  BS_FAIL(BS_ERR_HASH_MISMATCH, "w", "cycle %d", 1);
out:
  *cleaned = 1;
  return st;
}

static void test_first_error_wins(void **state) {
  (void)state;
  bs_err_set_rank(3);
  bs_err_clear();
  bs_err_set_phase("restore");
  int cleaned = 0;
  assert_int_equal(fails_then_cleans(&cleaned), BS_ERR_HASH_MISMATCH);
  assert_int_equal(cleaned, 1);
  bs_err_fail(BS_ERR_COPY, NULL, "later");
  assert_int_equal(bs_err()->code, BS_ERR_HASH_MISMATCH);
  assert_int_equal(bs_err()->rank, 3);
  assert_string_equal(bs_err()->phase, "restore");
  assert_string_equal(bs_err()->tensor, "w");
  char buf[256];
  bs_err_format(bs_err(), buf, sizeof buf);
  assert_string_equal(buf, "hash-mismatch in restore [w]: cycle 1");
  bs_err_clear();
  assert_int_equal(bs_err()->code, BS_OK);
  assert_string_equal(bs_err_where(bs_err()), "");
}

/* The record names the BS_FAIL that set it, relative to the source tree
 * (-fmacro-prefix-map), and the later failure does not move it. */
static void test_where_is_the_fail_line(void **state) {
  (void)state;
  bs_err_clear();
  int cleaned = 0;
  fails_then_cleans(&cleaned);
  bs_err_fail(BS_ERR_COPY, NULL, "later");
  char want[64];
  snprintf(want, sizeof want, "tests/test_err.c:%d", fail_line);
  assert_string_equal(bs_err_where(bs_err()), want);
  bs_err_clear();
}

static void test_names(void **state) {
  (void)state;
  for (int i = 0; i < BS_STATUS_COUNT; i++)
    assert_string_not_equal(bs_status_name(i), "unknown");
  assert_string_equal(bs_status_name(BS_ERR_ENGINE_DEAD), "engine-dead");
  assert_string_equal(bs_status_name(BS_STATUS_COUNT), "unknown");
  assert_int_equal(bs_dtype_parse("bf16"), BS_BF16);
  assert_int_equal(bs_dtype_size(BS_F32), 4);
  assert_int_equal(bs_dtype_parse("half"), -1);
  assert_string_equal(bs_dtype_name(BS_I64), "int64");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_error_wins),
      cmocka_unit_test(test_where_is_the_fail_line),
      cmocka_unit_test(test_names)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
