/* A tensor joins the sync source after a backup (a module registers a late
 * expert_bias buffer): MainCast reads its source afresh, so the next get
 * names the newcomer, which is neither in the DDP param buffers nor in the
 * extras backup, and weight sync fails on every rank alike. */
#include <stdio.h>

#include "bs_core_testing.h"
#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  if (!bs_expect_failed_saying(r, "update_weights", BS_ERR_COVERAGE,
                               BS_SOURCE_LATE_NAME " is neither in the DDP "
                                                   "param buffers nor in the "
                                                   "extras backup",
                               d, n))
    return false;
  const bs_event *e = bs_expect_first_failure(r, 0);
  if (e->cycle != 1) {
    snprintf(d, n, "update_weights failed in cycle %d, not 1", e->cycle);
    return false;
  }
  return true;
}

BS_SCENARIO(source_joins){
    .name = "source-joins",
    .labels = "@smoke @fault",
    .summary = "a tensor joins the last rank's sync source after a backup",
    .details =
        "MainCast (rematerialize=1) with ci_test on the tiny model. The "
        "backuper's source (every param and expert_bias buffer) is a getter "
        "read at every get, restore and check, not a list fixed at init.\n"
        "Fault: source/change on the last rank, cycle 0, nth=2: after the "
        "2nd backup('actor') of cycle 0 (init's is the 1st, the train "
        "step's the 2nd) a late expert_bias buffer, " BS_SOURCE_LATE_NAME
        ", joins that rank's source. It has no pinned copy (it did not "
        "exist at the backup) and is in no DDP buffer.\n"
        "Expects: cycle 1's update_weights reads the weights through "
        "get('actor'), which names the newcomer ('... is neither in the DDP "
        "param buffers nor in the extras backup'); every rank fails "
        "update_weights (cycle 1) with uncovered-params naming it, before "
        "any bucket is gathered, and the run stops.",
    .sets = BS_LIST("rematerialize=1", "ci_test=1"),
    .min_cycles = 2, /* it judges the cycle after its fault */
    .faults = BS_LIST("name=source/change,rank={last},cycle=0,nth=2"),
    .expect = expect,
    .expects = "every rank fails update_weights (cycle 1) with "
               "uncovered-params naming the late tensor; nothing runs after "
               "it",
};
