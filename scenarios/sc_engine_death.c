/* The engine dies mid-sync: every rank fails update_weights alike, the
 * param buffer is paused on that exit path too (§7.1), and after a restart
 * of the engine the next cycle is bit-identical again. */
#include <stdio.h>

#include "bs_expect.h"
#include "bs_scenario.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  return bs_expect_failed_alike(r, "update_weights", BS_ERR_ENGINE_DEAD, false,
                                d, n) &&
         bs_expect_recovered(r, "restore", d, n) &&
         bs_expect_recovered(r, "update_weights", d, n) &&
         (snprintf(d, n,
                   "every rank failed update_weights with engine-dead, "
                   "then restored and synced again"),
          true);
}

BS_SCENARIO(engine_death){
    .name = "engine-death",
    .labels = "@smoke @fault @mutant-target",
    .summary = "the last rank's engine dies during weight sync",
    .details = "MainCast; in cycle 1 the last rank's engine is SIGKILLed at "
               "its first bucket. The rank keeps following the collective "
               "schedule, every rank agrees on engine-dead, param_buffer is "
               "paused anyway, the driver restarts the engine and goes on.",
    .model = "tiny",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 1,
    .sets = BS_LIST("rematerialize=1"),
    .faults = BS_LIST("name=engine/send,rank={last},cycle=1,nth=1"),
    .targets = BS_LIST("pause-not-in-finally"),
    .expect = expect,
    .expects = "every rank fails update_weights with engine-dead; a later "
               "restore and sync succeed on every rank",
};
