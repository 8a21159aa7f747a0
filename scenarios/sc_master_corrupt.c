/* A bit flips in an fp32 master weight just before the MainCast rebuild
 * casts it: the rebuilt params differ from the backup on every rank (the
 * all-gather spreads the bad shard), and the armed SHA256 check must turn
 * that into one agreed hash-mismatch naming the tensor. */
#include <stdio.h>

#include "bs_expect.h"
#include "bs_scenario.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  char why[256];
  if (!bs_expect_failed_alike(r, "restore", BS_ERR_HASH_MISMATCH, true, why,
                              sizeof why) ||
      !bs_expect_stopped(r, d, n)) {
    snprintf(d, n, "%s", why);
    return false;
  }
  snprintf(d, n, "%s; the run stopped there", why);
  return true;
}

/* Cycle 1's restore is the one the check covers (it compares with the
 * cycle-0 step's backup; from the 3rd backup on no hashes are taken). Rank
 * 0's shard starts at element 0 of bucket 0, a real parameter at any world
 * size, and bit 30 is the top exponent bit: the bf16 cast must change. */
BS_SCENARIO(master_corrupt){
    .name = "master-corrupt",
    .labels = "@smoke @fault",
    .summary = "a bit flips in rank 0's fp32 master before the rebuild",
    .details =
        "MainCast with ci_test on the tiny model. In cycle 1, just before "
        "restore('actor') casts the masters into the param buffer, bit 30 "
        "(the top exponent bit) of rank 0's first fp32 master element flips "
        "(master/corrupt). The cast and all-gather carry the bad value to "
        "every rank, so the SHA256 check of that restore (it compares with "
        "the backup of the cycle-0 step) fails everywhere: every rank must "
        "fail the restore with hash-mismatch naming the same tensor, "
        "without a hang, and the run stops (a failed verification ends the "
        "job). The invariants hold: no successful restore differs from the "
        "step end, the param buffer was paused after each sync.",
    .model = "tiny",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 1,
    .sets = BS_LIST("rematerialize=1", "ci_test=1"),
    .faults = BS_LIST("name=master/corrupt,rank=0,cycle=1,nth=1,failinfo=30"),
    .expect = expect,
    .expects = "every rank fails restore (cycle 1) with hash-mismatch naming "
               "the same tensor; nothing runs after it",
};
