/* The Normal backuper through the full lifecycle, no fault: the baseline. */
#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

BS_SCENARIO(steady_normal){
    .name = "steady-normal",
    .labels = "@smoke",
    .summary = "Normal backuper, colocated and offloaded, no fault",
    .details =
        "The baseline: the Normal backuper through the full lifecycle on "
        "the dense model, default configuration (colocate, offload_train), "
        "no fault.\n"
        "Steps: init backs up a full pinned copy of every synced tensor (2 "
        "B per bf16 element); each cycle: sleep pauses param_buffer (no "
        "host backup under offload, its bytes are lost), update_weights "
        "streams the pinned copies to the engine, wake_up resumes, restore "
        "copies the pinned copies back, the step trains and backs up again.\n"
        "Expects: every phase of every rank succeeds.",
    .model = "dense",
    .expect = bs_expect_all_ok,
    .expects = "every phase of every rank succeeds",
};
