#include "oracles/bs_oracle.h"

#include "bs_fault_control.h"

#include <stdio.h>

/* Whether a fault that fired by that cycle (-1: any) explains st. Which
 * statuses a point explains is its row of bs_fault_points.def; a status no
 * row names (a state error, a paused read, a coverage or config rejection)
 * is never explained by a fault: it is a bug of the core. */
static bool explained(const bs_record *r, bs_status st, int cycle) {
  for (size_t i = 0; i < r->nfired; i++) {
    const bs_fault_fired *f = &r->fired[i];
    if ((cycle < 0 || f->cycle <= cycle) &&
        bs_fault_catalogue_explains(f->point, st))
      return true;
  }
  return false;
}

static bool check_rank(const bs_record *r, int k, char *detail, size_t n) {
  const bs_rank_rec *rr = &r->rank[k];
  for (size_t i = 0; i < rr->n; i++) {
    const bs_event *e = &rr->ev[i];
    if (bs_record_event_failed(e) && !explained(r, e->status, e->cycle)) {
      snprintf(detail, n,
               "rank %d, cycle %d %s: %s with no fired fault "
               "behind it: %s",
               k, e->cycle, e->phase, bs_status_name(e->status),
               bs_record_err(e)->message);
      return false;
    }
  }
  if (rr->returned && rr->end != BS_OK && !explained(r, rr->end, -1)) {
    snprintf(detail, n,
             "rank %d ended with %s with no fired fault behind "
             "it: %s",
             k, bs_status_name(rr->end), rr->end_err.message);
    return false;
  }
  return true;
}

bool bs_oracle_explained(const bs_record *r, char *detail, size_t n) {
  size_t errors = 0;
  for (int k = 0; k < r->nranks; k++) {
    if (!check_rank(r, k, detail, n))
      return false;
    for (size_t i = 0; i < r->rank[k].n; i++)
      errors += bs_record_event_failed(&r->rank[k].ev[i]);
  }
  if (r->world_report && r->world_report[0] &&
      !explained(r, BS_ERR_DESYNC, -1)) {
    snprintf(detail, n,
             "a hang/desync was reported with no comm fault "
             "fired: %.200s",
             r->world_report);
    return false;
  }
  snprintf(detail, n,
           "%zu failed phase%s, %zu fault firing%s: every error "
           "traced to a fired fault",
           errors, errors == 1 ? "" : "s", r->nfired,
           r->nfired == 1 ? "" : "s");
  return true;
}
