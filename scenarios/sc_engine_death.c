/* The engine dies mid-sync: every rank fails update_weights alike, the
 * param buffer is paused on that exit path too (§7.1), the rank whose engine
 * died keeps joining the remaining bucket gathers (§7.2), and after a
 * restart of the engine the next cycle is bit-identical again. */
#include <stdio.h>

#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

/* The bucket at which the engine was killed (its nth reach), -1: never. */
static long death_bucket(const bs_record *r) {
  for (size_t i = 0; i < r->nfired; i++)
    if (r->fired[i].point == BS_FP_ENGINE_SEND)
      return r->fired[i].nth;
  return -1;
}

/* In the failed sync, every rank issued the same collectives, and bucket
 * gathers went on after the death. */
static bool kept_gathering(const bs_record *r, int cycle, char *d, size_t n) {
  bs_coll_count c;
  long died = death_bucket(r);
  if (!bs_expect_same_collectives(r, "update_weights", cycle, &c, d, n))
    return false;
  if (died < 1 || (long)c.data <= died) {
    snprintf(d, n,
             "the engine died at bucket %ld of %zu: no bucket gather after "
             "it to check",
             died, c.data);
    return false;
  }
  return true;
}

/* The next cycle's sync succeeded everywhere and the engine received every
 * tensor, so the bit-identity oracle compared it with the step end. */
static bool recovered_next(const bs_record *r, int cycle, char *d, size_t n) {
  for (int k = 0; k < r->nranks; k++) {
    const bs_event *e = bs_expect_after_failure(r, k, "update_weights");
    if (!e || e->cycle != cycle + 1 || e->recv.n == 0) {
      snprintf(d, n, "rank %d: no successful update_weights in cycle %d", k,
               cycle + 1);
      return false;
    }
  }
  return bs_expect_recovered(r, "restore", d, n);
}

static bool expect(const bs_record *r, char *d, size_t n) {
  char gathered[200];
  if (!bs_expect_failed_alike(r, "update_weights", BS_ERR_ENGINE_DEAD, false, d,
                              n))
    return false;
  int cycle = bs_expect_first_failure(r, 0)->cycle;
  if (!kept_gathering(r, cycle, gathered, sizeof gathered)) {
    snprintf(d, n, "%s", gathered);
    return false;
  }
  if (!recovered_next(r, cycle, d, n))
    return false;
  snprintf(d, n,
           "every rank failed update_weights with engine-dead (engine killed "
           "at bucket %ld; %s), restored, and synced cycle %d",
           death_bucket(r), gathered, cycle + 1);
  return true;
}

BS_SCENARIO(engine_death){
    .name = "engine-death",
    .labels = "@smoke @fault @mutant-target",
    .summary = "the last rank's engine dies at the 2nd of 4 sync buckets",
    .details =
        "MainCast (rematerialize=1) on the tiny model with "
        "update_buffer_bytes=2048: weight sync streams 4 buckets, each "
        "all-gathered across ranks, then sent to the engine.\n"
        "Fault: engine/send on the last rank, cycle 1, nth=2: the point is "
        "reached as each bucket's send starts, so in cycle 1 (after a clean "
        "cycle) the engine is SIGKILLed at the 2nd of 4 buckets, leaving 2 "
        "bucket gathers after the death (one bucket and nth=1 would never "
        "exercise the path where the failed rank keeps joining the "
        "remaining gathers).\n"
        "Expects: the rank whose engine died keeps following the schedule: "
        "in that update_weights every rank issued the same number of "
        "collectives (counted in the flight recorders), with more bucket "
        "gathers than the bucket the engine died at; every rank fails "
        "update_weights with engine-dead; param_buffer is paused on that "
        "exit path too (§7.1); the driver restarts the engine and goes on: "
        "restore succeeds everywhere and the cycle-2 sync succeeds with the "
        "engine receiving every tensor.",
    .sets = BS_LIST("rematerialize=1", "update_buffer_bytes=2048"),
    .faults = BS_LIST("name=engine/send,rank={last},cycle=1,nth=2"),
    .min_cycles = 3, /* its expectation judges the cycle after the death */
    .targets = BS_LIST("pause-not-in-finally"),
    .expect = expect,
    .expects = "every rank fails update_weights (cycle 1) with engine-dead; "
               "in it every rank issued the same collectives, with bucket "
               "gathers after the death; restore and the cycle-2 sync then "
               "succeed on every rank",
};
