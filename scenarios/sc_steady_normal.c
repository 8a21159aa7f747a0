/* The Normal backuper through the full lifecycle, no fault: the baseline.
 * The job ends asleep, so its end frees PAUSED memory. */
#include <stdio.h>

#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

/* Every phase succeeded and every rank's process ended with status 0: the
 * frees at the job's end (of PAUSED allocations) released nothing twice. */
static bool expect(const bs_record *r, char *d, size_t n) {
  char why[200];
  if (!bs_expect_all_ok(r, why, sizeof why)) {
    snprintf(d, n, "%s", why);
    return false;
  }
  for (int k = 0; k < r->nranks; k++)
    if (r->rank[k].end != BS_OK || r->rank[k].exit_status != 0) {
      snprintf(d, n, "rank %d ended with %s (exit status %d): %.200s", k,
               bs_status_name(r->rank[k].end), r->rank[k].exit_status,
               r->rank[k].end_err.message);
      return false;
    }
  snprintf(d, n, "%s; every rank ended with exit status 0", why);
  return true;
}

BS_SCENARIO(steady_normal){
    .name = "steady-normal",
    .labels = "@smoke @mutant-target",
    .summary = "Normal backuper, colocated and offloaded, no fault",
    .details =
        "The baseline: the Normal backuper through the full lifecycle on "
        "the dense model, default configuration (colocate, offload_train), "
        "no fault.\n"
        "Steps: init backs up a full pinned copy of every synced tensor (2 "
        "B per bf16 element); each cycle: sleep pauses param_buffer (no "
        "host backup under offload, its bytes are lost), update_weights "
        "streams the pinned copies to the engine, wake_up resumes, restore "
        "copies the pinned copies back, the step trains and backs up again. "
        "The job ends asleep: its end frees every allocation PAUSED.\n"
        "Expects: every phase of every rank succeeds, and every rank ends "
        "with exit status 0.",
    .model = "dense",
    .targets = BS_LIST("free-paused-double-release"),
    .expect = expect,
    .expects = "every phase of every rank succeeds; every rank ends with "
               "exit status 0",
};
