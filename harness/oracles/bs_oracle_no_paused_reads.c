#include "oracles/bs_oracle.h"

#include <stdio.h>

bool bs_oracle_no_paused_reads(const bs_record *r, char *detail, size_t n) {
  if (r->nreads > 0) {
    /* The lowest rank's first: ranks log concurrently, so the log's own
     * order would change from run to run. */
    const bs_paused_read *p = &r->reads[0];
    for (size_t i = 1; i < r->nreads; i++)
      if (r->reads[i].rank < p->rank)
        p = &r->reads[i];
    snprintf(detail, n,
             "rank %d read paused %s at offset %zu in %s (%zu paused "
             "read%s)",
             p->rank, p->tag, p->offset, p->phase, r->nreads,
             r->nreads == 1 ? "" : "s");
    return false;
  }
  for (int k = 0; k < r->nranks; k++) {
    const bs_rank_rec *rr = &r->rank[k];
    for (size_t i = 0; i < rr->n; i++)
      if (rr->ev[i].status == BS_ERR_PAUSED_READ) {
        snprintf(detail, n, "rank %d, cycle %d %s: %s", k, rr->ev[i].cycle,
                 rr->ev[i].phase, bs_record_err(&rr->ev[i])->message);
        return false;
      }
  }
  snprintf(detail, n, "no paused allocation was read");
  return true;
}
