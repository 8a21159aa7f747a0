#include "record/bs_record.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bs_clock.h"
#include "bs_vec.h"
#include "record/bs_record_names.h"

bs_status bs_record_init(bs_record *r, int nranks, int cycles) {
  memset(r, 0, sizeof *r);
  r->nranks = nranks;
  r->cycles = cycles;
  snprintf(r->backend, sizeof r->backend, "sim");
  r->nprocs = 1;
  r->detect_ms = -1;
  r->opt0.inner = -1;
  /* One instant on the flight recorder's clock, which is this monotonic
   * clock shifted: collectives line up with phases exactly. */
  uint64_t mono = bs_clock_mono_ns();
  r->start_mono_ms = (double)mono / 1e6;
  r->start_real_ms = (double)bs_clock_wall_at_ns(mono) / 1e6;
  if (nranks <= 0)
    return BS_OK;
  r->rank = calloc((size_t)nranks, sizeof *r->rank);
  if (!r->rank)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "run record for %d ranks", nranks);
  return BS_OK;
}

void bs_record_digests_free(bs_digests *d) {
  free(d->d);
  free(d->names);
  memset(d, 0, sizeof *d);
}

bs_status bs_record_digests_set(bs_digests *d, const bs_digest *dig,
                                const char *const *names, size_t n) {
  bs_status st = BS_OK;
  bs_record_digests_free(d);
  if (n == 0)
    return BS_OK;
  d->d = dig ? malloc(n * sizeof *d->d) : calloc(n, sizeof *d->d);
  d->names = malloc(n * sizeof *d->names);
  if (!d->d || !d->names)
    BS_FAIL(BS_ERR_NOMEM, NULL, "digests of %zu tensors", n);
  for (size_t i = 0; i < n; i++)
    if (!(d->names[i] = bs_record_names_intern(names[i])))
      BS_FAIL(BS_ERR_NOMEM, NULL, "the name of tensor %s", names[i]);
  if (dig)
    memcpy(d->d, dig, n * sizeof *d->d);
  d->n = n;
out:
  if (st != BS_OK)
    bs_record_digests_free(d);
  return st;
}

void bs_record_rank_free(bs_rank_rec *rr) {
  for (size_t i = 0; i < rr->n; i++) {
    free(rr->ev[i].err);
    bs_record_digests_free(&rr->ev[i].live);
    bs_record_digests_free(&rr->ev[i].recv);
  }
  free(rr->ev);
  free(rr->flight);
  free(rr->colls);
  memset(rr, 0, sizeof *rr);
}

void bs_record_free(bs_record *r) {
  for (int k = 0; r->rank && k < r->nranks; k++)
    bs_record_rank_free(&r->rank[k]);
  free(r->rank);
  free(r->fired);
  free(r->reaches);
  free(r->reads);
  free(r->world_report);
  bs_record_digests_free(&r->init_ref);
  free(r->checks);
  memset(r, 0, sizeof *r);
}

double bs_record_now_ms(const bs_record *r) {
  return (double)bs_clock_mono_ns() / 1e6 - r->start_mono_ms;
}

bs_event *bs_record_begin(bs_record *r, int rank, const char *phase,
                          int cycle) {
  bs_rank_rec *rr = &r->rank[rank];
  if (!bs_vec_grow(&rr->ev, &rr->cap, rr->n + 1, sizeof *rr->ev))
    return NULL;
  bs_event *e = &rr->ev[rr->n++];
  memset(e, 0, sizeof *e);
  snprintf(e->phase, sizeof e->phase, "%s", phase);
  e->cycle = cycle;
  e->param_paused = -1;
  e->t0_ms = bs_record_now_ms(r);
  e->t1_ms = -1;
  return e;
}

void bs_record_end(bs_record *r, int rank, bs_status st) {
  bs_event *e = bs_record_last(r, rank);
  if (!e || e->t1_ms >= 0)
    return;
  e->status = st;
  if (st != BS_OK && (e->err = malloc(sizeof *e->err))) {
    *e->err = *bs_err();
    /* A status without a record (a bug elsewhere) still names itself. */
    if (e->err->code == BS_OK)
      e->err->code = st;
  }
  e->t1_ms = bs_record_now_ms(r);
}

const bs_error *bs_record_err(const bs_event *e) {
  static const bs_error none;
  return e && e->err ? e->err : &none;
}

bs_event *bs_record_last(const bs_record *r, int rank) {
  const bs_rank_rec *rr = &r->rank[rank];
  return rr->n ? &rr->ev[rr->n - 1] : NULL;
}

bs_status bs_record_check(bs_record *r, const char *name, bool ok,
                          const char *fmt, ...) {
  bs_check c = {.ok = ok};
  snprintf(c.name, sizeof c.name, "%s", name);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c.detail, sizeof c.detail, fmt, ap);
  va_end(ap);
  return bs_vec_push(&r->checks, &r->nchecks, NULL, &c, sizeof c, "check");
}

bool bs_record_event_failed(const bs_event *e) {
  return e->status != BS_OK;
}

/* Whether point's .def row has one of the flags of what. */
static bool does(bs_fault_point_id point, unsigned what) {
  const bs_fault_point *p = bs_fault_catalogue_get(point);
  return p && (p->what & what);
}

bool bs_record_fired_any(const bs_record *r, unsigned what) {
  for (size_t i = 0; i < r->nfired; i++)
    if (does(r->fired[i].point, what))
      return true;
  return false;
}

bool bs_record_rank_lost(const bs_record *r, int rank) {
  const bs_event *last = bs_record_last(r, rank);
  if (r->rank[rank].unwound || (last && last->status == BS_ERR_FATAL))
    return true;
  for (size_t i = 0; i < r->nfired; i++)
    if (r->fired[i].rank == rank && does(r->fired[i].point, BS_FAULT_LEAVES))
      return true;
  return false;
}
