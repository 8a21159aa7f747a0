/* The precision-aware optimizer with CPU offload: restore replays the
 * HybridDeviceOptimizer's two copy-back maps (host wins on overlap). */
#include "bs_expect.h"
#include "bs_scenario.h"

BS_SCENARIO(hdo_replay){
    .name = "hdo-replay",
    .labels = "@smoke",
    .summary = "MainCast with the precision-aware optimizer and CPU offload",
    .details = "precision_aware_optimizer=1, optimizer_cpu_offload=1: part "
               "of each master shard lives on the host; restore rebuilds the "
               "params from both maps, checked by SHA256.",
    .model = "dense",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 1,
    .sets = BS_LIST("rematerialize=1", "ci_test=1",
                    "precision_aware_optimizer=1", "optimizer_cpu_offload=1"),
    .expect = bs_expect_all_ok,
    .expects = "every phase of every rank succeeds",
};
