/* Inside `analyze`: the wait-for graph of a job's dumps, over every rank
 * and every process group. Its nodes are the stuck ops: each group's
 * first collective that not every member issued, or that a member issued
 * and did not complete, and each p2p op whose counterpart was never issued
 * (or not completed). The members that entered a stuck op wait for those
 * that did not; a missing member is
 *   - waiting in another stuck op (an edge to it),
 *   - idle: every op it issued is done (a root: it stalled),
 *   - gone: no dump, or one that does not read (a root),
 *   - past it: it issued a later op of another group without ever issuing
 *     this one, against its peers' order (bs_dumps_order.h; a root: it
 *     skipped it and went on, or swapped two),
 * and a member that issued a matched op but waits in an earlier one of
 * another group holds it up from there. The roots are where the chains
 * of waits end; a cycle of waits without one is an order deadlock. A
 * desync's roots are the ranks at its first mismatched collective
 * outside the largest group of alike ranks (bs_dumps_judge.h). */
#ifndef BS_DUMPS_GRAPH_H
#define BS_DUMPS_GRAPH_H

#include "bs_dumps_wait.h"

/* "stalled", "skipped", "no_dump", "unreadable", "mismatch". */
const char *bs_dumps_graph_kind_name(bs_dumps_root_kind k);

bs_status bs_dumps_graph_build(const bs_dumps *d, bs_dumps_graph *g);
void bs_dumps_graph_free(bs_dumps_graph *g);

/* The root of rank r, NULL when it is none. */
const bs_dumps_root *bs_dumps_graph_root_of(const bs_dumps_graph *g, int r);
/* The roots node k's waits end at: pick[r] set for each (pick holds d->ranks);
 * returns how many. */
int bs_dumps_graph_reach(const bs_dumps_graph *g, int k, bool *pick);

/* "all_reduce #2 of process group 3 (undefined)" */
void bs_dumps_graph_describe(const bs_dumps_graph *g, bs_dumps_ref at,
                             char *buf, size_t n);

#endif
