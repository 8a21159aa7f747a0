/* From a finished run record to its result: every oracle (the scenario's
 * expectation, then each named check of the record, among them), the
 * verdict, each rank's outcome and the memory high-water marks. Pure: reads
 * the record only. */
#ifndef BS_VERDICT_H
#define BS_VERDICT_H

#include "record/bs_record.h"
#include "report/bs_result.h"

/* expect: the scenario's own oracle, or NULL. res keeps its identity
 * fields; verdict, oracles, outcomes, memory and detect_ms are set. */
bs_status bs_verdict_decide(const bs_record *rec, bs_expect_fn expect,
                            bs_result *res);

#endif
