/* Inside `analyze` (bs_dumps_report.h): the wait-for graph as Graphviz
 * DOT (`analyze --graph FILE`): a box per stuck op (its group, who waits
 * in it), a node per root or range of roots of one kind at one op, an
 * arrow from each op to what it waits for (the op its missing members wait
 * in, labelled with them, or their root), the arrows of a cycle red. */
#ifndef BS_DUMPS_DOT_H
#define BS_DUMPS_DOT_H

#include "bs_dumps_wait.h"

/* Caller frees; NULL when out of memory. */
char *bs_dumps_dot_of(const bs_dumps_graph *g);

#endif
