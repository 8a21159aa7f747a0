/* A pinned allocation of the backuper fails: every rank fails alike. */
#include "bs_expect.h"
#include "bs_scenario.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  return bs_expect_failed_and_stopped(r, NULL, BS_ERR_NOMEM, false, d, n);
}

BS_SCENARIO(alloc_failure){
    .name = "alloc-failure",
    .labels = "@smoke @fault",
    .summary = "the last rank's first pinned backup allocation fails",
    .details = "Normal backuper: the first pinned allocation (the backup at "
               "init) fails on the last rank; every rank must fail that "
               "phase with out-of-memory.",
    .model = "tiny",
    .cycles = 2,
    .default_ranks = 4,
    .min_ranks = 1,
    .faults = BS_LIST("name=backup/pin_alloc,rank={last},cycle=0,nth=1"),
    .expect = expect,
    .expects = "every rank fails the same phase with out-of-memory; nothing "
               "runs after it",
};
