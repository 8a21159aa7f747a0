/* One rank's optimizer step fails: every rank fails train_step alike, the
 * failing rank still joins the step's param all-gathers (else its peers
 * would wait in them forever, as an early return before a collective hangs
 * NCCL), and no rank backs up a step that another rank failed. */
#include <stdio.h>
#include <string.h>

#include "bs_expect.h"
#include "bs_scenario.h"

/* The failed step's collectives were the same on every rank, the param
 * all-gathers among them. */
static bool joined_gathers(const bs_record *r, int cycle, char *d, size_t n) {
  bs_coll_count c;
  if (!bs_expect_same_collectives(r, "train_step", cycle, &c, d, n))
    return false;
  if (c.data == 0) {
    snprintf(d, n, "cycle %d train_step: no param all-gather recorded", cycle);
    return false;
  }
  return true;
}

/* The error was raised in the step, not in the backup after it: the step
 * was agreed before anything was backed up. */
static bool failed_before_backup(const bs_record *r, char *d, size_t n) {
  for (int k = 0; k < r->nranks; k++) {
    const bs_event *e = bs_expect_first_failure(r, k);
    if (strcmp(e->err.phase, "train_step") != 0) {
      snprintf(d, n, "rank %d: the failure was raised in %s, not train_step", k,
               e->err.phase);
      return false;
    }
  }
  return true;
}

static bool expect(const bs_record *r, char *d, size_t n) {
  if (!bs_expect_failed_and_stopped(r, "train_step", BS_ERR_NOMEM, false, d, n))
    return false;
  int cycle = bs_expect_first_failure(r, 0)->cycle;
  if (!joined_gathers(r, cycle, d, n) || !failed_before_backup(r, d, n))
    return false;
  snprintf(d, n,
           "every rank failed train_step of cycle %d with out-of-memory, "
           "after the same collectives, before any backup",
           cycle);
  return true;
}

BS_SCENARIO(step_failure){
    .name = "step-failure",
    .labels = "@smoke @fault",
    .summary = "the last rank's optimizer step runs out of memory",
    .details =
        "MainCast backuper (rematerialize=1) on the tiny model, where the "
        "step ends in the distributed optimizer's param all-gathers.\n"
        "Fault: optimizer/step on the last rank, cycle 1, nth=1: Adam over "
        "its master shard fails before touching anything.\n"
        "Expects: train_step's agreement spreads the failure: every rank "
        "fails train_step of cycle 1 with out-of-memory, raised in the step "
        "itself (the step is agreed before the backup, so no rank backs up "
        "a step another rank failed); the failing rank still issued the "
        "same collectives as its peers (the param all-gathers included); "
        "the run stops there.\n"
        "Oracles: agreement, liveness (nobody waits for the failed rank), "
        "uniform schedule, explained (out-of-memory traces to "
        "optimizer/step), pause safety and bit identity of cycle 0.\n"
        "Mutants: none targeted.",
    .model = "tiny",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 1,
    .sets = BS_LIST("rematerialize=1"),
    .faults = BS_LIST("name=optimizer/step,rank={last},cycle=1,nth=1"),
    .expect = expect,
    .expects = "every rank fails train_step of cycle 1 with out-of-memory "
               "after the same collectives, before any backup; nothing runs "
               "after it",
};
