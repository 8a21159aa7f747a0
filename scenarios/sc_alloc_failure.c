/* A pinned allocation of the backuper fails: every rank fails alike. */
#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  return bs_expect_failed_and_stopped(r, "init", BS_ERR_NOMEM, false, d, n);
}

BS_SCENARIO(alloc_failure){
    .name = "alloc-failure",
    .labels = "@smoke @fault",
    .summary = "the last rank's first pinned backup allocation fails",
    .details =
        "Normal backuper (the default configuration: colocate, "
        "offload_train) on the tiny model.\n"
        "Fault: backup/pin_alloc on the last rank, cycle 0, nth=1: the "
        "point is reached by every pinned allocation of a backuper (not the "
        "memory saver's own), and Normal allocates its pinned copies lazily "
        "at the first backup('actor'), inside init; so the very first "
        "allocation fails, on one rank only.\n"
        "Expects: init's agreement spreads the failure: every rank fails "
        "init with out-of-memory and the run stops there (no cycle runs).",
    .cycles = 2,
    .faults = BS_LIST("name=backup/pin_alloc,rank={last},cycle=0,nth=1"),
    .expect = expect,
    .expects = "every rank fails init with out-of-memory; nothing runs "
               "after it",
};
