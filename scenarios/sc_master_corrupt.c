/* A bit flips in an fp32 master weight just before the first real MainCast
 * rebuild (cycle 0's, after sleep, update_weights and wake_up): the rebuilt
 * params differ from the backup on every rank (the all-gather spreads the
 * bad shard), and the armed SHA256 check, which keeps init's backup hashes
 * past init's own restore, must turn that into one agreed hash-mismatch
 * naming the tensor. */
#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  return bs_expect_failed_and_stopped(r, "restore", BS_ERR_HASH_MISMATCH, true,
                                      d, n);
}

BS_SCENARIO(master_corrupt){
    .name = "master-corrupt",
    .labels = "@smoke @fault @mutant-target",
    .summary = "a bit flips in rank 0's fp32 master before the first rebuild",
    .details =
        "MainCast (rematerialize=1) with ci_test on the tiny model: "
        "restore('actor') casts each rank's fp32 master shard into its "
        "slice of the param buffer, all-gathers the buffer and copies the "
        "extras back; the SHA256 check compares every restore with the "
        "hashes of the first two backups, held until the next backup.\n"
        "Fault: master/corrupt on rank 0, cycle 0, nth=2, failinfo=30: "
        "init's own restore is the 1st rebuild of cycle 0, so the 2nd is "
        "the first real one, after sleep, update_weights and wake_up; just "
        "before its cast, bit 30 (the top exponent bit, so the bf16 cast "
        "must change) of rank 0's first master element flips. Rank 0's "
        "shard starts at element 0 of bucket 0, a real parameter at any "
        "world size. That restore compares with init's backup (#1), whose "
        "hashes outlived init's restore.\n"
        "Expects: the all-gather carries the bad value to every rank, so "
        "every rank's check fails: every rank fails restore (cycle 0) with "
        "hash-mismatch naming the same tensor, nothing hangs, and the run "
        "stops (a failed verification ends the job).",
    .sets = BS_LIST("rematerialize=1", "ci_test=1"),
    .faults = BS_LIST("name=master/corrupt,rank=0,cycle=0,nth=2,failinfo=30"),
    .targets = BS_LIST("check-window-cleared"),
    .expect = expect,
    .expects = "every rank fails restore (cycle 0) with hash-mismatch naming "
               "the same tensor; nothing runs after it",
};
