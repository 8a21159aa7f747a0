/* Colocated LoRA: weight sync reads the memory saver's host copy of the
 * frozen base, so the backuper keeps nothing (behavior.md §5). */
#include "bs_expect.h"
#include "bs_scenario.h"

BS_SCENARIO(steady_lora){
    .name = "steady-lora",
    .labels = "@smoke @mutant-target",
    .summary = "colocated LoRA: the memory-saver read path, no pinned copy",
    .details = "The frozen base lives in the memory saver's default region "
               "with a cpu backup; weight sync takes it from there and the "
               "live adapters from param_buffer. The backuper's pinned "
               "budget is 0 bytes.",
    .model = "lora",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 1,
    .sets = BS_LIST("lora_rank=8"),
    .targets = BS_LIST("lora-double-backup"),
    .expect = bs_expect_all_ok,
    .expects = "every phase of every rank succeeds",
};
