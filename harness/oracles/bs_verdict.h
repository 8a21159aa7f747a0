/* From a finished run record to its result: every oracle (the scenario's
 * expectation, then each named check of the record, among them), the
 * verdict, each rank's outcome, the memory high-water marks and what became
 * of each armed fault (a pass where one never fired is vacuous, the note
 * saying which). Pure: reads the record and the run's faults only. */
#ifndef BS_VERDICT_H
#define BS_VERDICT_H

#include "oracles/bs_oracle.h"
#include "record/bs_record.h"
#include "verdict/bs_result.h"

/* expect: the scenario's own oracle, or NULL. res keeps its identity
 * fields; verdict, oracles, outcomes, memory, detect_ms and armed are
 * set. */
bs_status bs_verdict_decide(const bs_run *run, const bs_record *rec,
                            bs_expect_fn expect, bs_result *res);

#endif
