/* A rank dies before a collective: the survivors return within the
 * timeout with a report naming the dead rank. */
#include <stdio.h>
#include <string.h>

#include "bs_expect.h"
#include "bs_scenario.h"

#define NOT_THE_TIMEOUT_MS 5000

static bool expect(const bs_record *r, char *d, size_t n) {
  int dead = r->nranks - 1;
  for (int k = 0; k < dead; k++) {
    const bs_event *e = bs_expect_first_failure(r, k);
    if (!r->rank[k].returned || !e) {
      snprintf(d, n, "survivor rank %d %s", k,
               e ? "never returned" : "saw no failure");
      return false;
    }
  }
  if (!bs_expect_fast_failures(r, NOT_THE_TIMEOUT_MS, d, n))
    return false;
  char name[32];
  snprintf(name, sizeof name, "%d", dead);
  if (!r->world_report || !strstr(r->world_report, name)) {
    snprintf(d, n, "the report does not name rank %d: %.200s", dead,
             r->world_report ? r->world_report : "(none)");
    return false;
  }
  snprintf(d, n,
           "%d survivors returned with errors; the report names rank "
           "%d",
           dead, dead);
  return true;
}

BS_SCENARIO(rank_death){
    .name = "rank-death",
    .labels = "@smoke @fault",
    .summary = "the last rank dies before a collective",
    .details = "In cycle 1 the last rank leaves the communicator before its "
               "2nd collective. Its peers must learn of it and return.",
    .model = "tiny",
    .cycles = 3,
    .default_ranks = 4,
    .min_ranks = 2,
    .faults = BS_LIST("name=comm/rank_exit,rank={last},cycle=1,nth=2"),
    .expect = expect,
    .expects = "every survivor returns with an error well within the "
               "timeout, and the report names the dead rank",
};
