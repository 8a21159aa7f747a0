/* What a job's dumps say (`backstop analyze`): the wait-for graph over
 * every rank and every process group (bs_dumps_graph.h) as Backstop's
 * hang report. Its headline names every root (a rank that stalled before
 * an op, skipped one and went on, left no dump, or issued another op than
 * its peers) with its group and op, or the cycle of an order deadlock;
 * then the block the framework writes (core's bs_comm_report.h) for the
 * first root's group (who is in which op, who is missing), a line per
 * root, each held group as a chain of waits back to its roots, what the
 * dumps cannot tell, and the groups that completed. A desync is named at
 * its first mismatched collective with what differs (op, dtype, shape,
 * size), its culprits by majority, not by file order. The same verdict as
 * JSON (docs/hang-report.md's schema), the graph as Graphviz DOT and the
 * dumps as a Chrome trace, where asked for. */
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
  int *culprits;          /* global ranks, ascending: the roots */
  int nculprits;
  char *text;  /* the report (caller frees with the verdict) */
  char *json;  /* the verdict as JSON (docs/hang-report.md's schema) */
  char *dot;   /* the wait-for graph as DOT (when asked for) */
  char *trace; /* the dumps as a Chrome trace (when asked for) */
} bs_dumps_verdict;

bs_status bs_dumps_report(const bs_dumps *d, bs_dumps_verdict *out);

/* The same, with the graph as DOT and the dumps as a trace too. */
typedef struct bs_dumps_report_opts {
  bool dot, trace;
} bs_dumps_report_opts;
bs_status bs_dumps_report_with(const bs_dumps *d, const bs_dumps_report_opts *o,
                               bs_dumps_verdict *out);

/* Writes text whole to path (a temp file renamed over it); BS_ERR_INVALID
 * naming what (`--json FILE`) and why. */
bs_status bs_dumps_report_publish(const char *what, const char *path,
                                  const char *text);

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
