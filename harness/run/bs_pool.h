/* A pool of rank workers for process-per-rank runs (bs_run.spawn):
 * processes that the parent forks once, before any CUDA starts, and that
 * run one rank's process of run after run, so each keeps its CUDA context
 * (and loaded NCCL) across the runs of a suite or campaign instead of
 * starting one per run. A run's child hands its ranks to workers 0..n-1
 * (process p of the run is worker p; worker 0 merges, judges and writes
 * the result through a pipe the child passes it) and forwards the dump
 * signal to worker 0, which passes it on as a spawned process 0 does.
 *
 * Nothing of one run reaches the next: the driver disarms every fault,
 * mutant and trap before it arms a run's, each run has a folder of its
 * own, and a worker is kept only when the run passed (a fault it
 * contained included), the worker returned cleanly, left no process of
 * the run behind and its CUDA context is usable (bs_dev_cuda_settled);
 * every other worker of the run (one that a failure, a deadline, a crash,
 * a rank's death or a signal touched) is killed and a fresh one forked in
 * its place before the next run starts. Workers die
 * with the parent (PR_SET_PDEATHSIG), are killed on a stop signal, and
 * leave when the parent closes their channel (bs_pool_stop), writing their
 * spans (bs_span.h) as they go. Off unless BS_RANK_POOL=1, and only for
 * runs one at a time (-j 1: two runs would need the same workers). */
#ifndef BS_POOL_H
#define BS_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_fork.h"
#include "catalog/bs_run.h"
#include "run/bs_parent.h"

#define BS_POOL_MAX 64 /* workers at most: the largest run's ranks */

/* bs_parent_run, in the pool when bs_pool_wanted says so: started before
 * the runner forks any run, ended after the last. */
bs_status bs_pool_run_all(const bs_run *cfgs, size_t n, const bs_parent_opts *o,
                          bs_result *out);

/* Whether runs cfgs[0..n) one at a time (jobs) would use the pool:
 * BS_RANK_POOL=1, jobs == 1 and a run that spawns its ranks. */
bool bs_pool_wanted(const bs_run *cfgs, size_t n, int jobs);

/* In the parent, before the runner starts: forks as many workers as the
 * largest spawned run of cfgs has ranks (cfgs must outlive the pool), and
 * makes the pool the one bs_pool_run finds. BS_ERR_INTERNAL when a
 * worker cannot be forked. */
bs_status bs_pool_start(const bs_run *cfgs, size_t n);

/* In a run's child: runs cfg (one of the pool's cfgs) on the workers and
 * writes its result to fd; a bs_run_child_fn's exit status. -1: there is
 * no pool for cfg (the caller spawns its processes itself). */
int bs_pool_run(const bs_run *cfg, int fd);

/* In the parent as run `job` ended (out: how its child ended): waits
 * (bounded) for each of its workers' word, keeps those that say they are
 * clean (the run passed, the process returned its result and is as a
 * fresh one) after a child that exited, and replaces the others. When worker 0
 * died of a signal and the run left no result, *out says so, as a spawned
 * process 0's death would. Does nothing without a pool. */
void bs_pool_after(size_t job, bs_job_out *out);

/* Ends every worker: asked to leave (closed channel), killed past a
 * bound, or at once after a stop signal; removes the pool's folder. */
void bs_pool_stop(void);

#endif
