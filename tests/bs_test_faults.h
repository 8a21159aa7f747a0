/* Tests that need fault points: in a build without them (BS_FIU=OFF) they
 * are skipped with the reason, not failed and not left out silently.
 * Header-only test support; include after cmocka.h.
 *
 *   static void test_x(void **state) { BS_TEST_NEEDS_FAULTS(); ... }
 *
 * A test whose body calls libfiu itself (fiu_enable) cannot compile
 * without it: keep it under #ifdef FIU_ENABLE and give the #else branch
 * BS_TEST_SKIP_WITHOUT_FAULTS(test_x), so the test list stays the same. */
#ifndef BS_TEST_FAULTS_H
#define BS_TEST_FAULTS_H

#include <stdint.h>

#include "bs_fault_control.h"
#include "bs_fault_parse.h"

#ifdef FIU_ENABLE
#define BS_TEST_NEEDS_FAULTS() ((void)0)
#else
#define BS_TEST_NEEDS_FAULTS()                                                 \
  do {                                                                         \
    print_message("skip: needs fault points (built with BS_FIU=OFF)\n");       \
    skip();                                                                    \
  } while (0)
#endif

/* Arms a fault from its text: the planner parses a run's specs once
 * (bs_run.h), a test gives them as text. */
static inline bs_status bs_test_arm(const char *text, uint64_t seed) {
  bs_fault_spec s;
  bs_status st = bs_fault_spec_parse(text, &s);
  return st == BS_OK ? bs_fault_arm(&s, seed) : st;
}

#define BS_TEST_SKIP_WITHOUT_FAULTS(name)                                      \
  static void name(void **state) {                                             \
    (void)state;                                                               \
    BS_TEST_NEEDS_FAULTS();                                                    \
  }

#endif
