/* Inside the wait-for graph (bs_dumps_graph.h): its cycles, the strongly
 * connected parts of its stuck ops (an op waits for a missing member that
 * is no root, in the op that member waits in). Where no member ran past an
 * op of it, such a cycle is an order deadlock: each side issued its op
 * first. */
#ifndef BS_DUMPS_CYCLES_H
#define BS_DUMPS_CYCLES_H

#include "bs_dumps_wait.h"

bs_status bs_dumps_cycles_find(bs_dumps_graph *g);
/* Each node's cycle (comp[k], -1: on none) without keeping them, and
 * (order, NULL: not asked) their nodes cycle by cycle; returns how many,
 * -1: no memory. */
int bs_dumps_cycles_mark(const bs_dumps_graph *g, int *comp, int *order);
/* A cycle of the graph made of nodes (copied), each node's scc set. */
bs_status bs_dumps_cycles_add(bs_dumps_graph *g, const int *nodes, int n);

#endif
