/* Inside the dump reader (bs_dumps_members.c): the members of a loop of
 * new_group, groups no pg_config lists. A loop that splits the job's
 * ranks into groups of one size (Megatron's parallel_state makes each
 * dimension's groups so) makes the lines of one dimension of a grid:
 * group l of F holds ranks a*S*C + j*C + c (j < S) for a grid of A x S x C
 * ranks with A*C = F, l numbering (a, c) in either order. Where exactly
 * one such layout holds every member the dumps name and puts no rank in
 * a group its dump rules out (out), each group gets its line
 * (bs_dumps_members.c): the ranks of a node whose folder was lost too. */
#ifndef BS_DUMPS_FAMILY_H
#define BS_DUMPS_FAMILY_H

#include "bs_dumps.h"

/* A layout: A x S x C ranks, each line's (a, c) numbered a-major or
 * c-major. */
typedef struct bs_dumps_family {
  int a, s, c;
  bool c_major;
} bs_dumps_family;

/* How many layouts of a loop of f groups whose first are groups [from,
 * to) of d->groups, named one after another, fit a job of w ranks (0, 1,
 * 2: several), and the one (x); out[i * w + r]: rank r's dump rules out
 * group from + i. */
int bs_dumps_family_find(const bs_dumps *d, size_t from, size_t to, int f,
                         int w, const bool *out, bs_dumps_family *x);
/* The j-th rank of line l of layout x. */
int bs_dumps_family_rank(const bs_dumps_family *x, int l, int j);

#endif
