/* One rank's optimizer step fails: every rank fails train_step alike, with
 * the failing rank's error record, and the failing rank still joins the
 * step's param all-gathers (else its peers would wait in them forever, as
 * an early return before a collective hangs NCCL). */
#include <stdio.h>
#include <string.h>

#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

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

/* The rank the fault fired on, from the fault log (-1: none). */
static int fired_rank(const bs_record *r) {
  for (size_t i = 0; i < r->nfired; i++)
    if (r->fired[i].point == BS_FP_OPTIMIZER_STEP)
      return r->fired[i].rank;
  return -1;
}

/* Every rank carries the failing rank's own error record: the agreement
 * spread the record raised in its optimizer step, not only the status. */
static bool spread_record(const bs_record *r, char *d, size_t n) {
  int from = fired_rank(r);
  for (int k = 0; k < r->nranks; k++) {
    const bs_error *e = bs_record_err(bs_expect_first_failure(r, k));
    if (e->rank != from ||
        !strstr(e->message,
                bs_fault_catalogue_get(BS_FP_OPTIMIZER_STEP)->name)) {
      snprintf(d, n, "rank %d holds rank %d's error '%.120s', not rank %d's", k,
               e->rank, e->message, from);
      return false;
    }
  }
  return true;
}

static bool expect(const bs_record *r, char *d, size_t n) {
  if (!bs_expect_failed_and_stopped(r, "train_step", BS_ERR_NOMEM, false, d, n))
    return false;
  int cycle = bs_expect_first_failure(r, 0)->cycle;
  if (!joined_gathers(r, cycle, d, n) || !spread_record(r, d, n))
    return false;
  snprintf(d, n,
           "every rank failed train_step of cycle %d with rank %d's "
           "out-of-memory, after the same collectives",
           cycle, fired_rank(r));
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
        "fails train_step of cycle 1 with out-of-memory and holds the "
        "failing rank's own error record (the one its optimizer step "
        "raised); the failing rank still issued the same collectives as "
        "its peers (the param all-gathers included); the run stops "
        "there.",
    .sets = BS_LIST("rematerialize=1"),
    .faults = BS_LIST("name=optimizer/step,rank={last},cycle=1,nth=1"),
    .expect = expect,
    .expects = "every rank fails train_step of cycle 1 with the failing "
               "rank's out-of-memory record, after the same collectives; "
               "nothing runs after it",
};
