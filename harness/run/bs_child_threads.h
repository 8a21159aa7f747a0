/* A run with every rank a thread of the child (no --rendezvous, no
 * --spawn): drive, judge, hand the result to the parent. */
#ifndef BS_CHILD_THREADS_H
#define BS_CHILD_THREADS_H

#include <sched.h>
#include <stdbool.h>

#include "catalog/bs_run.h"

/* A bs_run_child_fn (bs_parent.h). */
int bs_child_threads_run(const bs_run *cfg, int fd);
/* The CPUs the runs from now on may use beside their world's (NULL:
 * none): a large world's digests are hashed there (bs_hasher.h). */
void bs_child_threads_spare(const cpu_set_t *cpus);
/* Whether the last run left the process as it found it: no rank unwound
 * by a paused read (its actor, and its device's memory, left as they
 * were). */
bool bs_child_threads_clean(void);

#endif
