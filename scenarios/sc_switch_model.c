/* ref and teacher tags next to the actor: the step-start restore switches
 * through them and back, and the actor's weights must win. */
#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

BS_SCENARIO(switch_model){
    .name = "switch-model",
    .labels = "@smoke @mutant-target",
    .summary = "MainCast with ref and teacher: switch_model and back",
    .details =
        "MainCast (rematerialize=1) with ref and teacher on the tiny model: "
        "full pinned copies for ref and teacher (Normal, delegated), extras "
        "only for the actor; no fault.\n"
        "Steps: init backs up the actor, loads and backs up ref and "
        "teacher, then switches back to the actor; each step-start restore "
        "switches ref, teacher, then actor, which is restored although it "
        "is the active tag (under offload its param buffer was lost and "
        "must be rebuilt).\n"
        "Expects: every phase of every rank succeeds.",
    .sets = BS_LIST("rematerialize=1", "with_ref=1", "with_teacher=1"),
    .targets = BS_LIST("same-tag-skip"),
    .expect = bs_expect_all_ok,
    .expects = "every phase of every rank succeeds",
};
