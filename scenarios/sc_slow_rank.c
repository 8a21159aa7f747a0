/* A slow rank is not a hang: stalls well under the timeout raise no alarm. */
#include <stdio.h>

#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

/* Stalls that fired, and the first and last cycle they fired in. */
static size_t stalls(const bs_record *r, int *first, int *last) {
  size_t n = 0;
  *first = *last = -1;
  for (size_t i = 0; i < r->nfired; i++) {
    int c = r->fired[i].cycle;
    if (r->fired[i].point != BS_FP_COMM_STALL)
      continue;
    *first = n == 0 || c < *first ? c : *first;
    *last = c > *last ? c : *last;
    n++;
  }
  return n;
}

static bool expect(const bs_record *r, char *d, size_t n) {
  int first, last;
  size_t fired = stalls(r, &first, &last);
  if (!bs_expect_all_ok(r, d, n))
    return false;
  if ((r->world_report && r->world_report[0]) || r->detect_ms >= 0) {
    snprintf(d, n, "false alarm: %.300s", bs_expect_report(r));
    return false;
  }
  if (fired < 2 || first == last) {
    snprintf(d, n, "%zu stalls, cycles %d..%d: not several across cycles",
             fired, first, last);
    return false;
  }
  snprintf(d, n, "%zu stalls in cycles %d..%d, every phase ok, no hang report",
           fired, first, last);
  return true;
}

BS_SCENARIO(slow_rank){
    .name = "slow-rank",
    .labels = "@smoke @fault",
    .summary = "the last rank stalls 50 ms before collectives, 2 s timeout",
    .details =
        "Normal backuper on the tiny model, 3 cycles, with a 2000 ms "
        "collective watchdog (the scenario's timeout, unless --timeout-ms).\n"
        "Faults: comm/stall on the last rank, failinfo=50 (ms it sleeps "
        "before the collective): nth=3 with no cycle filter, so its 3rd "
        "collective of every cycle (early in the cycle: in init or "
        "update_weights), and in cycle 1 also nth=7 (past wake_up). Four "
        "stalls of 50 ms, 40 times shorter than the timeout, while the "
        "peers wait in the collective.\n"
        "Expects: every phase of every rank succeeds, there is no "
        "hang/desync report and nothing was contained, and the stalls fired "
        "in several cycles (the fault log proves the run was slow).",
    .timeout_ms = 2000,
    .faults = BS_LIST("name=comm/stall,rank={last},nth=3,failinfo=50",
                      "name=comm/stall,rank={last},cycle=1,nth=7,"
                      "failinfo=50"),
    .expect = expect,
    .expects = "every phase succeeds, nothing is reported or contained, "
               "and the stalls fired in several cycles",
};
