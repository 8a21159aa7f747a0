/* What a forked run does when its parent, at the deadline, asks it to dump
 * (BS_DUMP_SIGNAL, bs_parent.h): a thread of its own waits for the signal
 * (blocked in every other thread, so no handler runs amid a rank's work),
 * writes each running rank's flight recorder and the report of where every
 * rank is as the run's artifacts, and sends the run's result (a hang, with
 * them) before the parent kills the process. The run's own result, when it
 * is ready first, wins: whichever claims the pipe writes it. */
#ifndef BS_HANGDUMP_H
#define BS_HANGDUMP_H

#include <stdbool.h>

#include "catalog/bs_scenario.h"
#include "record/bs_record.h"

/* Before any other thread starts: blocks the signal and starts the thread.
 * rec: the run's record, for its start times (its phases are the ranks'
 * and are not read). */
bs_status bs_hangdump_start(const bs_run_cfg *cfg, const bs_record *rec,
                            int fd);
/* The run's own result is ready: true when the run may write it; false
 * when a dump has begun (it ends the process). */
bool bs_hangdump_claim(void);
/* Ends the thread, once claimed. */
void bs_hangdump_stop(void);

#endif
