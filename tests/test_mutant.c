#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "bs_mutant.h"

/* docs/behavior.md §8, in enum order. */
static const char *const spec_names[BS_MUT_COUNT] = {
    "pause-not-in-finally",  "local-hash-raise",
    "skip-frozen-backup",    "frozen-not-extras",
    "same-tag-skip",         "asleep-reads-device",
    "offload-drops-backup",  "lora-double-backup",
    "disk-offload-accepted", "free-paused-double-release",
    "check-window-cleared",  "failure-before-ready",
};

static int reset(void **state) {
  (void)state;
  bs_mutant_reset();
  return 0;
}

static void test_names_round_trip(void **state) {
  (void)state;
  for (int m = 0; m < BS_MUT_COUNT; m++) {
    assert_string_equal(bs_mutant_name(m), spec_names[m]);
    assert_int_equal(bs_mutant_parse(spec_names[m]), m);
    assert_true(strlen(bs_mutant_origin(m)) > 0);
    assert_true(strlen(bs_mutant_effect(m)) > 0);
  }
  assert_string_equal(bs_mutant_origin(BS_MUT_SKIP_FROZEN_BACKUP),
                      "miles #2223, commit b396e1f (reverted)");
}

static void test_parse_unknown(void **state) {
  (void)state;
  assert_int_equal(bs_mutant_parse("pause-not-in-finaly"), -1);
  assert_int_equal(bs_mutant_parse(""), -1);
  assert_int_equal(bs_mutant_parse(NULL), -1);
  assert_int_equal(bs_mutant_parse("PAUSE-NOT-IN-FINALLY"), -1);
  assert_string_equal(bs_mutant_name(BS_MUT_COUNT), "unknown");
  assert_string_equal(bs_mutant_name((bs_mutant)-1), "unknown");
}

static void test_default_off_set_reset(void **state) {
  (void)state;
  for (int m = 0; m < BS_MUT_COUNT; m++)
    assert_false(bs_mutant_on(m));
  bs_mutant_set(BS_MUT_SAME_TAG_SKIP, true);
  for (int m = 0; m < BS_MUT_COUNT; m++)
    assert_int_equal(bs_mutant_on(m), m == BS_MUT_SAME_TAG_SKIP);
  bs_mutant_set(BS_MUT_LORA_DOUBLE_BACKUP, true);
  bs_mutant_set(BS_MUT_SAME_TAG_SKIP, false);
  assert_false(bs_mutant_on(BS_MUT_SAME_TAG_SKIP));
  assert_true(bs_mutant_on(BS_MUT_LORA_DOUBLE_BACKUP));
  bs_mutant_set(BS_MUT_COUNT, true); /* out of range: ignored */
  assert_false(bs_mutant_on(BS_MUT_COUNT));
  bs_mutant_reset();
  for (int m = 0; m < BS_MUT_COUNT; m++)
    assert_false(bs_mutant_on(m));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_names_round_trip, reset, reset),
      cmocka_unit_test_setup_teardown(test_parse_unknown, reset, reset),
      cmocka_unit_test_setup_teardown(test_default_off_set_reset, reset, reset),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
