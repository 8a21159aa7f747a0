/* The hang/desync report block, as the world writes it (bs_world_report)
 * and as `backstop analyze` writes it from a job's dumps: one line for the
 * failure, its cause, the ranks grouped by where they are ("ranks 0-6:
 * all_gather #12 (4096 x bf16)"), who is missing from the stuck collective,
 * and whom to blame: when the ranks in it differ, those outside the largest
 * group of alike ranks (by majority, not by rank order), else those
 * missing from it. */
#ifndef BS_COMM_REPORT_H
#define BS_COMM_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "comm/bs_comm.h"

#define BS_REPORT_DESC 200

/* Where one rank is. */
typedef struct bs_report_rank {
  bool in_coll;              /* waits in collective #seq */
  uint64_t seq;              /* in_coll: which */
  uint64_t last_seq;         /* the last collective it completed */
  char desc[BS_REPORT_DESC]; /* "all_gather #12 (4 x bf16)", "exited ..." */
} bs_report_rank;

typedef struct bs_report_block {
  const char *status; /* "desync", "timeout", ... */
  const char
      *source; /* in the first line's brackets: "10 ranks, sim backend" */
  const char *cause;
  int n, first_rank;  /* ranks[i] is rank first_rank + i ... */
  int world;          /* ranks of the job, when more than n (else 0) */
  const int *rank_of; /* ... or rank_of[i] (ascending), when not NULL */
  const bs_report_rank *ranks;
  /* NULL: blamed as bs_report_block_culprits says of the stuck collective;
   * else these n flags, and why (one line). */
  const bool *culprit;
  const char *culprit_why;
  const char *tail; /* lines after the block ("  ...\n" each), or NULL */
} bs_report_block;

/* "rank 3", "ranks 0-6,9" or "ranks 1,3,...,13" (a step other than one,
 * over five ranks or more): the ranks i of 0..n-1 with pick[i] set, as
 * the blocks write them (caller frees; NULL when out of memory). */
char *bs_report_block_ranks(const bool *pick, int n);

/* The block as text (caller frees; NULL when out of memory). */
char *bs_report_block_format(const bs_report_block *b);

/* Whom to blame for one collective, given what each of n ranks does in it
 * (desc[i] NULL: rank i, numbered as in bs_report_block, is not in it):
 * when the descriptions
 * differ, every rank outside the largest group of alike ones (a tie goes
 * to the group with the lowest rank); else every rank not in it. Sets
 * culprit[i], writes why ("against the majority: ranks 0-6 in ...") and
 * returns how many it blames. seq: the collective's number, for why. */
int bs_report_block_culprits(const char *const *desc, int n, int first_rank,
                             const int *rank_of, uint64_t seq, bool *culprit,
                             char *why, size_t why_n);

/* A running world's block now (a dump asked for from outside while its
 * ranks run: bs_world_running.h): where every rank is, with why as the
 * cause (caller frees; NULL when out of memory). */
char *bs_comm_report_now(const bs_world *w, const char *why);
/* Where the world's waits stand against its watchdog now (a run at its
 * deadline): the longest any local rank has waited in a collective (< 0:
 * none waits in one), the watchdog's timeout, whether the world failed. */
typedef struct bs_world_waits {
  double longest_ms;
  int timeout_ms;
  bool failed;
} bs_world_waits;
bs_world_waits bs_comm_report_waits(const bs_world *w);

#endif
