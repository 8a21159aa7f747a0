/* Frozen params (inkling rel_proj, deepseek-v4 router weight, tid2eid) are
 * MainCast extras: eligible, and their bytes survive every cycle. */
#include "bs_expect.h"
#include "bs_scenario.h"

BS_SCENARIO(frozen_params){
    .name = "frozen-params",
    .labels = "@smoke @mutant-target",
    .summary = "MainCast on a model with frozen params",
    .details = "The frozen preset under rematerialize=1: frozen params are "
               "outside the DDP buffers, so they must be backed up as extras "
               "and handed to weight sync by every rank alike.",
    .model = "frozen",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 1,
    .sets = BS_LIST("rematerialize=1", "ci_test=1"),
    .targets = BS_LIST("frozen-not-extras", "skip-frozen-backup"),
    .expect = bs_expect_all_ok,
    .expects = "every phase of every rank succeeds",
};
