#include "explore/bs_sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explore/bs_known.h"

const char *bs_sweep_outcome_name(bs_sweep_outcome o) {
  static const char *const names[] = {
      "contained-and-agreed", "recovered", "vacuous", "known", "fail",
      "interrupted"};
  return (unsigned)o < BS_SWEEP_OUTCOMES ? names[o] : "unknown";
}

bool bs_sweep_keeps(const bs_sweep_filter *f, const bs_fault_reach *r) {
  bool point = f->npoints == 0;
  for (size_t i = 0; i < f->npoints && !point; i++)
    point = bs_fault_spec_matches_point(f->points[i], r->point);
  return point && (f->rank < 0 || f->rank == r->rank) &&
         (f->cycle < 0 || f->cycle == r->cycle);
}

/* Every reach the filter keeps, nth by nth, in the counts' order (point,
 * rank, cycle). */
static bs_status expand(const bs_result *count, const bs_sweep_filter *f,
                        bs_sweep_reach **out, size_t *n) {
  bs_status st = BS_OK;
  size_t total = 0;
  *out = NULL;
  *n = 0;
  for (size_t i = 0; i < count->nreaches; i++)
    if (bs_sweep_keeps(f, &count->reaches[i]))
      total += (size_t)count->reaches[i].count;
  if (total && !(*out = calloc(total, sizeof **out)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "sweep: %zu reaches", total);
  for (size_t i = 0; i < count->nreaches; i++) {
    const bs_fault_reach *r = &count->reaches[i];
    for (long k = 1; bs_sweep_keeps(f, r) && k <= r->count; k++) {
      bs_sweep_reach *x = &(*out)[(*n)++];
      *x = (bs_sweep_reach){.point = r->point,
                            .rank = r->rank,
                            .cycle = r->cycle,
                            .nth = k,
                            .of = r->count};
    }
  }
out:
  return st;
}

/* Shares of the sample per point: each point gets an equal share, the rest
 * of a point with fewer reaches goes to the others, and a share of less
 * than one each goes round from point `offset` on. first[p]..first[p+1] are
 * point p's reaches. */
static void shares(const size_t *first, size_t npoints, size_t sample,
                   size_t offset, size_t *share) {
  size_t left = sample, open = npoints;
  memset(share, 0, npoints * sizeof *share);
  while (left && open) {
    size_t each = left / open ? left / open : 1;
    open = 0;
    for (size_t k = 0; k < npoints && left; k++) {
      size_t p = (k + offset) % npoints;
      size_t have = first[p + 1] - first[p];
      size_t give = have - share[p] < each ? have - share[p] : each;
      share[p] += give;
      left -= give;
      open += share[p] < have;
    }
  }
}

/* Keeps share[p] evenly spaced reaches of each point, in place. */
static size_t thin(bs_sweep_reach *all, const size_t *first, size_t npoints,
                   const size_t *share) {
  size_t kept = 0;
  for (size_t p = 0; p < npoints; p++) {
    size_t have = first[p + 1] - first[p];
    for (size_t j = 0; j < share[p]; j++)
      all[kept++] = all[first[p] + (2 * j + 1) * have / (2 * share[p])];
  }
  return kept;
}

static bs_status sample(bs_sweep_reach *all, size_t *n, size_t want,
                        size_t offset) {
  bs_status st = BS_OK;
  size_t *first = calloc(*n + 1, sizeof *first);
  size_t *share = calloc(*n + 1, sizeof *share);
  size_t np = 0;
  if (!first || !share)
    BS_FAIL(BS_ERR_NOMEM, NULL, "sweep: sampling %zu reaches", *n);
  for (size_t i = 0; i < *n; i++)
    if (i == 0 || all[i].point != all[i - 1].point)
      first[np++] = i;
  first[np] = *n;
  shares(first, np, want, offset, share);
  *n = thin(all, first, np, share);
out:
  free(first);
  free(share);
  return st;
}

bs_status bs_sweep_reaches(const bs_result *count, const bs_sweep_filter *f,
                           bs_sweep_reach **out, size_t *n, size_t *total) {
  bs_status st = BS_OK;
  BS_CHECK(expand(count, f, out, n));
  *total = *n;
  size_t want =
      f->sample_pct > 0 ? (*n * (size_t)f->sample_pct + 99) / 100 : f->sample;
  if (want && *n > want)
    BS_CHECK(sample(*out, n, want, f->offset));
out:
  return st;
}

/* Whether f fires at the nth reach of r's point, rank and cycle whatever
 * came before (bs_fault.c's filters, less the draws and onetime's mark). */
static bool takes(const bs_fault_spec *f, const bs_sweep_reach *r, long nth) {
  bool window =
      !f->nth || (nth >= f->nth && (!f->times || nth - f->nth < f->times));
  return bs_fault_spec_matches_point(f->name, r->point) &&
         (f->rank < 0 || f->rank == r->rank) &&
         (f->cycle < 0 || f->cycle == r->cycle) && window && f->prob >= 1.0 &&
         !f->onetime;
}

bool bs_sweep_taken(const bs_run_fault *faults, size_t n,
                    const bs_sweep_reach *r, bool persistent) {
  for (long k = r->nth; k <= (persistent ? r->of : r->nth); k++) {
    bool any = false;
    for (size_t i = 0; i < n && !any; i++)
      any = takes(&faults[i].spec, r, k);
    if (!any)
      return false;
  }
  return true;
}

void bs_sweep_spec(const bs_sweep_reach *r, bool persistent, char *out,
                   size_t n) {
  snprintf(out, n, "name=%s,rank=%d,cycle=%d,nth=%ld%s",
           bs_fault_catalogue_get(r->point)->name, r->rank, r->cycle, r->nth,
           persistent ? ",persistent" : "");
}

bs_sweep_outcome bs_sweep_judge(const bs_result *res, size_t armed) {
  if (res->verdict == BS_INTERRUPTED) /* cut short: it proves nothing */
    return BS_SWEEP_INTERRUPTED;
  if (res->verdict == BS_KNOWN)
    return BS_SWEEP_KNOWN;
  if (res->verdict == BS_FAIL || res->verdict == BS_HANG ||
      res->verdict == BS_CRASH)
    return BS_SWEEP_FAIL;
  if (armed >= res->narmed || res->armed[armed].fired_total == 0)
    return BS_SWEEP_VACUOUS;
  for (size_t i = 0; i < res->noutcomes; i++)
    if (strcmp(res->outcomes[i].status, "ok") != 0)
      return BS_SWEEP_CONTAINED;
  return BS_SWEEP_RECOVERED;
}

void bs_sweep_settle(const bs_run *cfg, bs_result *res, size_t armed,
                     bool strict) {
  if (res->verdict == BS_INTERRUPTED || bs_known_mark(cfg, res, strict))
    return;
  bs_sweep_outcome o = bs_sweep_judge(res, armed);
  if (res->verdict == BS_VACUOUS &&
      (o == BS_SWEEP_CONTAINED || o == BS_SWEEP_RECOVERED)) {
    res->verdict = BS_PASS;
    bs_result_set_note(res, "judged on the swept fault, which fired: it "
                            "pre-empted the scenario's own");
    bs_err_clear();
  }
}
