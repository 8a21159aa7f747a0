/* Inside `analyze` (bs_dumps_report.h): the report's lines about the
 * wait-for graph, each "  ...\n": a root, a held group's chain of waits, an
 * order deadlock, what the dumps cannot tell; and the cause in a sentence. */
#ifndef BS_DUMPS_LINES_H
#define BS_DUMPS_LINES_H

#include "bs_buf.h"
#include "bs_dumps_wait.h"

/* Global ranks as the blocks write them ("0-2,4-6"; caller frees). */
char *bs_dumps_lines_ranks(const bs_dumps_graph *g, const int *ranks, int n);

/* "rank 5 skipped all_reduce #2 of process group 3 (mesh_dp) and went on
 * into all_reduce #2 of process group 0 (default_pg)" */
void bs_dumps_lines_root(const bs_dumps_graph *g, const bs_dumps_root *r,
                         bs_buf *b);
/* The cause: every root, or the order deadlock, or the matched op. */
void bs_dumps_lines_cause(const bs_dumps_graph *g, bs_buf *b);
/* A line per root (and its call site), per held group (at most max, then
 * their number), per cycle, per thing not known. */
void bs_dumps_lines_roots(const bs_dumps_graph *g, bs_buf *b);
void bs_dumps_lines_held(const bs_dumps_graph *g, size_t max, bs_buf *b);
void bs_dumps_lines_cycles(const bs_dumps_graph *g, bs_buf *b);
void bs_dumps_lines_unknown(const bs_dumps_graph *g, bs_buf *b);

#endif
