/* A run's Chrome/Perfetto trace-event timeline: one track per rank,
 * lifecycle phases and the collectives inside them. */
#ifndef BS_TRACE_H
#define BS_TRACE_H

#include "bs_buf.h"
#include "record/bs_record.h"
#include "result/bs_result.h"

/* Trace-event JSON ({"traceEvents": [...]}) of the record. */
void bs_trace_json(bs_buf *b, const bs_record *rec, const char *title);

#endif
