/* `backstop replay`: each rank's ops from a job's dumps, replayed on a
 * world of as many ranks (the sim communicator by default, or the backend
 * named) with the recorded ops, counts and dtypes, real bytes, through the
 * fingerprint check and the watchdog: every process group of the dumps on
 * a sub-communicator of its members (the default one on the world's),
 * p2p ops with their peers (a batch as one call; lone ops in a row, as
 * isend and irecv, issued together and completing apart), a coalesced op as one
 * collective (numbered as analyze numbers it). The world's own report is
 * the result: it names the same group, op and culprit as `analyze`, and
 * so do its flight recorders read back. Deterministic: the same dumps give
 * the same report, times apart.
 *
 * A rank replays its ops in the order it made them across its groups,
 * each group's collectives from the first sequence number every dump of
 * it holds, less those every member's dump shows done alike (all but the
 * last of them: they hold nothing of the hang), then stays outside any op
 * until every rank is done, as a rank busy elsewhere would. A rank that
 * left no dump replays what its groups' dumps show completed (a collective
 * completes only once every member has joined it) and the other side of
 * completed p2p ops with it, then stays out. The stuck op is issued like
 * the others: the world finds the hang or the desync again; a replay that
 * completes what a dump shows not done says it did not reproduce it
 * (never an all-clear). Every wait outside a collective is bounded, and a
 * signal (bs_stop.h) ends the replay and everything it started. */
#ifndef BS_REPLAY_H
#define BS_REPLAY_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_dumps.h"

#define BS_REPLAY_TIMEOUT_MS 1000
#define BS_REPLAY_MAX_BYTES ((size_t)1 << 30)

typedef struct bs_replay_opts {
  const char *backend; /* "sim" (NULL) or "nccl" */
  const char *device;  /* "host" (NULL) or "cuda" */
  int timeout_ms;      /* the watchdog's; 0: BS_REPLAY_TIMEOUT_MS */
  /* Bytes every rank's buffers may take at once; above it counts are
   * replaced, each distinct count by a distinct smaller one (what the
   * fingerprint compares keeps its equalities). 0: BS_REPLAY_MAX_BYTES. */
  size_t max_bytes;
  /* What the machine can give the buffers once counts are replaced (a
   * world of thousands of ranks needs more than max_bytes even then: an
   * all_gather's output and a reduce_scatter's input are ranks x count
   * each); 0: max_bytes. Above the larger of the two the replay is
   * refused. */
  size_t room_bytes;
  /* One process per rank (bs_replay_procs.h): for NCCL ranks that share a
   * GPU, or asked for (--spawn). The text then groups the ranks by verdict
   * and reads the replayed flight recorders as `analyze` does. */
  bool procs;
  /* > 0: the replay ends once every rank is through its plan or in its
   * last op and none has moved for this long (no rank can move: what
   * waits then waits for ever), instead of waiting out the watchdog;
   * threads only; on a scheduled world (schedule) that moment is known
   * exactly, and any settle_ms > 0 asks for it. */
  int settle_ms;
  /* How a world of threads runs its ranks (bs_world_opts.schedule):
   * "random" or "pct:D", one at a time on virtual time from schedule_seed,
   * or "threads"; NULL: BS_SCHEDULE's, else threads. A process per rank
   * and nccl run real threads whatever it says. */
  const char *schedule;
  uint64_t schedule_seed;
} bs_replay_opts;

typedef struct bs_replay_result {
  /* BS_OK when nothing failed and the dumps show no hang and no desync;
   * the world's failure, else BS_ERR_STATE where the dumps show one the
   * replay did not reproduce. */
  bs_status status;
  /* What was replayed, the world's report, its flight recorders read back
   * as analyze reads them, and the verdict: the read-back's where it names
   * the roots analyze names in the dumps (reproduced), else the dumps'. */
  char *text;
  char *json;      /* that verdict as analyze --json writes it, with
                      "reproduced" */
  char *back_json; /* the read-back's own verdict (NULL: none read) */
  bool reproduced;
  bool scaled; /* counts were replaced (listed in text) */
  int ranks;
  size_t collectives; /* replayed, over every rank */
} bs_replay_result;

/* BS_ERR_INVALID for a dump it cannot replay (an op or dtype the
 * communicator has not, naming rank, collective and what), or a world it
 * cannot build (the backend's error). */
bs_status bs_replay_run(const bs_dumps *d, const bs_replay_opts *o,
                        bs_replay_result *out);
void bs_replay_result_free(bs_replay_result *r);

#endif
