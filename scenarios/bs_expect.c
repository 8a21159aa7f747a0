#include "bs_expect.h"

#include <stdio.h>
#include <string.h>

bool bs_expect_all_ok(const bs_record *r, char *d, size_t n) {
  size_t phases = 0;
  for (int k = 0; k < r->nranks; k++) {
    const bs_event *e = bs_expect_first_failure(r, k);
    if (e) {
      snprintf(d, n, "rank %d, cycle %d %s: %s: %s", k, e->cycle, e->phase,
               bs_status_name(e->status), e->err.message);
      return false;
    }
    phases += r->rank[k].n;
  }
  if (r->nranks > 0 && phases <= (size_t)r->nranks && r->cycles > 0) {
    snprintf(d, n, "no cycle ran (%zu phases recorded)", phases);
    return false;
  }
  snprintf(d, n, "all %zu phases on %d ranks ok", phases, r->nranks);
  return true;
}

const bs_event *bs_expect_first_failure(const bs_record *r, int k) {
  const bs_rank_rec *rr = &r->rank[k];
  for (size_t i = 0; i < rr->n; i++)
    if (rr->ev[i].status != BS_OK)
      return &rr->ev[i];
  return NULL;
}

bool bs_expect_failed_alike(const bs_record *r, const char *phase, bs_status st,
                            bool tensor, char *d, size_t n) {
  const char *name = NULL;
  const bs_event *first = r->nranks ? bs_expect_first_failure(r, 0) : NULL;
  if (!first && (!phase || st == BS_OK)) {
    snprintf(d, n, "rank 0 never failed");
    return false;
  }
  phase = phase ? phase : first->phase;
  st = st != BS_OK ? st : first->status;
  for (int k = 0; k < r->nranks; k++) {
    const bs_event *e = bs_expect_first_failure(r, k);
    if (!e || strcmp(e->phase, phase) != 0 || e->status != st) {
      snprintf(d, n, "rank %d: expected %s in %s, got %s%s%s", k,
               bs_status_name(st), phase,
               e ? bs_status_name(e->status) : "no failure", e ? " in " : "",
               e ? e->phase : "");
      return false;
    }
    if (tensor &&
        (!e->err.tensor[0] || (name && strcmp(name, e->err.tensor) != 0))) {
      snprintf(d, n, "rank %d: the error names tensor '%s', rank 0 '%s'", k,
               e->err.tensor, name ? name : "");
      return false;
    }
    name = e->err.tensor;
  }
  snprintf(d, n, "all %d ranks: %s in %s%s%s%s", r->nranks, bs_status_name(st),
           phase, tensor ? " [" : "", tensor && name ? name : "",
           tensor ? "]" : "");
  return true;
}

bool bs_expect_recovered(const bs_record *r, const char *phase, char *d,
                         size_t n) {
  for (int k = 0; k < r->nranks; k++) {
    const bs_event *first = bs_expect_first_failure(r, k);
    const bs_rank_rec *rr = &r->rank[k];
    bool ok = false;
    for (size_t i = first ? (size_t)(first - rr->ev) + 1 : 0; i < rr->n && !ok;
         i++)
      ok = rr->ev[i].status == BS_OK && strcmp(rr->ev[i].phase, phase) == 0;
    if (!ok) {
      snprintf(d, n, "rank %d: no successful %s after its failure", k, phase);
      return false;
    }
  }
  snprintf(d, n, "every rank recovered: a later %s succeeded", phase);
  return true;
}

bool bs_expect_stopped(const bs_record *r, char *d, size_t n) {
  for (int k = 0; k < r->nranks; k++) {
    const bs_event *first = bs_expect_first_failure(r, k);
    const bs_event *last = bs_record_last(r, k);
    if (first && first != last) {
      snprintf(d, n, "rank %d went on to %s of cycle %d after failing %s", k,
               last->phase, last->cycle, first->phase);
      return false;
    }
  }
  snprintf(d, n, "every rank stopped at its failure");
  return true;
}

bool bs_expect_fast_failures(const bs_record *r, double ms, char *d, size_t n) {
  for (int k = 0; k < r->nranks; k++) {
    const bs_rank_rec *rr = &r->rank[k];
    for (size_t i = 0; i < rr->n; i++) {
      const bs_event *e = &rr->ev[i];
      if (e->status != BS_OK && e->t1_ms - e->t0_ms >= ms) {
        snprintf(d, n, "rank %d: the failed %s took %.0f ms (>= %.0f)", k,
                 e->phase, e->t1_ms - e->t0_ms, ms);
        return false;
      }
    }
  }
  snprintf(d, n, "every failure returned well within the timeout");
  return true;
}

bool bs_expect_failed_and_stopped(const bs_record *r, const char *phase,
                                  bs_status st, bool tensor, char *d,
                                  size_t n) {
  char why[200];
  if (!bs_expect_failed_alike(r, phase, st, tensor, why, sizeof why)) {
    snprintf(d, n, "%s", why);
    return false;
  }
  if (!bs_expect_stopped(r, d, n))
    return false;
  snprintf(d, n, "%s; the run stopped there", why);
  return true;
}
