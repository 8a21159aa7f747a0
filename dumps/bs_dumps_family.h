/* Inside the dump reader (bs_dumps_members.c): the members of a loop of
 * new_group, groups no pg_config lists. A loop that splits the job's
 * ranks into groups of one size (Megatron's parallel_state makes each
 * dimension's groups so) makes the lines of one dimension of a grid:
 * group l of F holds ranks a*S*C + j*C + c (j < S) for a grid of A x S x C
 * ranks with A*C = F, l numbering (a, c) in either order. Where exactly
 * one such layout holds every member the dumps name and puts no rank in
 * a group its dump rules out (out), each group gets its line: the ranks
 * of a node whose folder was lost too. */
#ifndef BS_DUMPS_FAMILY_H
#define BS_DUMPS_FAMILY_H

#include "bs_dumps.h"

/* Groups [from, to) of d->groups, named one after another; out[i *
 * d->ranks + r]: rank r's dump rules out group from + i. False: no
 * memory. */
bool bs_dumps_family_fill(bs_dumps *d, size_t from, size_t to, const bool *out);

#endif
