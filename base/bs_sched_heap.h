/* The scheduler's timers (bs_sched.h): at most one per task, in a binary
 * min-heap indexed by task, so a timer is set or dropped in O(log n) (a
 * wait woken before its bound drops its timer). Ties go to the lower task:
 * the order the clock wakes tasks in is the seed's, not the heap's. Any
 * ids 0..n-1 keyed by a time fit it: the replay orders a rank's ops with
 * it (dumps/bs_replay_order.c). */
#ifndef BS_SCHED_HEAP_H
#define BS_SCHED_HEAP_H

#include <stdbool.h>
#include <stdint.h>

typedef struct bs_sched_heap {
  int n;          /* timers set */
  int *task;      /* heap order */
  int *pos;       /* by task: its index in task[], -1: none */
  uint64_t *when; /* by task */
} bs_sched_heap;

bool bs_sched_heap_init(bs_sched_heap *h, int ntasks);
void bs_sched_heap_fini(bs_sched_heap *h);
/* Sets (or moves) task's timer to when. */
void bs_sched_heap_set(bs_sched_heap *h, int t, uint64_t when);
/* Drops task's timer, if any. */
void bs_sched_heap_drop(bs_sched_heap *h, int t);
/* The task of the earliest timer (-1: none) and its time. */
int bs_sched_heap_top(const bs_sched_heap *h, uint64_t *when);

#endif
