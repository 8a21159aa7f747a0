/* The end of a run whose processes its child started (bs_child_spawn.h),
 * in process 0: what the spawn mode and the part mode's dump both do. */
#ifndef BS_CHILD_PROCS_H
#define BS_CHILD_PROCS_H

#include <stdbool.h>
#include <sys/types.h>

/* The run's end in process 0: waits for the processes it started (pids, n,
 * 0 for none; killed after 5 s, or at once with kill_now: a dump that has
 * what they could give), then removes the run's folder dir. */
void bs_child_procs_end(pid_t *pids, int n, const char *dir, bool kill_now);

#endif
