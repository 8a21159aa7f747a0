/* base's shared helpers: the growable array, the number readers and the
 * JSON writer (every report's bytes go through it: the suites compare
 * them; here its edges). */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_err.h"
#include "bs_json_write.h"
#include "bs_num.h"
#include "bs_pages.h"
#include "bs_vec.h"

static void test_vec_push_grows(void **state) {
  (void)state;
  int *a = NULL;
  size_t n = 0, cap = 0;
  for (int i = 0; i < 1000; i++)
    assert_int_equal(bs_vec_push(&a, &n, &cap, &i, sizeof i, "ints"), BS_OK);
  assert_int_equal(n, 1000);
  assert_true(cap >= n && cap < 2 * n);
  for (int i = 0; i < 1000; i++)
    assert_int_equal(a[i], i);
  free(a);
}

static void test_vec_exact_and_append(void **state) {
  (void)state;
  long *a = NULL;
  size_t n = 0;
  const long more[3] = {7, 8, 9};
  assert_int_equal(bs_vec_append(&a, &n, NULL, more, 3, sizeof *a, "longs"),
                   BS_OK);
  assert_int_equal(bs_vec_append(&a, &n, NULL, more, 0, sizeof *a, "longs"),
                   BS_OK);
  assert_int_equal(n, 3);
  assert_int_equal(a[2], 9);
  free(a);
}

static void test_vec_overflow(void **state) {
  (void)state;
  char *a = NULL;
  size_t cap = 0;
  assert_false(bs_vec_grow(&a, &cap, SIZE_MAX / 2, 4));
  assert_null(a);
  assert_int_equal(cap, 0);
  assert_int_equal(bs_vec_reserve(&a, &cap, SIZE_MAX / 2, 4, "huge"),
                   BS_ERR_NOMEM);
  assert_non_null(strstr(bs_err()->message, "huge: out of memory"));
  bs_err_clear();
}

static void test_num(void **state) {
  (void)state;
  long v = -1;
  int i = -1;
  double d = -1;
  assert_true(bs_num_long("0", 0, 5, &v) && v == 0);
  assert_true(bs_num_int("42", 1, 42, &i) && i == 42);
  const char *bad[] = {"", "+4", " 4", "010", "4 ", "-1", "0x1", "4.0", NULL};
  for (int k = 0; bad[k]; k++)
    assert_false(bs_num_long(bad[k], -10, 10, &v));
  assert_false(bs_num_long(NULL, 0, 1, &v));
  assert_false(bs_num_int("43", 1, 42, &i));
  assert_false(bs_num_long("99999999999999999999999", 0, 1, &v));
  assert_true(bs_num_positive("0.5", 1, &d) && d == 0.5);
  assert_false(bs_num_positive("0", 1, &d));
  assert_false(bs_num_positive("nan", 1, &d));
  assert_false(bs_num_positive("2", 1, &d));
  assert_false(bs_num_positive("", 1, &d));
}

static void test_num_ull_hex(void **state) {
  (void)state;
  unsigned long long u = 0;
  assert_true(bs_num_ull("18446744073709551615", 0, ULLONG_MAX, &u) &&
              u == ULLONG_MAX);
  assert_false(bs_num_ull("18446744073709551616", 0, ULLONG_MAX, &u));
  assert_false(bs_num_ull("007", 0, 10, &u));
  assert_false(bs_num_ull("11", 0, 10, &u));
  assert_true(bs_num_hex("0xFf", &u) && u == 255);
  const char *bad[] = {"0x", "ff", "0x0x5", "0x-1", "0x 1", "0x1g", NULL};
  for (int k = 0; bad[k]; k++)
    assert_false(bs_num_hex(bad[k], &u));
  assert_false(bs_num_hex(NULL, &u));
  assert_true(u == 255);
}

/* A printf that fits the room there is, then one that does not. */
static void test_buf_printf_room(void **state) {
  (void)state;
  bs_buf b = {0};
  bs_buf_printf(&b, "%d", 12);
  char big[600];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  bs_buf_printf(&b, "<%s>", big);
  assert_int_equal(b.len, 2 + 1 + strlen(big) + 1);
  assert_int_equal(strlen(bs_buf_str(&b)), b.len);
  assert_memory_equal(bs_buf_str(&b), "12<xx", 5);
  bs_buf_free(&b);
}

