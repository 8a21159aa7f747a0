/* One rank's weight-sync gather buffer finds no device memory (the rollout
 * engine woke beside it): every rank fails update_weights alike before any
 * bucket is gathered, since a rank without the buffer cannot join the
 * gathers its peers would wait in (docs/behavior.md §7.2). */
#include <stdio.h>

#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  bs_coll_count c;
  if (!bs_expect_failed_and_stopped(r, "update_weights", BS_ERR_NOMEM, false, d,
                                    n))
    return false;
  int cycle = bs_expect_first_failure(r, 0)->cycle;
  if (!bs_expect_same_collectives(r, "update_weights", cycle, &c, d, n))
    return false;
  if (c.data != 0) {
    snprintf(d, n,
             "cycle %d update_weights: %zu bucket gathers after the "
             "failed allocation",
             cycle, c.data);
    return false;
  }
  snprintf(d, n,
           "every rank failed update_weights of cycle %d with out-of-memory, "
           "agreed before any bucket gather (%zu collectives)",
           cycle, c.all);
  return true;
}

BS_SCENARIO(sync_oom){
    .name = "sync-oom",
    .labels = "@smoke @fault",
    .summary = "the last rank's weight-sync gather buffer finds no memory",
    .details = "Normal backuper (the default configuration: colocate, "
               "offload_train) on the tiny model.\n"
               "Fault: dev/alloc on the last rank, cycle 1, nth=1: the first "
               "device allocation of cycle 1 is update_weights' gather buffer "
               "(the rank's share of every rank's bucket), and it runs out of "
               "memory on one rank only.\n"
               "Expects: the weight sync's agreement before its first gather "
               "spreads the failure: every rank fails update_weights with "
               "out-of-memory and issues no bucket gather, and the run stops "
               "there; the param buffer is paused again (pause safety).",
    .model = "tiny",
    .cycles = 2,
    .faults = BS_LIST("name=dev/alloc,rank={last},cycle=1,nth=1"),
    .expect = expect,
    .expects = "every rank fails update_weights with out-of-memory before "
               "any bucket gather; nothing runs after it",
};
