#include "record/bs_record_part.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bs_pack.h"
#include "bs_vec.h"

#define MAGIC "bsrec\0\3\0"

/* The layout the part was written with: a mismatch means another build. */
typedef struct header {
  char magic[8];
  uint32_t sizes[7];
  int32_t nranks, first, n;
  double start_real_ms; /* the writer's: its event times count from it */
} header;

static void sizes(uint32_t s[7]) {
  s[0] = sizeof(bs_event);
  s[1] = sizeof(bs_digest);
  s[2] = sizeof(bs_digests);
  s[3] = sizeof(bs_fault_fired);
  s[4] = sizeof(bs_paused_read);
  s[5] = sizeof(bs_check);
  s[6] = sizeof(bs_fault_reach);
}

/* ---- writing ---- */

static void put_digests(bs_buf *b, const bs_digests *d) {
  bs_pack_put_array(b, d->d, d->n, sizeof *d->d);
  bs_pack_put_size(b, d->npaused);
  bs_pack_put_strs(b, (char *const *)d->names, d->n);
}

static void put_rank(bs_buf *b, const bs_rank_rec *rr) {
  bs_pack_put_size(b, rr->n);
  bs_pack_put(b, &rr->returned, sizeof rr->returned);
  bs_pack_put(b, &rr->unwound, sizeof rr->unwound);
  bs_pack_put(b, &rr->end, sizeof rr->end);
  bs_pack_put(b, &rr->end_err, sizeof rr->end_err);
  bs_pack_put(b, &rr->exit_status, sizeof rr->exit_status);
  bs_pack_put_str(b, rr->flight);
  for (size_t i = 0; i < rr->n; i++) {
    bs_pack_put(b, &rr->ev[i], sizeof rr->ev[i]);
    bs_pack_put_array(b, rr->ev[i].err, rr->ev[i].err ? 1 : 0,
                      sizeof *rr->ev[i].err);
    put_digests(b, &rr->ev[i].live);
    put_digests(b, &rr->ev[i].recv);
  }
}

void bs_record_part_write(const bs_record *r, int first, int n, bs_buf *b) {
  header h = {.nranks = r->nranks,
              .first = first,
              .n = n,
              .start_real_ms = r->start_real_ms};
  memcpy(h.magic, MAGIC, sizeof h.magic);
  sizes(h.sizes);
  bs_pack_put(b, &h, sizeof h);
  for (int k = first; k < first + n; k++)
    put_rank(b, &r->rank[k]);
  bs_pack_put_array(b, r->fired, r->nfired, sizeof *r->fired);
  bs_pack_put_array(b, r->reaches, r->nreaches, sizeof *r->reaches);
  bs_pack_put_array(b, r->reads, r->nreads, sizeof *r->reads);
  bs_pack_put_array(b, r->checks, r->nchecks, sizeof *r->checks);
  bs_pack_put_str(b, r->world_report);
  bs_pack_put(b, &r->detect_ms, sizeof r->detect_ms);
}

/* ---- reading ---- */

static bs_status take_digests(bs_pack_cursor *c, bs_digests *d) {
  bs_status st = BS_OK;
  bs_digest *dig = NULL;
  char **names = NULL;
  size_t n = 0, nnames = 0, npaused = 0;
  memset(d, 0, sizeof *d);
  BS_CHECK(bs_pack_take_array(c, sizeof *dig, (void **)&dig, &n));
  BS_CHECK(bs_pack_take_count(c, 0, &npaused));
  BS_CHECK(bs_pack_take_strs(c, &names, &nnames));
  if (nnames != n || npaused > n)
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: %zu digests, %zu names, %zu paused",
            c->what, n, nnames, npaused);
  BS_CHECK(bs_record_digests_set(d, dig, (const char *const *)names, n));
  d->npaused = npaused;
out:
  for (size_t i = 0; i < nnames; i++)
    free(names[i]);
  free(names);
  free(dig);
  return st;
}

static bs_status take_events(bs_pack_cursor *c, bs_rank_rec *rr) {
  bs_status st = BS_OK;
  for (size_t i = 0; i < rr->n; i++) {
    bs_event *e = &rr->ev[i];
    size_t nerr = 0;
    BS_CHECK(bs_pack_take(c, e, sizeof *e));
    e->err = NULL;
    memset(&e->live, 0, sizeof e->live);
    memset(&e->recv, 0, sizeof e->recv);
    BS_CHECK(bs_pack_take_array(c, sizeof *e->err, (void **)&e->err, &nerr));
    if (nerr > 1)
      BS_FAIL(BS_ERR_INVALID, NULL, "%s: %zu error records of one event",
              c->what, nerr);
    BS_CHECK(take_digests(c, &e->live));
    BS_CHECK(take_digests(c, &e->recv));
  }
out:
  return st;
}

