/* A rank issues a different collective: reported as a desync naming ranks
 * and ops, every rank returns, nothing waits for the watchdog. */
#include <stdio.h>
#include <string.h>

#include "bs_expect.h"
#include "bs_scenario.h"

/* Generous: proves nothing waited for the default 10 s watchdog. */
#define NOT_THE_TIMEOUT_MS 5000

static bool expect(const bs_record *r, char *d, size_t n) {
  char why[200];
  const bs_event *first = r->nranks ? bs_expect_first_failure(r, 0) : NULL;
  if (!bs_expect_failed_alike(r, NULL, BS_OK, false, why, sizeof why)) {
    snprintf(d, n, "%s", why);
    return false;
  }
  if (!bs_expect_fast_failures(r, NOT_THE_TIMEOUT_MS, d, n))
    return false;
  if (first->status != BS_ERR_DESYNC && first->status != BS_ERR_TENSOR_SET) {
    snprintf(d, n, "reported as %s, not as a desync",
             bs_status_name(first->status));
    return false;
  }
  if (!r->world_report || !strstr(r->world_report, "rank")) {
    snprintf(d, n, "no desync report naming the ranks");
    return false;
  }
  snprintf(d, n, "%s, reported without waiting for the timeout", why);
  return true;
}

BS_SCENARIO(rank_divergence){
    .name = "rank-divergence",
    .labels = "@smoke @fault",
    .summary = "the last rank issues a different collective",
    .details = "In cycle 1 the last rank's 3rd collective is a different "
               "one. The fingerprint check turns it into a desync on every "
               "rank, with a report naming the ranks and ops.",
    .model = "tiny",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 2,
    .faults = BS_LIST("name=comm/diverge,rank={last},cycle=1,nth=3,"
                      "failinfo=2"),
    .expect = expect,
    .expects = "every rank fails the same phase with desync, a report names "
               "the ranks, no failure took anywhere near the timeout",
};
