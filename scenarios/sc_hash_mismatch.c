/* A restored param is not what was backed up: the SHA256 check finds it on
 * one rank, and every rank fails the restore with the same error. */
#include "bs_expect.h"
#include "bs_scenario.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  return bs_expect_failed_and_stopped(r, "restore", BS_ERR_HASH_MISMATCH, true,
                                      d, n);
}

BS_SCENARIO(hash_mismatch){
    .name = "hash-mismatch",
    .labels = "@smoke @fault @mutant-target",
    .summary = "a bit flips in a restored param on the last rank",
    .details = "MainCast with ci_test (SHA256 check of the first two "
               "restores); in cycle 1 a bit of a restored param flips on the "
               "last rank. The rank must not raise alone: all ranks agree on "
               "hash-mismatch naming the tensor, and the job stops.",
    .model = "tiny",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 1,
    .sets = BS_LIST("rematerialize=1", "ci_test=1"),
    .faults = BS_LIST("name=restore/bitflip,rank={last},cycle=1,nth=1,"
                      "failinfo=3"),
    .targets = BS_LIST("local-hash-raise"),
    .expect = expect,
    .expects = "every rank fails restore with hash-mismatch naming the same "
               "tensor; nothing runs after it",
};
