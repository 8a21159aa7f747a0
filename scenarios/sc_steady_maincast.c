/* MainCast: pinned extras only, the bf16 params rebuilt from the masters. */
#include "bs_expect.h"
#include "bs_scenario.h"

BS_SCENARIO(steady_maincast){
    .name = "steady-maincast",
    .labels = "@smoke @mutant-target",
    .summary = "MainCast backuper with the SHA256 check, no fault",
    .details = "rematerialize=1 with ci_test (the SHA256 check of the first "
               "two restores). The param buffer stays resident through "
               "weight sync, is paused right after it, and restore rebuilds "
               "it from the fp32 masters: cast, all-gather, extras copy-back.",
    .model = "moe",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 1,
    .sets = BS_LIST("rematerialize=1", "ci_test=1"),
    .targets = BS_LIST("same-tag-skip"),
    .expect = bs_expect_all_ok,
    .expects = "every phase of every rank succeeds",
};
