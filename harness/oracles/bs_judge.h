/* The judge: from a finished run record to its result (result/bs_result.h,
 * the verdict among it): every oracle (the scenario's expectation, then
 * each named check of the record, among them), the verdict, each rank's
 * outcome, the memory high-water marks and what became of each armed
 * fault (a pass where one never fired is vacuous, the note saying which).
 * Pure: reads the record and the run's faults only. */
#ifndef BS_JUDGE_H
#define BS_JUDGE_H

#include "oracles/bs_oracle.h"
#include "record/bs_record.h"
#include "result/bs_result.h"

/* expect: the scenario's own oracle, or NULL. res keeps its identity
 * fields; verdict, oracles, outcomes, memory, detect_ms and armed are
 * set. */
bs_status bs_judge(const bs_run *run, const bs_record *rec, bs_expect_fn expect,
                   bs_result *res);

#endif
