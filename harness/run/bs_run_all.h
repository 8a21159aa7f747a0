/* A command's planned runs, run: the one entry point of `backstop run` and
 * `mutants` (the campaigns batch theirs: explore/bs_batch.h). Each run in
 * a forked child (bs_child.h), through the rank pool where BS_RANK_POOL=1
 * asks for it (bs_pool.h), at most jobs at a time (one at a time for NCCL
 * ranks that share a GPU: bs_nccl_plan.h), a line per run printed as it
 * ends and a progress line on stderr (bs_parent.h). */
#ifndef BS_RUN_ALL_H
#define BS_RUN_ALL_H

#include <stddef.h>
#include <stdio.h>

#include "bs_err.h"
#include "catalog/bs_run.h"
#include "result/bs_result.h"

typedef struct bs_run_all_opts {
  int jobs;
  int verbosity;     /* -1: failures only, 0: a line per run, 1: every oracle */
  FILE *out;         /* each run's line as it ends; NULL: none (a launcher's
                      * other processes) */
  const char *label; /* the progress line's: "run", "mutants" */
} bs_run_all_opts;

/* res[i] is the result of runs[i], whatever order they ended in; every run
 * gets one. Only the runner itself failing is an error. */
bs_status bs_run_all(const bs_run *runs, size_t n, const bs_run_all_opts *o,
                     bs_result *res);

/* The exit status of `backstop run` for these results: 0 all pass, else 1. */
int bs_run_all_exit_code(const bs_result *res, size_t n);

#endif
