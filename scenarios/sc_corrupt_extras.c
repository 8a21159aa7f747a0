/* A bit flips in a pinned extra (fp32 param, expert_bias): whoever reads it
 * first (the engine's check at weight sync, or the SHA256 check at
 * restore) must make every rank fail alike, naming the tensor. */
#include <stdio.h>

#include "bs_expect.h"
#include "bs_scenario.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  const bs_event *first = r->nranks ? bs_expect_first_failure(r, 0) : NULL;
  if (first && first->status != BS_ERR_HASH_MISMATCH &&
      first->status != BS_ERR_ENGINE_VERIFY) {
    snprintf(d, n, "rank 0: expected hash-mismatch or engine-verify, got %s",
             bs_status_name(first->status));
    return false;
  }
  return bs_expect_failed_and_stopped(r, NULL, BS_OK, true, d, n);
}

BS_SCENARIO(corrupt_extras){
    .name = "corrupt-extras",
    .labels = "@smoke @fault",
    .summary = "a bit flips in a pinned MainCast extra on the last rank",
    .details = "MainCast with ci_test on the tiny model (an fp32 param and an "
               "expert_bias buffer are extras); after the cycle-0 step's "
               "backup a bit of a pinned extra flips on the last rank. Weight "
               "sync reads the extras from the pinned copy, so the engine's "
               "check or the restore's SHA256 check catches it.",
    .model = "tiny",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 1,
    .sets = BS_LIST("rematerialize=1", "ci_test=1"),
    .faults = BS_LIST("name=backup/corrupt,rank={last},cycle=0,nth=2,"
                      "failinfo=5"),
    .expect = expect,
    .expects = "every rank fails the same phase with hash-mismatch or "
               "engine-verify naming the same tensor; nothing runs after it",
};
