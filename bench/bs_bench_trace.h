/* The trace rules (tests/test_trace.c's, what Perfetto keeps whole): a
 * Chrome trace of `analyze --trace` is JSON with traceEvents, each "X"
 * slice's ts and dur whole tenths of a microsecond and not negative, and
 * no slice of a track (pid, tid) partly overlapping another. */
#ifndef BS_BENCH_TRACE_H
#define BS_BENCH_TRACE_H

#include <stdbool.h>
#include <stddef.h>

/* false with why (a line) where text breaks a rule. */
bool bs_bench_trace_ok(const char *text, char *why, size_t n);

#endif
