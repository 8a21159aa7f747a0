/* The benches that run `backstop` itself (or torchrun) as a child: --detect
 * and --scale-ranks. */
#ifndef BS_BENCH_EXEC_H
#define BS_BENCH_EXEC_H

#include <sys/resource.h>

#include "bs_buf.h"
#include "bs_json.h"

/* Runs argv with env added to this process's; its stdout in *out, or
 * dropped when out is NULL; its resource use (wait4: the peak memory of it
 * and the children it reaped, as /usr/bin/time -v) in *ru when not NULL.
 * Returns the exit status, or -1 (killed by a signal, or not started). */
int bs_bench_exec(char *const argv[], char *const env[], bs_buf *out,
                  struct rusage *ru);

/* This program's path (/proc/self/exe), or "backstop". */
const char *bs_bench_exec_self(void);

/* "name: detail" of the first failed oracle of a run of `backstop run
 * --json` (one of its "runs"), else its note; valid until the next call. */
const char *bs_bench_exec_failed_oracle(const bs_json *run);

#endif
