/* Inside `analyze` (bs_dumps_report.h): a job's dumps as a Chrome /
 * Perfetto trace (`analyze --trace FILE`): a process per rank, a thread in
 * it per process group, each op a slice from its start (or its creation:
 * gloo writes no other time) to its completion (or the next op's creation
 * on that track, which it cannot outlast), a stuck op open to the last time
 * the dumps hold; each root marked at its last op. Times are microseconds
 * from the first op of the job, in whole tenths. */
#ifndef BS_DUMPS_TRACE_H
#define BS_DUMPS_TRACE_H

#include "bs_dumps_wait.h"

/* Caller frees; NULL when out of memory. */
char *bs_dumps_trace_of(const bs_dumps_graph *g);

#endif
