/* Ranks a node from the folders a job's dumps were read from
 * (bs_dumps_nodes.c): told only by sub-folders that are whole blocks of
 * one size, two of them or one numbered; anything else tells nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "dumps/bs_dumps.h"
#include "dumps/bs_dumps_nodes.h"

enum { MAX_DUMPS = 16 };

static bs_dumps d;
static bs_dump dumps[MAX_DUMPS];
static bs_dump_bad bad[MAX_DUMPS];

/* Dumps read from a tree of folders, one "<folder>/rank_<r>" each. */
static void add(const char *folder, int lo, int hi) {
  for (int r = lo; r <= hi; r++) {
    bs_dump *x = &dumps[d.n++];
    x->rank = r;
    snprintf(x->file, sizeof x->file, "%s%srank_%d", folder,
             folder[0] ? "/" : "", r);
  }
}

static void reset(void) {
  memset(&d, 0, sizeof d);
  memset(dumps, 0, sizeof dumps);
  d.d = dumps;
  d.bad = bad;
  d.walked = true;
}

/* Ranks a node of dumps in two folders, a's ranks lo..hi then b's. */
static int two(const char *a, int alo, int ahi, const char *b, int blo,
               int bhi) {
  reset();
  add(a, alo, ahi);
  add(b, blo, bhi);
  return bs_dumps_nodes_ranks(&d);
}

static void test_two_nodes(void **state) {
  (void)state;
  assert_int_equal(two("host-a", 0, 3, "host-b", 4, 7), 4);
  /* a node lost between them, a dead rank at another's end */
  assert_int_equal(two("n0", 0, 4, "n2", 10, 13), 5);
}

static void test_unreadable_counts(void **state) {
  (void)state;
  reset();
  add("node0", 0, 2);
  add("node1", 4, 7);
  bad[0].rank = 3;
  snprintf(bad[0].file, sizeof bad[0].file, "node0/rank_3");
  d.nbad = 1;
  assert_int_equal(bs_dumps_nodes_ranks(&d), 4);
}

static void test_one_folder(void **state) {
  (void)state;
  reset();
  add("node0", 0, 9);
  assert_int_equal(bs_dumps_nodes_ranks(&d), 10);
  reset();
  add("gathered/NODE-1", 10, 19);
  assert_int_equal(bs_dumps_nodes_ranks(&d), 10);
  reset(); /* where the dumps were put, not a node */
  add("dumps", 0, 9);
  assert_int_equal(bs_dumps_nodes_ranks(&d), 0);
  reset(); /* a job's folder, its last rank dead: not nodes of 7 */
  add("job1234", 0, 6);
  assert_int_equal(bs_dumps_nodes_ranks(&d), 0);
  reset();
  add("node", 0, 6);
  assert_int_equal(bs_dumps_nodes_ranks(&d), 0);
}

static void test_not_nodes(void **state) {
  (void)state;
  assert_int_equal(two("a", 0, 3, "b", 6, 9), 0); /* b across two blocks */
  assert_int_equal(two("a", 0, 3, "", 4, 4), 0);  /* a dump beside them */
  reset(); /* three folders, two in one block of 4 */
  add("a", 0, 3);
  add("b", 4, 5);
  add("c", 6, 7);
  assert_int_equal(bs_dumps_nodes_ranks(&d), 0);
  two("a", 0, 3, "b", 4, 7); /* read from the folder itself */
  d.walked = false;
  assert_int_equal(bs_dumps_nodes_ranks(&d), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_nodes),
      cmocka_unit_test(test_unreadable_counts),
      cmocka_unit_test(test_one_folder),
      cmocka_unit_test(test_not_nodes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
