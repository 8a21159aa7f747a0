/* Inside `analyze` (bs_dumps_report.h): one process group judged on its
 * own (bs_dumps_judge: its collectives, bs_dumps_p2p: its p2p ops), then
 * the groups put together by bs_dumps_report. */
#ifndef BS_DUMPS_JUDGE_H
#define BS_DUMPS_JUDGE_H

#include "bs_dumps.h"
#include "bs_dumps_finding.h"
#include "comm/front/bs_comm_report.h"

/* One group as its members' dumps show it. */
typedef struct bs_dumps_view {
  const bs_dumps *d;
  int g;                 /* in d->groups */
  int n;                 /* members */
  const int *members;    /* global ranks, by group rank */
  const bs_dump **dump;  /* by group rank; NULL: no dump */
  const bs_dump_pg **pg; /* its entries of the group; NULL: none */
  int dumps;             /* members with a dump */
  /* Set by the report for the group it shows (NULL: the judge's own):
   * where each member that is in no op of this group waits instead ("all_
   * reduce #2 of process group 5"), the cause, and (quiet) no culprit
   * line: the report names the roots of every group itself. */
  const char *const *where;
  const char *cause;
  bool quiet;
} bs_dumps_view;

/* What one group's judge found. */
typedef struct bs_dumps_gres {
  bs_dumps_finding finding;
  bool p2p;               /* the stuck op is a p2p op */
  uint64_t seq;           /* the stuck (or first mismatched) op's */
  bs_dumps_mismatch kind; /* a desync's */
  bool *culprit;          /* by group rank */
  bool *waiting;          /* by group rank: waits in the stuck op */
  /* HANG only because members left no dump while every other member's
   * every op is done (a hang at the group's last op, blamed on them: what
   * they did after it is not known). */
  bool dumpless;
  char *text;     /* the block */
  char line[512]; /* the same in one line */
} bs_dumps_gres;

/* Where a rank of the view waits in its p2p ops. */
typedef struct bs_dumps_p2p_wait {
  const bs_dump_coll *op; /* its first p2p op not done (NULL: none) */
  bool matched;           /* its peer issued the counterpart */
  int peer_i;             /* the peer's group rank (-1: not a member) */
} bs_dumps_p2p_wait;

bs_status bs_dumps_judge_view_make(const bs_dumps *d, int g, bs_dumps_view *v);
void bs_dumps_judge_view_free(bs_dumps_view *v);

/* The group's finding, culprits and text (res zeroed first). */
bs_status bs_dumps_judge(const bs_dumps_view *v, bs_dumps_gres *res);
void bs_dumps_judge_gres_free(bs_dumps_gres *res);

/* Each member's first p2p op not done (unmatched, or not completed):
 * w[i] for group rank i. */
bs_status bs_dumps_p2p_waits(const bs_dumps_view *v, bs_dumps_p2p_wait *w);
/* From member i waiting on a p2p op, the rank to blame: the peer that
 * never issued the counterpart, followed while that peer itself waits in
 * an unmatched p2p op (a cycle ends at the lowest rank of it). Writes why
 * and returns a group rank (-1: none, the ops match). */
int bs_dumps_p2p_blame(const bs_dumps_view *v, const bs_dumps_p2p_wait *w,
                       int i, char *why, size_t n);
/* "recv from rank 2, p2p #2 (8 x fp32)" */
void bs_dumps_p2p_describe(const bs_dump_coll *c, char *buf, size_t n);

/* "all_gather #11 (56974 x uint8)": a collective as the world's report
 * writes it. */
void bs_dumps_judge_describe(const bs_dump_coll *c, char *buf, size_t n);

#endif
