/* Inside the wait-for graph (bs_dumps_graph.h): its roots. A desync's
 * are the ranks its judge blames at the first mismatched collective of
 * each group that has one; a hang's are the members missing from a stuck
 * op that left no dump, ran past it, or are idle, each named at the first,
 * in its own order, of the stuck ops it is missing from. */
#ifndef BS_DUMPS_ROOTS_H
#define BS_DUMPS_ROOTS_H

#include "bs_dumps_wait.h"

bs_status bs_dumps_roots_find(bs_dumps_graph *g);

#endif
