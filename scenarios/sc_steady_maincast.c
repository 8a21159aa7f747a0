/* MainCast: pinned extras only, the bf16 params rebuilt from the masters. */
#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

BS_SCENARIO(steady_maincast){
    .name = "steady-maincast",
    .labels = "@smoke @mutant-target",
    .summary = "MainCast backuper with the SHA256 check, no fault",
    .details =
        "MainCast (rematerialize=1) with ci_test on the moe model "
        "(expert-parallel buffer, fp32 param, expert_bias buffers), no "
        "fault.\n"
        "Steps: backup('actor') pins only the extras (and hashes every "
        "synced tensor at the first two backups); the param buffer stays "
        "resident through weight sync and is paused right after it; restore "
        "rebuilds it from the fp32 masters: cast, all-gather, extras "
        "copy-back, SHA256 check.\n"
        "Expects: every phase of every rank succeeds.",
    .model = "moe",
    .sets = BS_LIST("rematerialize=1", "ci_test=1"),
    .targets = BS_LIST("same-tag-skip"),
    .expect = bs_expect_all_ok,
    .expects = "every phase of every rank succeeds",
};
