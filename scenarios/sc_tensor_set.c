/* One rank hands weight sync a different tensor set (it drops its last
 * tensor, as the frozen-param bug of miles #2223 did): the cross-rank
 * fingerprint must catch it before any bucket gather, where the differing
 * sets would otherwise hang (docs/behavior.md §7.4). */
#include <stdio.h>
#include <string.h>

#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"
#include "record/bs_schedule.h"

/* The rank's last two collectives are the tensor-set check and the
 * agreement on its outcome: no bucket was gathered after the check. */
static bool check_was_last(const bs_record *r, int k, char *d, size_t n) {
  bs_schedule s = {0};
  bool ok = false;
  if (bs_schedule_of_rank(r, k, &s) != BS_OK) {
    snprintf(d, n, "rank %d: no readable flight recorder", k);
    bs_err_clear();
    return false;
  }
  if (s.n >= 2)
    ok = strcmp(s.c[s.n - 2].label, "check_same") == 0 &&
         strcmp(s.c[s.n - 1].label, "agree") == 0;
  if (!ok)
    snprintf(d, n,
             "rank %d: the last collectives are not check_same, agree (#%ld "
             "is %s %s)",
             k, s.n ? s.c[s.n - 1].seq : -1L, s.n ? s.c[s.n - 1].op : "none",
             s.n ? s.c[s.n - 1].label : "");
  bs_schedule_free(&s);
  return ok;
}

static bool expect(const bs_record *r, char *d, size_t n) {
  char why[256];
  if (!bs_expect_failed_and_stopped(r, "update_weights", BS_ERR_TENSOR_SET,
                                    false, d, n))
    return false;
  snprintf(why, sizeof why, "%s", d);
  for (int k = 0; k < r->nranks; k++)
    if (!check_was_last(r, k, d, n))
      return false;
  snprintf(d, n, "%s; caught by the fingerprint before any bucket gather", why);
  return true;
}

BS_SCENARIO(tensor_set){
    .name = "tensor-set",
    .labels = "@smoke @fault @mutant-target",
    .summary = "the last rank's weight-sync tensor set differs",
    .details =
        "Normal backuper on the tiny model; needs 2 ranks (alone, a rank "
        "has no peer to differ from).\n"
        "Fault: sync/tensor_set on the last rank, cycle 1, nth=1: the "
        "first weight sync of cycle 1 (after a clean cycle) drops that "
        "rank's last tensor from the set it hands weight sync, so its "
        "buckets differ from its peers' and the bucket all-gathers would "
        "hang or mix bytes.\n"
        "Expects: the fixed core fingerprints the set across ranks (names, "
        "dtypes, sizes) before any bucket: every rank fails update_weights "
        "(cycle 1) with tensor-set-mismatch, the fingerprint check and its "
        "agreement are the last collectives every rank issued (read from "
        "the flight recorders), and the run stops.",
    .min_ranks = 2,
    .faults = BS_LIST("name=sync/tensor_set,rank={last},cycle=1,nth=1"),
    .targets = BS_LIST("skip-frozen-backup"),
    .expect = expect,
    .expects = "every rank fails update_weights (cycle 1) with tensor-set; "
               "the last collectives of every rank are the set check and its "
               "agreement; nothing runs after it",
};
