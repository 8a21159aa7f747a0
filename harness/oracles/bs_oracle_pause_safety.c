#include "oracles/bs_oracle.h"

#include <stdio.h>
#include <string.h>

/* Whether rule says param_buffer must be PAUSED at the end of e. */
static bool must_be_paused(bs_pause_rule rule, const bs_event *e) {
  if (strcmp(e->phase, "update_weights") == 0)
    return true; /* by any path: success or failure */
  return rule == BS_PAUSE_AT_SLEEP && strcmp(e->phase, "sleep") == 0 &&
         !bs_record_event_failed(e);
}

bool bs_oracle_pause_safety(const bs_record *r, char *detail, size_t n) {
  if (r->pause_rule == BS_PAUSE_NONE) {
    snprintf(detail, n,
             "not applicable: param_buffer stays resident in this "
             "configuration");
    return true;
  }
  size_t checked = 0;
  for (int k = 0; k < r->nranks; k++) {
    const bs_rank_rec *rr = &r->rank[k];
    for (size_t i = 0; i < rr->n; i++) {
      const bs_event *e = &rr->ev[i];
      if (e->t1_ms < 0 || !must_be_paused(r->pause_rule, e))
        continue;
      checked++;
      if (e->param_paused != 1) {
        snprintf(detail, n,
                 "rank %d, cycle %d: param_buffer %s after %s returned %s", k,
                 e->cycle, e->param_paused ? "state unknown" : "still resident",
                 e->phase, bs_status_name(e->status));
        return false;
      }
    }
  }
  snprintf(detail, n,
           "param_buffer paused at all %zu checked phase ends "
           "(%s)",
           checked,
           r->pause_rule == BS_PAUSE_AT_SLEEP ? "from sleep on"
                                              : "after update_weights");
  return true;
}
