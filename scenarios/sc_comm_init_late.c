/* A rank joins the communicator re-inits late, well under the watchdog
 * timeout: a slow init is not a hang, and nothing is reported. */
#include <stdio.h>

#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

static size_t late_inits(const bs_record *r) {
  size_t k = 0;
  for (size_t i = 0; i < r->nfired; i++)
    k += r->fired[i].point == BS_FP_COMM_INIT_LATE;
  return k;
}

static bool expect(const bs_record *r, char *d, size_t n) {
  size_t late = late_inits(r);
  if (!bs_expect_all_ok(r, d, n))
    return false;
  if ((r->world_report && r->world_report[0]) || r->detect_ms >= 0) {
    snprintf(d, n, "false alarm: %.300s", bs_expect_report(r));
    return false;
  }
  if (late < 2) {
    snprintf(d, n, "%zu late inits: not both of the cycle's", late);
    return false;
  }
  snprintf(d, n, "%zu late inits, every phase ok, no hang report", late);
  return true;
}

BS_SCENARIO(comm_init_late){
    .name = "comm-init-late",
    .labels = "@fault",
    .summary = "the last rank joins both communicator re-inits of cycle 1 "
               "late",
    .details =
        "Normal backuper on the tiny model with a 2000 ms watchdog; needs 2 "
        "ranks.\n"
        "Fault: comm/init_late on the last rank in cycle 1, failinfo=300: "
        "it joins the asleep sync's temporary init and wake_up's init 300 "
        "ms after its peers.\n"
        "Expects: both inits complete, every phase succeeds, no hang is "
        "reported.",
    .cycles = 2,
    .min_ranks = 2,
    .timeout_ms = 2000,
    .faults = BS_LIST("name=comm/init_late,rank={last},cycle=1,failinfo=300"),
    .expect = expect,
    .expects = "every phase succeeds and no hang is reported",
};
