/* The precision-aware optimizer with CPU offload: restore replays the
 * HybridDeviceOptimizer's two copy-back maps (host wins on overlap). */
#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

BS_SCENARIO(hdo_replay){
    .name = "hdo-replay",
    .labels = "@smoke",
    .summary = "MainCast with the precision-aware optimizer and CPU offload",
    .details =
        "MainCast (rematerialize=1) with ci_test, the precision-aware "
        "optimizer and optimizer CPU offload on the dense model "
        "(HybridDeviceOptimizer: part of each master shard on the host); no "
        "fault.\n"
        "Steps: restore rebuilds the params by replaying both copy-back "
        "maps, host masters first, then device fp32 masters for views not "
        "yet written (on overlap the host wins), checked by SHA256.\n"
        "Expects: every phase of every rank succeeds.",
    .model = "dense",
    .sets = BS_LIST("rematerialize=1", "ci_test=1",
                    "precision_aware_optimizer=1", "optimizer_cpu_offload=1"),
    .expect = bs_expect_all_ok,
    .expects = "every phase of every rank succeeds",
};
