#include "explore/bs_known.h"

#include <stdio.h>
#include <string.h>

#include "bs_fault_control.h"

/* A point whose firing can corrupt bytes (its .def row says so). */
static bool corrupts(bs_fault_point_id point) {
  const bs_fault_point *p = bs_fault_catalogue_get(point);
  return p && (p->what & BS_FAULT_CORRUPTS);
}

/* Only bit identity broke (and the scenario's expectation, which does not
 * describe the settings a fuzz run adds), and a corrupting fault fired. */
static bool only_corruption(const bs_result *res, const char **detail) {
  bool corrupted = false;
  *detail = NULL;
  for (size_t i = 0; i < res->noracles; i++) {
    const bs_oracle_result *o = &res->oracles[i];
    if (o->ok || strcmp(o->name, "expectation") == 0)
      continue;
    if (strcmp(o->name, "bit-identity") != 0 || *detail)
      return false;
    *detail = o->detail;
  }
  for (size_t i = 0; i < res->narmed; i++)
    for (size_t k = 0; k < res->armed[i].nfired; k++)
      corrupted |= corrupts(res->armed[i].fired[k].point);
  return corrupted && *detail != NULL && res->verdict == BS_FAIL;
}

bool bs_known(const bs_run *c, const bs_result *res, char *why, size_t n) {
  const char *detail;
  int rank = -1, cycle = -1;
  char phase[32] = "";
  if (!only_corruption(res, &detail) ||
      sscanf(detail, "rank %d, cycle %d %31[a-z_]", &rank, &cycle, phase) !=
          3 ||
      strcmp(phase, "restore") != 0)
    return false;
  /* The run's configuration as the planner resolved and validated it. */
  if (!c->config.rematerialize || !c->config.check_rematerialize) {
    snprintf(why, n,
             "a corrupted restore reached the weights with the core's SHA256 "
             "restore check off: it catches it with rematerialize=1 and "
             "ci_test=1 (or check_rematerialize=1)");
    return true;
  }
  if (cycle >= 2) {
    snprintf(why, n,
             "a corrupted restore of cycle %d reached the weights: the "
             "core's SHA256 check covers the restores after the first two "
             "backups only (cycles 0 and 1, behavior.md section 4)",
             cycle);
    return true;
  }
  return false;
}

bool bs_known_mark(const bs_run *cfg, bs_result *res, bool strict) {
  char why[400];
  if (!bs_known(cfg, res, why, sizeof why))
    return false;
  if (!strict) {
    res->verdict = BS_KNOWN;
    bs_result_set_note(res, "%s", why);
    bs_err_clear();
  }
  return true;
}
