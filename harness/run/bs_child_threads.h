/* A run with every rank a thread of the child (no --rendezvous, no
 * --spawn): drive, judge, hand the result to the parent. */
#ifndef BS_CHILD_THREADS_H
#define BS_CHILD_THREADS_H

#include "catalog/bs_run.h"

/* A bs_run_child_fn (bs_parent.h). */
int bs_child_threads_run(const bs_run *cfg, int fd);

#endif
