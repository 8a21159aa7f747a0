/* A rank issues a different collective: reported as a desync naming ranks
 * and ops, every rank returns, nothing waits for the watchdog. */
#include <stdio.h>
#include <string.h>

#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

static const char *next_line(const char *p) {
  p = strchr(p, '\n');
  return p ? p + 1 : NULL;
}

/* Whether a line of the report other than rank k's own places ranks at
 * collective #seq in an op other than `op`. */
static bool peers_elsewhere(const char *report, int k, const char *op,
                            long seq) {
  char own[32], other[32];
  long s;
  snprintf(own, sizeof own, "  rank %d: ", k);
  for (const char *p = report; p && *p; p = next_line(p))
    if (strncmp(p, "  rank", 6) == 0 && strncmp(p, own, strlen(own)) != 0 &&
        sscanf(p, "%*s %*[0-9,-]: %31s #%ld", other, &s) == 2 && s == seq &&
        strcmp(other, op) != 0)
      return true;
  return false;
}

/* The report shows rank k alone at one collective ("rank 3: reduce_scatter
 * #14 ...") and its peers at a different one with the same number. */
static bool names_divergence(const bs_record *r, int k, char *d, size_t n) {
  char line[300], op[32];
  long seq;
  if (!bs_expect_report_line(r, k, line, sizeof line) ||
      sscanf(line, "rank %*d: %31s #%ld", op, &seq) != 2 ||
      !peers_elsewhere(r->world_report, k, op, seq)) {
    snprintf(d, n,
             "the report does not show rank %d at another collective than "
             "its peers: %.300s",
             k, bs_expect_report(r));
    return false;
  }
  snprintf(d, n, "%s", line);
  return true;
}

static bool expect(const bs_record *r, char *d, size_t n) {
  char alike[200];
  if (!bs_expect_failed_alike(r, NULL, BS_OK, false, d, n))
    return false;
  snprintf(alike, sizeof alike, "%s", d);
  bs_status st = bs_expect_first_failure(r, 0)->status;
  if (st != BS_ERR_DESYNC && st != BS_ERR_TENSOR_SET) {
    snprintf(d, n, "reported as %s, not as a desync", bs_status_name(st));
    return false;
  }
  return bs_expect_contained_naming(r, names_divergence, r->nranks - 1, alike,
                                    d, n);
}

BS_SCENARIO(rank_divergence){
    .name = "rank-divergence",
    .labels = "@smoke @fault",
    .summary = "the last rank issues a different collective",
    .details =
        "Normal backuper on the tiny model with a 2000 ms collective "
        "watchdog (the scenario's timeout, unless --timeout-ms); needs 2 "
        "ranks.\n"
        "Fault: comm/diverge on the last rank, cycle 1, nth=3, failinfo=2: "
        "after one clean cycle, its 3rd collective of cycle 1 (early in "
        "update_weights) is replaced; an even failinfo makes it a "
        "reduce-scatter of the same bytes where its peers all-gather, a "
        "divergence no byte count reveals (an odd one would add a barrier "
        "first).\n"
        "Expects: the per-collective fingerprint (op, count, dtype, "
        "sequence) catches it before data moves: every rank fails "
        "update_weights with desync; it is contained (detect_ms is set) and "
        "detection and every failed phase take less than half the timeout "
        "the report states; the report shows the last rank alone at its "
        "collective ('rank 3: reduce_scatter #N ...') and its peers at "
        "another op with the same sequence number.",
    .min_ranks = 2,
    .timeout_ms = 2000,
    .faults = BS_LIST("name=comm/diverge,rank={last},cycle=1,nth=3,"
                      "failinfo=2"),
    .expect = expect,
    .expects = "every rank fails the same phase with desync; it is "
               "contained, every failure returning in under half the "
               "watchdog timeout; the report shows the last rank alone at "
               "another collective than its peers",
};
