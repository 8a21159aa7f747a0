/* Under offload the engine connection is re-established before each weight
 * sync (inside the memory saver's disable() region upstream): a reconnect
 * refused on one rank fails update_weights on every rank alike, and after
 * the engine's restart the next cycle syncs again. */
#include <stdio.h>

#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

static bool expect(const bs_record *r, char *d, size_t n) {
  return bs_expect_failed_alike(r, "update_weights", BS_ERR_ENGINE_DEAD, false,
                                d, n) &&
         bs_expect_recovered(r, "update_weights", d, n);
}

BS_SCENARIO(engine_reconnect){
    .name = "engine-reconnect",
    .labels = "@fault",
    .summary = "rank 0's engine reconnect under offload is refused in "
               "cycle 1",
    .details =
        "Normal backuper on the tiny model, offloaded (the default "
        "configuration).\n"
        "Fault: engine/reconnect on rank 0, cycle 1.\n"
        "Expects: every rank fails update_weights with engine-dead (the "
        "reconnect is agreed like any failure), the engine is restarted and "
        "a later update_weights succeeds on every rank.",
    .faults = BS_LIST("name=engine/reconnect,rank=0,cycle=1"),
    .min_cycles = 3, /* its expectation judges the cycle after the failure */
    .expect = expect,
    .expects = "every rank fails update_weights with engine-dead, then "
               "recovers",
};
