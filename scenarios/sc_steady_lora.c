/* Colocated LoRA: weight sync reads the memory saver's host copy of the
 * frozen base, so the backuper keeps nothing (docs/behavior.md §5). */
#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

BS_SCENARIO(steady_lora){
    .name = "steady-lora",
    .labels = "@smoke @mutant-target",
    .summary = "colocated LoRA: the memory-saver read path, no pinned copy",
    .details =
        "Colocated LoRA (lora_rank=8) on the lora model: the frozen base "
        "lives in the memory saver's default region with a cpu backup, the "
        "trainable adapters in param_buffer, which stays resident on sleep "
        "(behavior.md §5).\n"
        "Steps: weight sync takes the base from the memory saver's host "
        "copy and the adapters live; the backuper keeps nothing (weight "
        "backup off, a pinned budget of 0 bytes).\n"
        "Expects: every phase of every rank succeeds.",
    .model = "lora",
    .sets = BS_LIST("lora_rank=8"),
    .targets = BS_LIST("lora-double-backup"),
    .expect = bs_expect_all_ok,
    .expects = "every phase of every rank succeeds",
};
