/* Offloaded but not colocated: weight sync happens while the trainer is
 * asleep and must read host copies, never the paused device memory. */
#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

BS_SCENARIO(steady_offload_disaggregated){
    .name = "steady-offload-disaggregated",
    .labels = "@smoke @mutant-target",
    .summary = "offload without colocate: weight sync while asleep",
    .details =
        "Offload without colocate (colocate=0, offload_train=1) on the "
        "dense model, Normal backuper, no fault: the backup is still needed "
        "(miles #3128), and weight sync runs while the trainer is asleep.\n"
        "Steps: as steady-normal, but get_actor_weights of an asleep "
        "trainer must come from the backuper's pinned copies, never from "
        "the paused device memory.\n"
        "Expects: every phase of every rank succeeds.",
    .model = "dense",
    .sets = BS_LIST("colocate=0"),
    .targets = BS_LIST("asleep-reads-device", "offload-drops-backup"),
    .expect = bs_expect_all_ok,
    .expects = "every phase of every rank succeeds",
};
