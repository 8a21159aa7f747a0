/* A restored param is not what was backed up: the SHA256 check finds it on
 * one rank, and every rank fails the restore with the same error. */
#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  return bs_expect_failed_and_stopped(r, "restore", BS_ERR_HASH_MISMATCH, true,
                                      d, n);
}

BS_SCENARIO(hash_mismatch){
    .name = "hash-mismatch",
    .labels = "@smoke @fault @mutant-target",
    .summary = "a bit flips in a restored param on the last rank",
    .details =
        "MainCast (rematerialize=1) with ci_test on the tiny model: the "
        "SHA256 check hashes every synced tensor at the first two "
        "backup('actor') calls (init, the cycle-0 step end) and compares "
        "at the restore that follows each.\n"
        "Fault: restore/bitflip on the last rank, cycle 1, nth=1, "
        "failinfo=3: once per restore, right after the rebuild, bit 3 (a "
        "low mantissa bit: only a hash sees it) of the first rebuilt param "
        "(embedding.word_embeddings.weight) flips. Cycle 1's restore is the "
        "last one the check covers, and cycle 0's passed it first.\n"
        "Expects: the rank that finds the mismatch does not raise alone: "
        "the restore's agreement makes every rank fail restore (cycle 1) "
        "with hash-mismatch naming that tensor, no rank hangs, and the run "
        "stops (a failed verification ends the job).",
    .sets = BS_LIST("rematerialize=1", "ci_test=1"),
    .faults = BS_LIST("name=restore/bitflip,rank={last},cycle=1,nth=1,"
                      "failinfo=3"),
    .targets = BS_LIST("local-hash-raise"),
    .expect = expect,
    .expects = "every rank fails restore (cycle 1) with hash-mismatch naming "
               "the same tensor; nothing runs after it",
};
