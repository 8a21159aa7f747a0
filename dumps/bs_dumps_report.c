/* `backstop analyze`: every process group judged on its own
 * (bs_dumps_judge.h), the group to report picked, and the report: its
 * block, a line for each other group that did not complete, one for those
 * that did. */
#include "bs_dumps_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_buf.h"
#include "bs_dumps_judge.h"
#include "bs_dumps_many.h"
#include "bs_json.h"

static int by_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

typedef struct report {
  const bs_dumps *d;
  bs_dumps_gres *res; /* by group */
  bs_dumps_view *view;
  size_t n;
} report;

/* Whether global rank r waits in group o's stuck op. */
static bool waits_in(const report *p, size_t o, int r) {
  int i = bs_dumps_group_rank(p->d, (int)o, r);
  return i >= 0 && p->res[o].finding != BS_DUMPS_CLEAN && p->res[o].waiting[i];
}

/* A hang group whose every culprit waits in no other group's stuck op:
 * the cause, not a consequence. */
static bool root(const report *p, size_t g) {
  const bs_dumps_view *v = &p->view[g];
  for (int i = 0; i < v->n; i++)
    for (size_t o = 0; p->res[g].culprit[i] && o < p->n; o++)
      if (o != g && waits_in(p, o, v->members[i]))
        return false;
  return true;
}

/* The group to report: the first desync, else the first hang that is a
 * root, else the first hang; -1: every group completed. */
static int primary(const report *p) {
  int hang = -1, rooted = -1;
  for (size_t g = 0; g < p->n; g++) {
    bs_dumps_finding f = p->res[g].finding;
    if (f == BS_DUMPS_DESYNC)
      return (int)g;
    if (f == BS_DUMPS_HANG && hang < 0)
      hang = (int)g;
    if (f == BS_DUMPS_HANG && rooted < 0 && root(p, g))
      rooted = (int)g;
  }
  return rooted >= 0 ? rooted : hang;
}

static void group_name(bs_buf *b, const bs_dump_group *g) {
  bs_buf_printf(b, "%s%s%s%s", g->name, g->desc[0] ? " (" : "", g->desc,
                g->desc[0] ? ")" : "");
}

/* torchfrtrace takes the first file it reads (the lowest rank holding the
 * collective) as right: where that rank is a culprit, it blames the
 * others. */
static void torchfrtrace_note(const report *p, int g, bs_buf *b) {
  const bs_dumps_gres *r = &p->res[g];
  const bs_dumps_view *v = &p->view[g];
  int first = -1;
  if (r->finding != BS_DUMPS_DESYNC)
    return;
  for (int i = 0; i < v->n && first < 0; i++)
    first = r->waiting[i] ? i : -1;
  if (first < 0 || !r->culprit[first])
    return;
  bool *pick = calloc((size_t)p->d->ranks + 1, sizeof *pick);
  for (int i = 0; pick && i < v->n; i++)
    pick[v->members[i]] = r->waiting[i] && !r->culprit[i];
  char *others = pick ? bs_report_block_ranks(pick, p->d->ranks) : NULL;
  bs_buf_printf(b,
                "  torchfrtrace takes rank %d's dump (the first it reads) as "
                "right: it would blame %s instead\n",
                v->members[first], others ? others : "the others");
  free(others);
  free(pick);
}

/* Lines for the other groups that did not complete: a few, then their
 * number (a job of thousands of ranks holds up hundreds of groups). */
enum { MAX_ALSO = 8 };

/* The groups that completed, in one line: the first MAX_DONE named, then
 * their number (thousands of TP groups would make a line of kilobytes). */
enum { MAX_DONE = 16 };

static void completed(const report *p, bs_buf *b) {
  size_t done = 0, named = 0;
  for (size_t o = 0; o < p->n; o++)
    done += p->res[o].finding == BS_DUMPS_CLEAN;
  for (size_t o = 0; o < p->n && named < MAX_DONE; o++) {
    if (p->res[o].finding != BS_DUMPS_CLEAN)
      continue;
    bs_buf_printf(b, "%s", named++ ? ", " : "  completed: process group");
    if (named == 1)
      bs_buf_printf(b, "%s", done > 1 ? "s " : " ");
    group_name(b, &p->d->groups[o]);
  }
  if (done > named)
    bs_buf_printf(b, " and %zu more", done - named);
  if (done)
    bs_buf_printf(b, " (every member's every entry done)\n");
}

/* " (rank 4 itself waits in process group 0)": group o's culprit stuck
 * in another group's op, a consequence of that hang rather than a cause
 * of its own. */
static void behind(const report *p, size_t o, bs_buf *b) {
  const bs_dumps_view *v = &p->view[o];
  for (int i = 0; i < v->n; i++)
    for (size_t h = 0; p->res[o].culprit[i] && h < p->n; h++)
      if (h != o && waits_in(p, h, v->members[i])) {
        bs_buf_printf(b, " (rank %d itself waits in process group ",
                      v->members[i]);
        group_name(b, &p->d->groups[h]);
        bs_buf_printf(b, ")");
        return;
      }
}

static void others(const report *p, int g, bs_buf *b) {
  size_t also = 0;
  for (size_t o = 0; o < p->n; o++) {
    if ((int)o == g || p->res[o].finding == BS_DUMPS_CLEAN)
      continue;
    if (also++ >= MAX_ALSO)
      continue;
    bs_buf_printf(b, "  also: %s", p->res[o].line);
    behind(p, o, b);
    bs_buf_printf(b, "\n");
  }
  if (also > MAX_ALSO)
    bs_buf_printf(b, "  also: %zu more process groups that did not complete\n",
                  also - MAX_ALSO);
  completed(p, b);
}

