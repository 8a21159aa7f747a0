/* The process's resident anonymous pages (/proc/self/statm: resident less
 * shared, so code run the first time does not count), for tests of what
 * leaves memory unbacked: mincore counts a page that was only read (the
 * shared zero page) as resident; the resident set does not.
 * Header-only test support; include after cmocka.h. */
#ifndef BS_TEST_RSS_H
#define BS_TEST_RSS_H

#include <stdio.h>

static inline long bs_test_rss_pages(void) {
  long size = 0, rss = -1, shared = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  assert_non_null(f);
  assert_int_equal(fscanf(f, "%ld %ld %ld", &size, &rss, &shared), 3);
  fclose(f);
  return rss - shared;
}

#endif
