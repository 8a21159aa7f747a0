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

#endif
