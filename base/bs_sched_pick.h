/* The scheduler's choice among its runnable tasks (bs_sched.h): a seeded
 * random one, or PCT's highest priority. Both read the set through a
 * Fenwick tree (by task, or by priority), so a choice costs O(log n) and
 * depends on the set and the seed only. Internal to the scheduler. */
#ifndef BS_SCHED_PICK_H
#define BS_SCHED_PICK_H

#include <stdbool.h>
#include <stdint.h>

#include "bs_sched_spec.h"

typedef struct bs_sched_pick bs_sched_pick;

bs_status bs_sched_pick_create(int ntasks, const bs_sched_spec *spec,
                               bs_sched_pick **out);
void bs_sched_pick_destroy(bs_sched_pick *p);
/* Task joins (true) or leaves the runnable set; a no-op when it is (not)
 * there already. */
void bs_sched_pick_set(bs_sched_pick *p, int task, bool runnable);
int bs_sched_pick_count(const bs_sched_pick *p);
/* The next task to run (the set must not be empty); step: the decision's
 * number, 1 first; last: the task that ran before it (-1: none), whose
 * priority PCT lowers at a change point. */
int bs_sched_pick_next(bs_sched_pick *p, uint64_t step, int last);

#endif
