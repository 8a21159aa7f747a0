/* ref and teacher tags next to the actor: the step-start restore switches
 * through them and back, and the actor's weights must win. */
#include "bs_expect.h"
#include "bs_scenario.h"

BS_SCENARIO(switch_model){
    .name = "switch-model",
    .labels = "@smoke @mutant-target",
    .summary = "MainCast with ref and teacher: switch_model and back",
    .details = "with_ref=1, with_teacher=1: full pinned copies for ref and "
               "teacher, extras for the actor; restore_for_step switches "
               "ref, teacher, then actor, which is restored even though it "
               "is the active tag.",
    .model = "tiny",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 1,
    .sets = BS_LIST("rematerialize=1", "with_ref=1", "with_teacher=1"),
    .targets = BS_LIST("same-tag-skip"),
    .expect = bs_expect_all_ok,
    .expects = "every phase of every rank succeeds",
};
