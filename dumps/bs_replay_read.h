/* The replayed flight recorders read back (bs_replay_read.c). */
#ifndef BS_REPLAY_READ_H
#define BS_REPLAY_READ_H

#include <stdbool.h>

#include "bs_buf.h"
#include "bs_dumps_report.h"
#include "comm/bs_comm.h"

/* The replayed flight recorders (flights[k] rank k's JSON, NULL: none),
 * read as `analyze` reads a job's dumps, appended to text; culprit_first:
 * their culprit line before them, as the world's report of one process of
 * threads has it (the processes' own reports cannot: each knows only its
 * rank). Their verdict in *back (empty when they do not read). */
bs_status bs_replay_read_back(const char *const *flights, int n,
                              bool culprit_first, bs_buf *text,
                              bs_dumps_verdict *back);

/* Every rank's flight recorder of w, read back so (written and read on a
 * few threads at once: thousands of ranks). */
bs_status bs_replay_read_world(bs_world *w, int n, bs_buf *text,
                               bs_dumps_verdict *back);

#endif
