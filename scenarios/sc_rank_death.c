/* A rank dies before a collective: the survivors return well within the
 * timeout with a report naming the dead rank. */
#include <stdio.h>

#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

static bool names_dead(const bs_record *r, int dead, char *d, size_t n) {
  return bs_expect_names_dead(r, dead, true, d, n);
}

static bool expect(const bs_record *r, char *d, size_t n) {
  char head[64];
  int dead = r->nranks - 1;
  for (int k = 0; k < dead; k++) {
    const bs_event *e = bs_expect_first_failure(r, k);
    if (!r->rank[k].returned || !e) {
      snprintf(d, n, "survivor rank %d %s", k,
               r->rank[k].returned ? "saw no failure" : "never returned");
      return false;
    }
    /* A death is never read as a desync or a timeout, however the news of
     * it travelled (a torn fingerprint exchange, say). */
    if (e->status != BS_ERR_RANK_DEAD) {
      snprintf(d, n, "survivor rank %d failed %s with %s, not rank-dead: %s", k,
               e->phase, bs_status_name(e->status), bs_record_err(e)->message);
      return false;
    }
  }
  snprintf(head, sizeof head, "%d survivors returned with errors", dead);
  return bs_expect_contained_naming(r, names_dead, dead, head, d, n);
}

BS_SCENARIO(rank_death){
    .name = "rank-death",
    .labels = "@smoke @fault",
    .summary = "the last rank dies before a collective",
    .details =
        "Normal backuper on the tiny model with a 2000 ms collective "
        "watchdog (the scenario's timeout, unless --timeout-ms); needs 2 "
        "ranks.\n"
        "Fault: comm/rank_exit on the last rank, cycle 1, nth=2: after one "
        "clean cycle, the rank dies just before its 2nd collective of cycle "
        "1, early in update_weights, and leaves the communicator for good; "
        "its peers are already waiting for it in that collective.\n"
        "Expects: where one process holds every rank, the survivors learn "
        "of the death from the communicator, not from the watchdog: every "
        "survivor returns with an error (rank-dead in update_weights); the "
        "death is contained (detect_ms is set) and detection and every "
        "failed phase take less than half the timeout the report states. "
        "The sim's shared board sees every rank of every process too "
        "(--rendezvous, several processes). Over NCCL across processes "
        "each process learns of the death from the note in the run's "
        "folder within milliseconds, and every process settles on the "
        "same status and cause (rank-dead, never a desync read from a torn "
        "fingerprint exchange). The "
        "report has a line for the dead rank "
        "alone saying it is dead ('rank 3: dead after #N: fault "
        "comm/rank_exit' at 4 ranks), whatever --ranks is.",
    .min_ranks = 2,
    .timeout_ms = 2000,
    .faults = BS_LIST("name=comm/rank_exit,rank={last},cycle=1,nth=2"),
    .expect = expect,
    .expects = "every survivor returns rank-dead; the death is contained "
               "and every failure returns in under half the watchdog "
               "timeout, across processes too; the report's line for the "
               "last rank says it is dead",
};
