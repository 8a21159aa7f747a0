/* The process's resident anonymous pages (/proc/self/statm: resident less
 * shared, so code run the first time does not count), for tests of what
 * leaves memory unbacked: mincore counts a page that was only read (the
 * shared zero page) as resident; the resident set does not.
 * Header-only test support; include after cmocka.h. */
#ifndef BS_TEST_RSS_H
#define BS_TEST_RSS_H

#include <stdio.h>

#include "bs_test_sanitized.h"

static inline long bs_test_rss_pages(void) {
  long size = 0, rss = -1, shared = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  assert_non_null(f);
  assert_int_equal(fscanf(f, "%ld %ld %ld", &size, &rss, &shared), 3);
  fclose(f);
  return rss - shared;
}

/* Under ASan and TSan a write also backs the shadow memory it touches,
 * resident pages the process counts too: the count is exact only without
 * them, where bs_test_rss_grew checks it. */
#define BS_TEST_RSS_EXACT (!BS_TEST_SANITIZED)

/* The process's resident anonymous pages grew by `pages` since `before`. */
static inline void bs_test_rss_grew(long before, long pages) {
  if (BS_TEST_RSS_EXACT)
    assert_int_equal(bs_test_rss_pages() - before, pages);
}

#endif
