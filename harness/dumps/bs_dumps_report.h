/* What a job's dumps say (`backstop analyze`): Backstop's hang report,
 * the block the framework writes (core's bs_comm_report.h), from the dumps
 * alone: which ranks are in which collective at which sequence number, who
 * is missing from the stuck one (a rank without a dump is missing, not an
 * error), the first collective whose ranks disagree and how (op, size,
 * dtype), and the culprit chosen by majority, not by file order. */
#ifndef BS_DUMPS_REPORT_H
#define BS_DUMPS_REPORT_H

#include "dumps/bs_dumps.h"

typedef enum bs_dumps_finding {
  BS_DUMPS_CLEAN = 0, /* every rank completed every collective it holds */
  BS_DUMPS_HANG,      /* some rank is stuck; the ranks agree */
  BS_DUMPS_DESYNC,    /* the ranks disagree on a collective */
} bs_dumps_finding;

/* What differs at a desync's first mismatch. */
typedef enum bs_dumps_mismatch {
  BS_DUMPS_MISMATCH_NONE = 0,
  BS_DUMPS_MISMATCH_OP,
  BS_DUMPS_MISMATCH_SIZE,
  BS_DUMPS_MISMATCH_DTYPE,
} bs_dumps_mismatch;

/* "op", "size" or "dtype" ("" for none), as the report writes it. */
const char *bs_dumps_report_mismatch_name(bs_dumps_mismatch k);

typedef struct bs_dumps_verdict {
  bs_dumps_finding finding;
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
void bs_dumps_report_verdict_free(bs_dumps_verdict *v);

#endif
