/* Offloaded but not colocated: weight sync happens while the trainer is
 * asleep and must read host copies, never the paused device memory. */
#include "bs_expect.h"
#include "bs_scenario.h"

BS_SCENARIO(steady_offload_disaggregated){
    .name = "steady-offload-disaggregated",
    .labels = "@smoke @mutant-target",
    .summary = "offload without colocate: weight sync while asleep",
    .details = "colocate=0, offload_train=1: the backup is still needed "
               "(miles #3128), and an asleep trainer's weights come from it.",
    .model = "dense",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 1,
    .sets = BS_LIST("colocate=0"),
    .targets = BS_LIST("asleep-reads-device", "offload-drops-backup"),
    .expect = bs_expect_all_ok,
    .expects = "every phase of every rank succeeds",
};
