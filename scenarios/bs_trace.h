/* The failure artifacts of one run: each rank's flight-recorder dump and a
 * Chrome/Perfetto trace-event timeline (one track per rank: lifecycle
 * phases, and the collectives inside them). */
#ifndef BS_TRACE_H
#define BS_TRACE_H

#include "bs_buf.h"
#include "bs_record.h"
#include "bs_result.h"

/* Trace-event JSON ({"traceEvents": [...]}) of the record. */
void bs_trace_json(bs_buf *b, const bs_record *rec, const char *title);

/* Writes dir/<run>/rank<R>.flight.json and dir/<run>/trace.json, where
 * <run> names the scenario, ranks, seed and mutants, and lists them in res.
 * BS_ERR_INVALID naming the path that could not be written. */
bs_status bs_artifacts_write(const char *dir, const bs_record *rec,
                             bs_result *res);

#endif
