#include "oracles/bs_oracle.h"

#include <stdio.h>

bool bs_oracle_liveness(const bs_record *r, char *detail, size_t n) {
  for (int k = 0; k < r->nranks; k++) {
    const bs_rank_rec *rr = &r->rank[k];
    const bs_event *e = bs_record_last(r, k);
    if (!rr->returned) {
      snprintf(detail, n, "rank %d never returned (last phase %s, cycle %d)", k,
               e ? e->phase : "none", e ? e->cycle : -1);
      return false;
    }
    if (e && e->t1_ms < 0 && !rr->unwound) {
      snprintf(detail, n, "rank %d: %s of cycle %d never completed", k,
               e->phase, e->cycle);
      return false;
    }
  }
  if (r->deadline_ms > 0 && r->duration_ms > r->deadline_ms) {
    snprintf(detail, n, "the run went past its %.0f ms deadline (duration_ms)",
             r->deadline_ms);
    return false;
  }
  snprintf(detail, n, "all %d ranks returned", r->nranks);
  return true;
}
