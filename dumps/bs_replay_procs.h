/* A replay's world with one process per rank (bs_replay.h): what a replay
 * over NCCL needs when its ranks share a GPU (threads sharing one deadlock
 * in CUDA, docs/multi-gpu.md), and what --spawn asks for on the sim.
 *
 * Process k drives rank k in a world of one local rank, as `--rendezvous`
 * processes do: the ranks meet in a fresh folder (the NCCL unique id, the
 * sim's shared board, failure notes), a rank through its plan waits there
 * until every rank is through (as the threads of one replay do), and each
 * process sends its verdict, its world's report and its flight recorder to
 * the parent. The parent's text: the ranks grouped by verdict, then what
 * the replayed flight recorders show as `analyze` reads them (bs_dumps_report:
 * the collective, the ranks missing and the culprit by majority). */
#ifndef BS_REPLAY_PROCS_H
#define BS_REPLAY_PROCS_H

#include <stdbool.h>

#include "bs_buf.h"
#include "comm/bs_comm.h"

struct bs_dumps_verdict;

/* The bounds of a replay's waits outside collectives, for its threads and
 * its processes alike. Every rank waits this long, at most, for the others
 * to be ready for their first collective (they start one after another,
 * and the watchdog must not count that). */
#define BS_REPLAY_START_MS 60000
/* A rank through its plan waits this long beyond two watchdog timeouts
 * for the others: once it is through, the others can complete nothing more
 * (every collective needs it), so each is through or failed by its
 * watchdog within a timeout, its abort included. */
#define BS_REPLAY_DONE_SLACK_MS 10000

typedef struct bs_replay_procs {
  const bs_world_opts *wo; /* size: every rank (one process each) */
  const char *device;      /* "host" or "cuda" (rank k on GPU k mod GPUs) */
  bs_rank_fn fn;
  void **args;       /* args[k]: rank k's */
  double deadline_s; /* per process, from its fork: then it is killed */
} bs_replay_procs;

/* In a rank's process, before its first collective: returns once every
 * rank's process is there too (bounded). Elsewhere it returns at once. */
void bs_replay_procs_ready(void);

/* Appends the text to text; *status is the worst rank's (BS_OK when every
 * rank's plan completed; a process killed or crashed counts as a hang).
 * Fails only when the processes cannot be started or their results read. */
bs_status bs_replay_procs_run(const bs_replay_procs *p, bs_status *status,
                              bs_buf *text, struct bs_dumps_verdict *back);

#endif
