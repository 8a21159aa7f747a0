/* Inside the wait-for graph (bs_dumps_graph.h): the stuck collectives of
 * groups no pg_config lists (torch 2.15's gloo) whose every member the
 * dumps name is in them. Such an op waits for a member they do not name:
 * any rank whose dump does not rule it out (bs_dumps_members_out), and
 * each of those ranks' places (the stuck op it waits in, or none: a root,
 * or no dump) is one way the wait goes on; an op that several ranks are in
 * may also hang inside itself (one of one rank has no peer to hang on, so
 * it waits for a member). A cycle of waits that every
 * choice of ways makes is kept as the graph's (an order deadlock where one
 * side never issued an op of the other's group); the rest is said as not
 * known, never guessed. */
#ifndef BS_DUMPS_UNNAMED_H
#define BS_DUMPS_UNNAMED_H

#include "bs_dumps_wait.h"

bs_status bs_dumps_unnamed_find(bs_dumps_graph *g);
/* Before the roots: where every rank has a dump and waits in a stuck op,
 * no root ends the chains of waits but one that ran past an op, so they
 * close among the stuck ops (or several each hang inside themselves at
 * once). Such an op is taken as waiting for the ranks of the one op
 * that waits for exactly its ranks (of several, the one whose group was
 * made right before or after its own): two groups of the same ranks, as
 * a loop of new_group makes a group and its gloo twin, or grad_sync and
 * metrics; the rank that issued them against its peers' order is then a
 * root, and where no side is a majority, the cycle an order deadlock.
 * Where some rank waits in none, such an op is taken as waiting for the
 * one rank it may be that waits in no stuck op (or left no dump), where
 * that rank is missing from another already (a root either way; its
 * first op then told by its peers' order). blamed: by rank, missing from
 * a stuck op. */
bs_status bs_dumps_unnamed_close(bs_dumps_graph *g, const bool *blamed);

#endif
