/* What a job's dumps say (`backstop analyze`): Backstop's hang report,
 * the block the framework writes (core's bs_comm_report.h), from the dumps
 * alone, per process group: which group is stuck, which of its ranks are
 * in which collective (or p2p op) at which sequence number, who is missing
 * from the stuck one (a rank without a dump is missing, not an error), the
 * first collective whose ranks disagree and how (op, size, dtype), and the
 * culprit chosen by majority, not by file order, in global ranks. The
 * group reported is the one whose culprits wait nowhere else (a rank stuck
 * in one group holds up its other groups); the others get a line each. */
#ifndef BS_DUMPS_REPORT_H
#define BS_DUMPS_REPORT_H

#include "bs_dumps.h"
#include "bs_dumps_finding.h"

typedef struct bs_dumps_verdict {
  bs_dumps_finding finding;
  char pg[64];            /* the process group it is in (its name: "0") */
  bool p2p;               /* stuck in a p2p op (stuck_seq: its p2p_seq_id) */
  uint64_t stuck_seq;     /* the collective the ranks are stuck at (0: none) */
  uint64_t mismatch_seq;  /* DESYNC: the first that differs */
  bs_dumps_mismatch kind; /* DESYNC: what differs */
  int *culprits;          /* global ranks, ascending */
  int nculprits;
  char *text; /* the report (caller frees with the verdict) */
} bs_dumps_verdict;

bs_status bs_dumps_report(const bs_dumps *d, bs_dumps_verdict *out);

/* The same from Backstop's own flight recorders as JSON, flights[k] rank
 * k's (NULL or "": it left none, so it is missing). BS_ERR_INVALID when
 * none is there or one does not read. */
bs_status bs_dumps_report_flights(const char *const *flights, int n,
                                  bs_dumps_verdict *out);
/* The same of flight recorders made on demand, rank k's by make(ctx, k)
 * (malloc'd; "" when it left none; NULL: out of memory), on any of a few
 * threads at once. */
typedef char *(*bs_dumps_flight_fn)(void *ctx, int rank);
bs_status bs_dumps_report_made(bs_dumps_flight_fn make, void *ctx, int n,
                               bs_dumps_verdict *out);
void bs_dumps_report_verdict_free(bs_dumps_verdict *v);

#endif
