#include "oracles/bs_oracle.h"

#include <stdio.h>
#include <string.h>

static bool same_step(const bs_event *a, const bs_event *b) {
  return a->cycle == b->cycle && strcmp(a->phase, b->phase) == 0;
}

/* First place where rank k's phases or statuses differ from rank ref's. */
static bool compare(const bs_record *r, int ref, int k, char *detail,
                    size_t n) {
  const bs_rank_rec *a = &r->rank[ref], *b = &r->rank[k];
  size_t m = a->n < b->n ? a->n : b->n;
  for (size_t i = 0; i < m; i++) {
    const bs_event *x = &a->ev[i], *y = &b->ev[i];
    if (!same_step(x, y)) {
      snprintf(detail, n,
               "rank %d went on to %s of cycle %d, rank %d to %s of cycle %d",
               ref, x->phase, x->cycle, k, y->phase, y->cycle);
      return false;
    }
    if (x->status != y->status) {
      snprintf(detail, n, "cycle %d %s: rank %d %s, rank %d %s", x->cycle,
               x->phase, ref, bs_status_name(x->status), k,
               bs_status_name(y->status));
      return false;
    }
  }
  if (a->n != b->n) {
    const bs_event *last = &(a->n > b->n ? a : b)->ev[m];
    snprintf(detail, n,
             "rank %d stopped early: rank %d went on to %s of "
             "cycle %d",
             a->n > b->n ? k : ref, a->n > b->n ? ref : k, last->phase,
             last->cycle);
    return false;
  }
  return true;
}

/* "all 4 ranks: engine-dead in update_weights (cycle 1)", at most 3. */
static void summary(const bs_record *r, int ref, int alive, char *detail,
                    size_t n) {
  int len = snprintf(detail, n, "all %d %sranks:", alive,
                     alive < r->nranks ? "surviving " : "");
  int shown = 0;
  const bs_rank_rec *rr = &r->rank[ref];
  for (size_t i = 0; i < rr->n && len >= 0 && (size_t)len < n; i++) {
    const bs_event *e = &rr->ev[i];
    if (!bs_record_event_failed(e))
      continue;
    if (shown++ == 3) {
      len += snprintf(detail + len, n - (size_t)len, " ...");
      break;
    }
    len += snprintf(detail + len, n - (size_t)len, "%s %s in %s (cycle %d)",
                    shown > 1 ? "," : "", bs_status_name(e->status), e->phase,
                    e->cycle);
  }
  if (shown == 0 && len >= 0 && (size_t)len < n)
    snprintf(detail + len, n - (size_t)len, " every phase ok");
}

bool bs_oracle_agreement(const bs_record *r, char *detail, size_t n) {
  int ref = -1, alive = 0;
  for (int k = 0; k < r->nranks; k++) {
    if (bs_record_rank_lost(r, k))
      continue;
    alive++;
    if (ref < 0)
      ref = k;
    else if (!compare(r, ref, k, detail, n))
      return false;
  }
  if (ref < 0) {
    snprintf(detail, n, "no surviving rank to compare");
    return true;
  }
  summary(r, ref, alive, detail, n);
  return true;
}
