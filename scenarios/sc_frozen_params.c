/* Frozen params (inkling rel_proj, deepseek-v4 router weight, tid2eid) are
 * MainCast extras: eligible, and their bytes survive every cycle. */
#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

BS_SCENARIO(frozen_params){
    .name = "frozen-params",
    .labels = "@smoke @mutant-target",
    .summary = "MainCast on a model with frozen params",
    .details =
        "MainCast (rematerialize=1) with ci_test on the frozen model: "
        "inkling's rel_proj weights, deepseek-v4's frozen mlp.router.weight "
        "and int32 tid2eid table are outside every DDP buffer; no fault.\n"
        "Steps: the coverage check at init must accept them as extras "
        "(pinned, behavior.md §7.3), and every rank hands weight sync the "
        "same tensor set in the same order.\n"
        "Expects: every phase of every rank succeeds.",
    .model = "frozen",
    .sets = BS_LIST("rematerialize=1", "ci_test=1"),
    .targets = BS_LIST("frozen-not-extras", "skip-frozen-backup"),
    .expect = bs_expect_all_ok,
    .expects = "every phase of every rank succeeds",
};
