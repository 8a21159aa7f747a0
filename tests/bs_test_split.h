/* A test file's cases in two ctest tests: the cases that wait in real
 * time (a real-time guard or deadline) or are campaigns of many runs go
 * to a test of their own, NAME_slow, with a label of its own (slow or
 * repeat: tests/CMakeLists.txt, bs_test_split()); NAME runs the others.
 * BS_TEST_SPLIT (set by ctest): "rest" runs the cases not listed, "listed"
 * runs only those; unset (a test run by hand), every case runs. A listed
 * name that is no case of the file fails the run. Header-only test
 * support; include after cmocka.h.
 *
 *   static const char *const listed[] = {"test_x", NULL};
 *   return BS_TEST_RUN_SPLIT(tests, listed, setup, teardown);
 */
#ifndef BS_TEST_SPLIT_H
#define BS_TEST_SPLIT_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline bool bs_test_listed(const char *name, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(*list, name))
      return true;
  return false;
}

/* The first name of list that is no case of tests, or NULL. */
static inline const char *bs_test_unknown(const struct CMUnitTest *tests,
                                          size_t n, const char *const *list) {
  for (; *list; list++) {
    size_t i = 0;
    while (i < n && strcmp(tests[i].name, *list))
      i++;
    if (i == n)
      return *list;
  }
  return NULL;
}

static inline int bs_test_run_split(const char *group,
                                    const struct CMUnitTest *tests, size_t n,
                                    const char *const *list,
                                    CMFixtureFunction setup,
                                    CMFixtureFunction teardown) {
  const char *bad = bs_test_unknown(tests, n, list);
  if (bad) {
    fprintf(stderr, "bs_test_split: %s is no test of %s\n", bad, group);
    return 1;
  }
  const char *mode = getenv("BS_TEST_SPLIT");
  bool listed = mode && !strcmp(mode, "listed");
  bool rest = mode && !strcmp(mode, "rest");
  struct CMUnitTest *kept = calloc(n, sizeof *kept);
  if (!kept)
    return 1;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    bool in = bs_test_listed(tests[i].name, list);
    if (!(listed && !in) && !(rest && in))
      kept[k++] = tests[i];
  }
  int rc = _cmocka_run_group_tests(listed ? "listed" : group, kept, k, setup,
                                   teardown);
  free(kept);
  return rc;
}

#define BS_TEST_RUN_SPLIT(tests, list, setup, teardown)                        \
  bs_test_run_split(#tests, tests, sizeof tests / sizeof *tests, list, setup,  \
                    teardown)

#endif
