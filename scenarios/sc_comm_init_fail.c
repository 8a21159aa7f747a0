/* A rank's init of the temporary communicator of an asleep weight sync
 * fails: the failure is the world's, so its peers waiting in the init stop
 * at once and every rank fails update_weights alike; the param buffer is
 * paused on that path too. */
#include <stdio.h>

#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  char why[300];
  if (!bs_expect_failed_and_stopped(r, "update_weights", BS_ERR_ABORTED, false,
                                    d, n))
    return false;
  if (!bs_expect_contained_fast(r, why, sizeof why)) {
    snprintf(d, n, "%s", why);
    return false;
  }
  snprintf(d, n, "every rank failed update_weights with aborted, %s", why);
  return true;
}

BS_SCENARIO(comm_init_fail){
    .name = "comm-init-fail",
    .labels = "@fault @mutant-target",
    .summary = "rank 0's init of an asleep weight sync's temporary "
               "communicator fails",
    .details =
        "MainCast on the tiny model (the param buffer stays resident through "
        "the sync and must be paused on every exit path) with a 2000 ms "
        "watchdog; needs 2 ranks. An asleep trainer has no communicator: "
        "its weight sync creates a temporary one and destroys it after.\n"
        "Fault: comm/init_fail on rank 0, cycle 1, nth=1: the temporary "
        "init of cycle 1 fails there.\n"
        "Expects: the failed init fails the world, so the peers waiting in "
        "it stop at once: every rank fails update_weights with aborted, "
        "contained in under half the timeout, and the run stops; pause "
        "safety holds.\n"
        "Targets failure-before-ready, an ordering bug: rank 0 fails the "
        "world right after sleep's last round, and a peer that looks at the "
        "failure before at that round fails sleep alone. Whether a peer "
        "looks before it is the schedule's: found by exploring schedules "
        "(random with several seeds, or pct: BS_SCHEDULE), not by the default "
        "one (on real threads, by chance).",
    .cycles = 2,
    .min_ranks = 2,
    .timeout_ms = 2000,
    .sets = BS_LIST("rematerialize=1"),
    .faults = BS_LIST("name=comm/init_fail,rank=0,cycle=1,nth=1"),
    .expect = expect,
    .expects = "every rank fails update_weights with aborted, contained in "
               "under half the timeout; the run stops",
    .targets = BS_LIST("failure-before-ready"),
};
