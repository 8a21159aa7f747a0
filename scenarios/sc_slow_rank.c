/* A slow rank is not a hang: stalls under the timeout raise no alarm. */
#include <stdio.h>

#include "bs_expect.h"
#include "bs_scenario.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  if (!bs_expect_all_ok(r, d, n))
    return false;
  if (r->world_report && r->world_report[0]) {
    snprintf(d, n, "false alarm: %.200s", r->world_report);
    return false;
  }
  snprintf(d, n, "every phase ok, no hang report");
  return true;
}

BS_SCENARIO(slow_rank){
    .name = "slow-rank",
    .labels = "@smoke @fault",
    .summary = "the last rank sleeps 30 ms before some collectives",
    .details = "In cycle 1 the last rank stalls 30 ms before each of its "
               "first collectives (prob 1, every reach up to the 4th); the "
               "watchdog (10 s) must not call that a hang.",
    .model = "tiny",
    .cycles = 2,
    .default_ranks = 4,
    .min_ranks = 1,
    .faults = BS_LIST("name=comm/stall,rank={last},cycle=1,nth=1,failinfo=30",
                      "name=comm/stall,rank={last},cycle=1,nth=4,"
                      "failinfo=30"),
    .expect = expect,
    .expects = "every phase succeeds and no hang is reported",
};