static bs_status take_rank(bs_pack_cursor *c, bs_rank_rec *rr) {
  bs_status st = BS_OK;
  memset(rr, 0, sizeof *rr);
  size_t n = 0;
  BS_CHECK(bs_pack_take_count(c, sizeof *rr->ev, &n));
  BS_CHECK(bs_pack_take(c, &rr->returned, sizeof rr->returned));
  BS_CHECK(bs_pack_take(c, &rr->unwound, sizeof rr->unwound));
  BS_CHECK(bs_pack_take(c, &rr->end, sizeof rr->end));
  BS_CHECK(bs_pack_take(c, &rr->end_err, sizeof rr->end_err));
  BS_CHECK(bs_pack_take(c, &rr->exit_status, sizeof rr->exit_status));
  BS_CHECK(bs_pack_take_str(c, &rr->flight));
  if (n && !(rr->ev = calloc(n, sizeof *rr->ev)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: %zu events", c->what, n);
  rr->n = rr->cap = n; /* calloc'd: untaken events free as empty */
  BS_CHECK(take_events(c, rr));
out:
  return st;
}

static bs_status take_header(bs_pack_cursor *c, const bs_record *r, header *h) {
  bs_status st = BS_OK;
  uint32_t want[7];
  sizes(want);
  BS_CHECK(bs_pack_take(c, h, sizeof *h));
  if (memcmp(h->magic, MAGIC, sizeof h->magic) != 0 ||
      memcmp(h->sizes, want, sizeof want) != 0)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "%s: not a run record part of this build of backstop", c->what);
  if (h->nranks != r->nranks || h->first < 0 || h->n < 0 ||
      h->first > r->nranks - h->n)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "%s: ranks %d..%d of %d do not fit this run of %d ranks", c->what,
            h->first, h->first + h->n - 1, h->nranks, r->nranks);
out:
  return st;
}

/* What a part holds besides its ranks. */
typedef struct part {
  header h;
  bs_rank_rec *rank;
  bs_fault_fired *fired;
  bs_fault_reach *reaches;
  bs_paused_read *reads;
  bs_check *checks;
  size_t nfired, nreaches, nreads, nchecks;
  char *report;
  double detect_ms;
} part;

static void part_free(part *p) {
  for (int k = 0; p->rank && k < p->h.n; k++)
    bs_record_rank_free(&p->rank[k]);
  free(p->rank);
  free(p->fired);
  free(p->reaches);
  free(p->reads);
  free(p->checks);
  free(p->report);
}

static bs_status take_part(bs_pack_cursor *c, const bs_record *r, part *p) {
  bs_status st = BS_OK;
  BS_CHECK(take_header(c, r, &p->h));
  if (p->h.n && !(p->rank = calloc((size_t)p->h.n, sizeof *p->rank)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: %d ranks", c->what, p->h.n);
  for (int k = 0; k < p->h.n; k++)
    BS_CHECK(take_rank(c, &p->rank[k]));
  BS_CHECK(
      bs_pack_take_array(c, sizeof *p->fired, (void **)&p->fired, &p->nfired));
  BS_CHECK(bs_pack_take_array(c, sizeof *p->reaches, (void **)&p->reaches,
                              &p->nreaches));
  BS_CHECK(
      bs_pack_take_array(c, sizeof *p->reads, (void **)&p->reads, &p->nreads));
  BS_CHECK(bs_pack_take_array(c, sizeof *p->checks, (void **)&p->checks,
                              &p->nchecks));
  BS_CHECK(bs_pack_take_str(c, &p->report));
  BS_CHECK(bs_pack_take(c, &p->detect_ms, sizeof p->detect_ms));
  BS_CHECK(bs_pack_end(c));
out:
  return st;
}

/* dst[*n ..] = src[0 .. m]; src is consumed either way. */
static bs_status append(void **dst, size_t *n, void **src, size_t m,
                        size_t each) {
  bs_status st = bs_vec_append(dst, n, NULL, *src, m, each, "merging");
  free(*src);
  *src = NULL;
  return st;
}

bs_status bs_record_part_add_report(bs_record *r, int first, int n,
                                    const char *report) {
  if (!report || !report[0])
    return BS_OK;
  bs_buf b = {0};
  if (r->world_report && r->world_report[0])
    bs_buf_printf(&b, "%s\n", r->world_report);
  bs_buf_printf(&b, "ranks %d..%d (one process):\n%s", first, first + n - 1,
                report);
  char *s = bs_buf_take(&b);
  if (!s)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "merging a hang report");
  free(r->world_report);
  r->world_report = s;
  return BS_OK;
}

/* Another process started its run at another moment: its event times
 * move onto this record's clock, which the flight timestamps use too. */
static void rebase(bs_rank_rec *rr, double shift_ms) {
  for (size_t i = 0; i < rr->n; i++) {
    rr->ev[i].t0_ms += shift_ms;
    if (rr->ev[i].t1_ms >= 0)
      rr->ev[i].t1_ms += shift_ms;
  }
}

bs_status bs_record_part_merge(bs_record *r, const char *data, size_t n,
                               const char *what) {
  bs_status st = BS_OK;
  bs_pack_cursor c = {.p = data, .end = data + n, .what = what};
  part p = {0};
  BS_CHECK(take_part(&c, r, &p));
  for (int k = 0; k < p.h.n; k++) {
    rebase(&p.rank[k], p.h.start_real_ms - r->start_real_ms);
    bs_record_rank_free(&r->rank[p.h.first + k]);
    r->rank[p.h.first + k] = p.rank[k];
    memset(&p.rank[k], 0, sizeof p.rank[k]);
  }
  BS_CHECK(append((void **)&r->fired, &r->nfired, (void **)&p.fired, p.nfired,
                  sizeof *p.fired));
  BS_CHECK(append((void **)&r->reaches, &r->nreaches, (void **)&p.reaches,
                  p.nreaches, sizeof *p.reaches));
  BS_CHECK(append((void **)&r->reads, &r->nreads, (void **)&p.reads, p.nreads,
                  sizeof *p.reads));
  BS_CHECK(append((void **)&r->checks, &r->nchecks, (void **)&p.checks,
                  p.nchecks, sizeof *p.checks));
  BS_CHECK(bs_record_part_add_report(r, p.h.first, p.h.n, p.report));
  if (p.detect_ms > r->detect_ms)
    r->detect_ms = p.detect_ms;
out:
  part_free(&p);
  return st;
}