static void inferred_note(const report *p, int g, bs_buf *b) {
  const bs_dump_group *grp = &p->d->groups[g];
  if (grp->ranks_known)
    return;
  bs_buf_printf(b,
                "  members of process group %s: %s (no pg_config of the "
                "dumps lists them)\n",
                grp->name,
                !strcmp(grp->desc, "default_pg")
                    ? "every rank with a dump, and any below the highest"
                    : "the ranks whose dumps hold its entries");
}

static bs_status clean_text(const report *p, bs_dumps_verdict *v) {
  const bs_dumps *d = p->d;
  if (asprintf(&v->text,
               "backstop: no hang and no desync in %zu dump%s of %d ranks: "
               "every rank completed every entry it holds, in %zu process "
               "group%s, and they match\n",
               d->n, d->n == 1 ? "" : "s", d->ranks, p->n,
               p->n == 1 ? "" : "s") < 0)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: report");
  return BS_OK;
}

static bs_status verdict(const report *p, int g, bs_dumps_verdict *v) {
  bs_status st = BS_OK;
  const bs_dumps_gres *r = &p->res[g];
  const bs_dumps_view *w = &p->view[g];
  bs_buf b = {0};
  v->finding = r->finding;
  v->p2p = r->p2p;
  snprintf(v->pg, sizeof v->pg, "%s", p->d->groups[g].name);
  v->stuck_seq = r->seq;
  if (r->finding == BS_DUMPS_DESYNC) {
    v->mismatch_seq = r->seq;
    v->kind = r->kind;
  }
  if (!(v->culprits = calloc(w->n > 0 ? (size_t)w->n : 1, sizeof(int))))
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d ranks", w->n);
  for (int i = 0; i < w->n; i++)
    if (r->culprit[i])
      v->culprits[v->nculprits++] = w->members[i];
  qsort(v->culprits, (size_t)v->nculprits, sizeof(int), by_int);
  bs_buf_printf(&b, "%s", r->text);
  torchfrtrace_note(p, g, &b);
  inferred_note(p, g, &b);
  others(p, g, &b);
  if (b.oom)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: report");
  v->text = b.s;
  b.s = NULL;
out:
  bs_buf_free(&b);
  return st;
}

static void report_free(report *p) {
  for (size_t g = 0; g < p->n; g++) {
    bs_dumps_judge_gres_free(&p->res[g]);
    bs_dumps_judge_view_free(&p->view[g]);
  }
  free(p->res);
  free(p->view);
}

bs_status bs_dumps_report(const bs_dumps *d, bs_dumps_verdict *out) {
  bs_status st = BS_OK;
  size_t n = d->ngroups ? d->ngroups : 1;
  report p = {.d = d, .n = d->ngroups};
  memset(out, 0, sizeof *out);
  p.res = calloc(n, sizeof *p.res);
  p.view = calloc(n, sizeof *p.view);
  if (!p.res || !p.view)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %zu groups", d->ngroups);
  for (size_t g = 0; g < p.n; g++) {
    BS_CHECK(bs_dumps_judge_view_make(d, (int)g, &p.view[g]));
    BS_CHECK(bs_dumps_judge(&p.view[g], &p.res[g]));
  }
  int g = primary(&p);
  if (g < 0)
    BS_CHECK(clean_text(&p, out));
  else
    BS_CHECK(verdict(&p, g, out));
out:
  report_free(&p);
  if (st != BS_OK)
    bs_dumps_report_verdict_free(out);
  return st;
}

void bs_dumps_report_verdict_free(bs_dumps_verdict *v) {
  free(v->culprits);
  free(v->text);
  memset(v, 0, sizeof *v);
}

/* Flight recorders given (text) or made on demand (make). */
typedef struct flights {
  const char *const *text;
  bs_dumps_flight_fn make;
  void *ctx;
} flights;

static bs_status flight_get(void *ctx, bs_dumps_many_item *it) {
  const flights *f = ctx;
  snprintf(it->label, sizeof it->label, "rank%zu.flight.json", it->i);
  it->name = it->label;
  if (!f->make)
    it->data = f->text[it->i];
  else if (!(it->data = it->owned = f->make(f->ctx, (int)it->i)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "rank %zu's flight recorder", it->i);
  it->len = it->data ? strlen(it->data) : 0;
  return BS_OK;
}

/* One that is missing ("") is skipped: its rank is the missing one. */
static bs_status flight_take(void *ctx, bs_dumps *d, bs_dumps_many_item *it) {
  (void)ctx;
  return it->len ? bs_dumps_many_add(d, it) : BS_OK;
}

static bs_status report_of(const flights *f, int n, bs_dumps_verdict *out) {
  bs_status st = BS_OK;
  bs_dumps d = {0};
  bs_dumps_many m = {.n = n > 0 ? (size_t)n : 0,
                     .ctx = (void *)f,
                     .get = flight_get,
                     .take = flight_take};
  memset(out, 0, sizeof *out);
  BS_CHECK(bs_dumps_many_read(&d, &m));
  if (d.n == 0)
    BS_FAIL(BS_ERR_INVALID, NULL, "no rank left its flight recorder");
  BS_CHECK(bs_dumps_finish(&d, NULL));
  BS_CHECK(bs_dumps_report(&d, out));
out:
  bs_dumps_free(&d);
  return st;
}

bs_status bs_dumps_report_flights(const char *const *flights, int n,
                                  bs_dumps_verdict *out) {
  const struct flights f = {.text = flights};
  return report_of(&f, n, out);
}

bs_status bs_dumps_report_made(bs_dumps_flight_fn make, void *ctx, int n,
                               bs_dumps_verdict *out) {
  const flights f = {.make = make, .ctx = ctx};
  return report_of(&f, n, out);
}
