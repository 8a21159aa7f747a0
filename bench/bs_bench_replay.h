/* `backstop bench --replay N`: the wall time and peak memory of replaying
 * an N-rank job's dumps (bs_bench_replay.c says which). */
#ifndef BS_BENCH_REPLAY_H
#define BS_BENCH_REPLAY_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_err.h"

typedef struct bs_bench_replay {
  int ranks;
  size_t collectives;  /* replayed, over every rank */
  double seconds;      /* reading the dumps to the report */
  size_t peak_bytes;   /* the replaying process's peak resident memory */
  double dump_seconds; /* the world that wrote the dumps, and the writing */
  char world_culprit[64], replay_culprit[64]; /* "rank 4095" */
  bool agrees; /* the replay blames whom the world's report does */
} bs_bench_replay;

bs_status bs_bench_replay_run(int ranks, bs_bench_replay *out);
/* One line for people, or a JSON object (caller frees; NULL on OOM). */
char *bs_bench_replay_text(const bs_bench_replay *r, bool json);

#endif
