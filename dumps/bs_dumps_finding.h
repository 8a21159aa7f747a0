/* What `analyze` finds in a process group, and what differs at a
 * desync: the words of its verdict (bs_dumps_report.h), shared with the
 * judge of one group (bs_dumps_judge.h). */
#ifndef BS_DUMPS_FINDING_H
#define BS_DUMPS_FINDING_H

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
  BS_DUMPS_MISMATCH_DTYPE, /* named even when the bytes are the same */
  BS_DUMPS_MISMATCH_SHAPE, /* as many elements, in another shape */
} bs_dumps_mismatch;

/* "op", "size", "dtype" or "shape" ("" for none), as the report writes
 * it. */
const char *bs_dumps_finding_mismatch_name(bs_dumps_mismatch k);

#endif
