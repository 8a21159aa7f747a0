/* The verdict of a finished run, as every child mode gives it: the
 * oracles over the record, the setup's failure, the sweep's reach counts,
 * artifacts when it is not a pass. */
#ifndef BS_CHILD_JUDGE_H
#define BS_CHILD_JUDGE_H

#include "catalog/bs_run.h"
#include "record/bs_record.h"
#include "result/bs_result.h"

/* The verdict on rec (setup: the driver's own failure, its record in
 * bs_err()); artifacts written when it is not a pass. */
/* The artifacts of res could not be written (bs_err() says why): named on
 * stderr and added to its note, whatever the note said already. */
void bs_child_judge_unwritten(bs_result *res);

void bs_child_judge(const bs_run *cfg, bs_status setup, bs_record *rec,
                    bs_result *res);

#endif