/* The digit-by-digit writers print what printf prints. */
static void test_buf_numbers_as_printf(void **state) {
  (void)state;
  static const unsigned long long ns[] = {0,
                                          1,
                                          999,
                                          1000,
                                          8000,
                                          999999,
                                          1000000,
                                          1000001,
                                          123456789,
                                          4294967296ull,
                                          999999999999999ull,
                                          1000000000000000ull,
                                          18446744073709551615ull};
  static const long long ints[] = {0,
                                   7,
                                   -1,
                                   -2147483648ll,
                                   9223372036854775807ll,
                                   -9223372036854775807ll - 1};
  char want[64];
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
    bs_buf b = {0};
    bs_buf_uint(&b, ns[i]);
    bs_buf_append(&b, " ", 1);
    bs_buf_ms_of_ns(&b, ns[i]);
    snprintf(want, sizeof want, "%llu %.6f", ns[i], (double)ns[i] / 1e6);
    assert_string_equal(bs_buf_str(&b), want);
    bs_buf_free(&b);
  }
  for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
    bs_buf b = {0};
    bs_buf_int(&b, ints[i]);
    snprintf(want, sizeof want, "%lld", ints[i]);
    assert_string_equal(bs_buf_str(&b), want);
    bs_buf_free(&b);
  }
}

static void test_num_longn(void **state) {
  (void)state;
  long v = -1;
  const char *name = "rank_7.json";
  assert_true(bs_num_longn("12\n34", 2, 0, 99, &v) && v == 12);
  assert_true(bs_num_longn(name + 5, 1, 0, 9, &v) && v == 7);
  assert_false(bs_num_longn("12", 0, 0, 99, &v));
  assert_false(bs_num_longn("012", 3, 0, 99, &v));
  assert_false(bs_num_longn("1\0002", 3, 0, 999, &v));
  assert_false(bs_num_longn("123456789012345678901234567890", 30, 0, 9, &v));
  assert_false(bs_num_longn("120", 3, 0, 99, &v));
  assert_true(v == 7);
}

static void test_json_write(void **state) {
  (void)state;
  bs_buf b = {0};
  bs_json_write_str(&b, "a\"b\\c\nd\te\rf\001g");
  bs_buf_printf(&b, " ");
  bs_json_write_str(&b, NULL);
  bs_json_write_field_num(&b, ", ", "n", 3);
  bs_json_write_field_num(&b, ", ", "x", 0.25);
  bs_json_write_field_num(&b, ", ", "nan", NAN);
  bs_json_write_field_str(&b, "{", "k", "v");
  static const char *const l[] = {"x", "y", NULL};
  bs_json_write_strs(&b, l, SIZE_MAX);
  bs_json_write_strs(&b, NULL, 3);
  assert_string_equal(
      bs_buf_str(&b),
      "\"a\\\"b\\\\c\\nd\\te\\rf\\u0001g\" null, \"n\": 3, "
      "\"x\": 0.25, \"nan\": null{\"k\": \"v\"[\"x\", \"y\"][]");
  bs_buf_free(&b);
}

/* Only the whole pages inside the range go (read zero); the bytes of the
 * partial pages at its ends stay. */
static void test_pages_drop(void **state) {
  (void)state;
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  unsigned char *p = aligned_alloc(pg, 4 * pg);
  assert_non_null(p);
  memset(p, 0xAB, 4 * pg);
  bs_pages_drop(p + 100, 2 * pg);
  for (size_t i = 0; i < 4 * pg; i++)
    assert_int_equal(p[i], i >= pg && i < 2 * pg ? 0 : 0xAB);
  bs_pages_drop(p + 1, pg - 2); /* no whole page */
  assert_int_equal(p[1], 0xAB);
  free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vec_push_grows),
      cmocka_unit_test(test_vec_exact_and_append),
      cmocka_unit_test(test_vec_overflow),
      cmocka_unit_test(test_num),
      cmocka_unit_test(test_num_ull_hex),
      cmocka_unit_test(test_buf_printf_room),
      cmocka_unit_test(test_buf_numbers_as_printf),
      cmocka_unit_test(test_num_longn),
      cmocka_unit_test(test_json_write),
      cmocka_unit_test(test_pages_drop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
