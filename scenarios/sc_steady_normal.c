/* The Normal backuper through the full lifecycle, no fault: the baseline. */
#include "bs_expect.h"
#include "bs_scenario.h"

BS_SCENARIO(steady_normal){
    .name = "steady-normal",
    .labels = "@smoke",
    .summary = "Normal backuper, colocated and offloaded, no fault",
    .details = "Full pinned copies of every synced tensor (2 B per bf16 "
               "element); the param buffer is paused at sleep, weight sync "
               "reads the pinned copies, restore copies them back.",
    .model = "dense",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 1,
    .expect = bs_expect_all_ok,
    .expects = "every phase of every rank succeeds",
};
