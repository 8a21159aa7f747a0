/* The lines of a loop of new_group (bs_dumps_family.c): each group of a
 * run named one after another gets its line where exactly one layout of
 * the job's ranks holds the members the dumps name; a layout that puts a
 * rank in a group its dump rules out does not fit; two that fit leave
 * the groups alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumps/bs_dumps.h"
#include "dumps/bs_dumps_family.h"

enum { MAX_GROUPS = 8, MAX_RANKS = 16 };

static bs_dumps d;
static bs_dump_group groups[MAX_GROUPS];
static bool out[MAX_GROUPS * MAX_RANKS];

/* A run of n groups of a job of w ranks; named[k] lists group k's named
 * members, -1 ended. */
static void make(int w, int n, const int named[][MAX_RANKS]) {
  memset(&d, 0, sizeof d);
  memset(groups, 0, sizeof groups);
  memset(out, 0, sizeof out);
  d.groups = groups;
  d.ngroups = (size_t)n;
  d.ranks = w;
  for (int k = 0; k < n; k++) {
    groups[k].ranks = malloc(MAX_RANKS * sizeof(int));
    assert_non_null(groups[k].ranks);
    for (int i = 0; named[k][i] >= 0; i++)
      groups[k].ranks[groups[k].n++] = named[k][i];
  }
}

/* The one layout found: each group gets its line (as the reader gives
 * it, bs_dumps_members.c); none or several: left as they are. */
static void fill(void) {
  bs_dumps_family x;
  if (bs_dumps_family_find(&d, 0, d.ngroups, (int)d.ngroups, d.ranks, out,
                           &x) != 1)
    return;
  for (size_t k = 0; k < d.ngroups; k++) {
    groups[k].n = x.s;
    for (int j = 0; j < x.s; j++)
      groups[k].ranks[j] = bs_dumps_family_rank(&x, (int)k, j);
  }
}

static void unmake(void) {
  for (size_t k = 0; k < d.ngroups; k++)
    free(groups[k].ranks);
}

/* Group k holds exactly the n ranks listed. */
static void holds(int k, int n, ...) {
  va_list ap;
  va_start(ap, n);
  assert_int_equal(groups[k].n, n);
  for (int i = 0; i < n; i++)
    assert_int_equal(groups[k].ranks[i], va_arg(ap, int));
  va_end(ap);
}

/* 10 ranks, evens then odds (a stride of 2), ranks 0-4 without a dump. */
static void test_stride(void **state) {
  (void)state;
  static const int named[][MAX_RANKS] = {{6, 8, -1}, {5, 7, 9, -1}};
  make(10, 2, named);
  fill();
  holds(0, 5, 0, 2, 4, 6, 8);
  holds(1, 5, 1, 3, 5, 7, 9);
  unmake();
}

/* 10 ranks in pairs, the first two named by no dump. */
static void test_blocks(void **state) {
  (void)state;
  static const int named[][MAX_RANKS] = {
      {-1}, {-1}, {5, -1}, {6, 7, -1}, {8, 9, -1}};
  make(10, 5, named);
  fill();
  holds(0, 2, 0, 1);
  holds(2, 2, 4, 5);
  unmake();
}

/* 8 ranks as 2 x 2 x 2, the middle dimension's lines, the last
 * dimension's first: {0,2}, {4,6}, {1,3}, {5,7}. */
static void test_other_order(void **state) {
  (void)state;
  static const int named[][MAX_RANKS] = {{0, -1}, {4, -1}, {3, -1}, {-1}};
  make(8, 4, named);
  fill();
  holds(0, 2, 0, 2);
  holds(1, 2, 4, 6);
  holds(2, 2, 1, 3);
  holds(3, 2, 5, 7);
  unmake();
}

/* 4 ranks, 0 and 3 named: pairs {0,1},{2,3} and {0,2},{1,3} both fit,
 * until rank 2's dump rules out the first group. */
static void test_two_fit_then_one(void **state) {
  (void)state;
  static const int named[][MAX_RANKS] = {{0, -1}, {3, -1}};
  make(4, 2, named);
  fill();
  holds(0, 1, 0);
  holds(1, 1, 3);
  out[0 * 4 + 2] = true;
  fill();
  holds(0, 2, 0, 1);
  holds(1, 2, 2, 3);
  unmake();
}

/* A run that does not split the ranks evenly, or whose members no
 * layout holds, is left as it is. */
static void test_none_fits(void **state) {
  (void)state;
  static const int uneven[][MAX_RANKS] = {{0, -1}, {1, -1}, {2, -1}};
  make(10, 3, uneven);
  fill();
  holds(0, 1, 0);
  unmake();
  static const int odd[][MAX_RANKS] = {{0, 3, -1}, {1, -1}};
  make(8, 2, odd);
  fill();
  holds(0, 2, 0, 3);
  holds(1, 1, 1);
  unmake();
}

/* A loop of more groups than the dumps name: 20 ranks in blocks of 4,
 * the last two blocks named by no dump (a lost node's): 5 groups fit, 4
 * (blocks of 5) do not, nor fewer than the 3 named. */
static void test_longer_loop(void **state) {
  (void)state;
  static const int named[][MAX_RANKS] = {
      {0, 1, 2, 3, -1}, {4, 5, 6, 7, -1}, {8, 9, -1}};
  bs_dumps_family x;
  make(20, 3, named);
  assert_int_equal(bs_dumps_family_find(&d, 0, 3, 5, 20, out, &x), 1);
  assert_int_equal(bs_dumps_family_rank(&x, 2, 3), 11);
  assert_int_equal(bs_dumps_family_rank(&x, 4, 0), 16);
  assert_int_equal(bs_dumps_family_find(&d, 0, 3, 4, 20, out, &x), 0);
  assert_int_equal(bs_dumps_family_find(&d, 0, 3, 2, 20, out, &x), 0);
  unmake();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stride),
      cmocka_unit_test(test_blocks),
      cmocka_unit_test(test_other_order),
      cmocka_unit_test(test_two_fit_then_one),
      cmocka_unit_test(test_none_fits),
      cmocka_unit_test(test_longer_loop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
