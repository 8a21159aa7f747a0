/* What one forked child does for one scenario run: arm, drive, judge,
 * leave artifacts when it failed, and hand its result (packed) to the
 * parent.
 * The dispatcher over the three modes, which are peers below it: every
 * rank in this process (bs_child_threads.h), this process's ranks of a
 * launcher's job (bs_child_part.h), one process per rank started here
 * (bs_child_spawn.h, which runs the part mode in each process). */
#ifndef BS_CHILD_H
#define BS_CHILD_H

#include <stdbool.h>

#include "catalog/bs_run.h"

/* A bs_run_child_fn (bs_parent.h): the result (bs_result_pack) goes to fd. The
 * scenario's expectation is checked only when the user added no fault
 * (bs_driver_user_faults): it describes the scenario's own faults, while
 * the invariants hold under any. */
int bs_child_run(const bs_run *cfg, int fd);

/* A worker's (bs_parent_opts start and keep): runs share it, and its
 * ranks' engine processes (bs_engine_keep.h), and the slot-th worker has
 * a CPU of its own for its scheduled worlds (the slot-th it may use);
 * after a run it is kept when the run gave its result (code 0), left
 * every rank's engine stopped and no rank unwound: as a fresh child
 * would be. */
void bs_child_start(int slot);
bool bs_child_keep(int code);

#endif
