/* A tensor leaves the sync source right after init's backup: the SHA256
 * check reads the source afresh at the restore, finds a different tensor
 * set from the one it hashed, and fails init on every rank alike. */
#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  return bs_expect_failed_saying(r, "init", BS_ERR_TENSOR_SET,
                                 "changed the tensor set", d, n);
}

BS_SCENARIO(source_leaves){
    .name = "source-leaves",
    .labels = "@smoke @fault",
    .summary = "a tensor leaves the last rank's sync source after a backup",
    .details =
        "MainCast (rematerialize=1) with ci_test on the tiny model. The "
        "backuper's source is a getter read at every get, restore and "
        "check; the SHA256 check hashes it at the backup and compares at "
        "every restore.\n"
        "Fault: source/change on the last rank, cycle 0, nth=1, failinfo=1: "
        "after init's backup('actor') the source's last tensor "
        "(output_layer.weight) leaves it.\n"
        "Expects: init's own restore (switch_model('actor')) checks the "
        "source against the hashes of that backup: the tensor set changed, "
        "so every rank fails init with tensor-set-mismatch naming the "
        "tensor that left ('... changed the tensor set ...') and nothing "
        "runs after it.",
    .sets = BS_LIST("rematerialize=1", "ci_test=1"),
    .faults =
        BS_LIST("name=source/change,rank={last},cycle=0,nth=1,failinfo=1"),
    .expect = expect,
    .expects = "every rank fails init with tensor-set-mismatch ('changed "
               "the tensor set') naming the tensor that left; nothing runs "
               "after it",
};
