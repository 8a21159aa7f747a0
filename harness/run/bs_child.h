/* What one forked child does for one scenario run: arm, drive, judge,
 * leave artifacts when it failed, and send its run object to the parent. */
#ifndef BS_CHILD_H
#define BS_CHILD_H

#include "catalog/bs_scenario.h"
#include "record/bs_record.h"
#include "verdict/bs_result.h"

/* A bs_run_child_fn (bs_parent_run.h): the run object (JSON) goes to fd. The
 * scenario's expectation is checked only when the user added no fault
 * (bs_driver_user_faults): it describes the scenario's own faults, while
 * the invariants hold under any. */
int bs_child_run(const bs_run_cfg *cfg, int fd);

/* The verdict on rec (setup: the driver's own failure, its record in
 * bs_err()); artifacts written when it is not a pass. */
void bs_child_judge(const bs_run_cfg *cfg, bs_status setup, bs_record *rec,
                    bs_result *res);

#endif
