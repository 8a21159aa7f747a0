/* The members of a DeviceMesh's groups where no pg_config names them
 * (bs_dumps_mesh.c): a 2x2x2 mesh of 8 ranks whose dumps name one member
 * of each group. Torch 2.15 makes a dimension's lines in row-major order
 * of the other dimensions; versions that make them with swapdims(-1, dim)
 * put the last dimension first, which changes dimension 0's order. Either
 * order is told by the member the dumps name, and a grid that fits both
 * ways with other lines is left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumps/bs_dumps.h"
#include "dumps/bs_dumps_members.h"
#include "dumps/bs_dumps_mesh.h"

enum { GROUPS = 13 }; /* 12 mesh groups (names 1-12), then "13" */

static char names[GROUPS][8];

/* Group name k + 1 of the mesh (dims a, b, c: 4 lines each) holds only
 * rank named[k]; the group made after it names none. */
static void make(bs_dumps *d, const int *named) {
  static const char *desc[] = {"mesh_a", "mesh_b", "mesh_c"};
  memset(d, 0, sizeof *d);
  d->groups = calloc(GROUPS, sizeof *d->groups);
  assert_non_null(d->groups);
  d->ngroups = GROUPS;
  d->ranks = 8;
  for (int k = 0; k < GROUPS; k++) {
    bs_dump_group *g = &d->groups[k];
    snprintf(names[k], sizeof names[k], "%d", k + 1);
    g->name = names[k];
    g->desc = k < 12 ? desc[k / 4] : "undefined";
    if (k == 12)
      continue;
    g->ranks = malloc(sizeof *g->ranks);
    assert_non_null(g->ranks);
    g->ranks[0] = named[k];
    g->n = 1;
  }
}

static void unmake(bs_dumps *d) {
  for (size_t k = 0; k < d->ngroups; k++)
    free(d->groups[k].ranks);
  free(d->groups);
}

static void members_are(const bs_dumps *d, int k, int a, int b) {
  const bs_dump_group *g = &d->groups[k];
  assert_int_equal(g->n, 2);
  assert_int_equal(g->ranks[0], a);
  assert_int_equal(g->ranks[1], b);
}

/* The grid inferred from named: each row of want a group's index and
 * its two members. */
static void inferred(const int *named, const int (*want)[3], int n) {
  bs_dumps d;
  make(&d, named);
  assert_int_equal(bs_dumps_mesh_infer(&d, bs_dumps_members_add, 0), BS_OK);
  for (int i = 0; i < n; i++)
    members_are(&d, want[i][0], want[i][1], want[i][2]);
  assert_int_equal(d.groups[12].n, 0);
  unmake(&d);
}

/* Rank r = 4a + 2b + c. Dim a's lines in row-major order (b, c): {0,4},
 * {1,5}, {2,6}, {3,7}; dims b and c: {0,2}, {1,3}, {4,6}, {5,7} and
 * {0,1}, {2,3}, {4,5}, {6,7}. */
static void test_row_major(void **state) {
  (void)state;
  static const int named[12] = {4, 1, 6, 3, 0, 3, 6, 5, 1, 2, 5, 7};
  static const int want[][3] = {{1, 1, 5}, {2, 2, 6}, {5, 1, 3}, {10, 4, 5}};
  inferred(named, want, 4);
}

/* swapdims(-1, 0): dim a's lines in the order (c, b): {0,4}, {2,6},
 * {1,5}, {3,7}. */
static void test_swapped(void **state) {
  (void)state;
  static const int named[12] = {0, 6, 1, 7, 2, 1, 4, 7, 0, 3, 4, 6};
  static const int want[][3] = {{1, 2, 6}, {2, 1, 5}, {4, 0, 2}, {11, 6, 7}};
  inferred(named, want, 4);
}

/* Where the dumps name no member of dim a's middle lines, the one place
 * the two orders differ, both grids fit and give those lines other
 * members: nothing is inferred. */
static void test_either_order_left(void **state) {
  (void)state;
  static const int named[12] = {0, -1, -1, 3, 0, 1, 4, 5, 0, 2, 4, 6};
  bs_dumps d;
  make(&d, named);
  d.groups[1].n = 0;
  d.groups[2].n = 0;
  assert_int_equal(bs_dumps_mesh_infer(&d, bs_dumps_members_add, 0), BS_OK);
  assert_int_equal(d.groups[0].n, 1);
  assert_int_equal(d.groups[1].n, 0);
  assert_int_equal(d.groups[2].n, 0);
  assert_int_equal(d.groups[4].n, 1);
  unmake(&d);
}

/* Nodes of 16 ranks (the folders say so): the 8-rank grid is no whole
 * number of them, and none of 16 has 4 lines a dimension: left alone. */
static void test_whole_nodes(void **state) {
  (void)state;
  static const int named[12] = {4, 1, 6, 3, 0, 3, 6, 5, 1, 2, 5, 7};
  bs_dumps d;
  make(&d, named);
  assert_int_equal(bs_dumps_mesh_infer(&d, bs_dumps_members_add, 16), BS_OK);
  for (int k = 0; k < 12; k++)
    assert_int_equal(d.groups[k].n, 1);
  assert_int_equal(d.ranks, 8);
  unmake(&d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_row_major),
      cmocka_unit_test(test_swapped),
      cmocka_unit_test(test_either_order_left),
      cmocka_unit_test(test_whole_nodes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
