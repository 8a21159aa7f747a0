/* `backstop analyze`: the wait-for graph of the dumps (bs_dumps_graph.h)
 * as the report: a block for the first root's group (or the desync's, or
 * the cycle's first op's), a line per root, per held group, per cycle,
 * per thing not known, the groups that completed; its JSON, DOT, trace. */
#include "bs_dumps_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_buf.h"
#include "bs_dumps_dot.h"
#include "bs_dumps_graph.h"
#include "bs_dumps_json.h"
#include "bs_dumps_lines.h"
#include "bs_dumps_many.h"
#include "bs_dumps_trace.h"
#include "bs_file.h"

/* The group the block is about: the first desync's, the first root's, the
 * first cycle's, the first stuck op's; -1: none. */
static int shown_group(const bs_dumps_graph *g) {
  for (size_t k = 0; k < g->d->ngroups; k++)
    if (g->gres[k].finding == BS_DUMPS_DESYNC)
      return (int)k;
  if (g->nroots)
    return g->root[0].at.group;
  if (g->ncycles)
    return g->node[g->cycle[0].nodes[0]].at.group;
  return g->nnodes ? g->node[0].at.group : -1;
}

static void group_name(bs_buf *b, const bs_dump_group *g) {
  bs_buf_printf(b, "%s%s%s%s", g->name, g->desc[0] ? " (" : "", g->desc,
                g->desc[0] ? ")" : "");
}

/* torchfrtrace takes the first file it reads (the lowest rank holding the
 * collective) as right: where that rank is a culprit, it blames the
 * others. */
static void torchfrtrace_note(const bs_dumps_graph *g, int k, bs_buf *b) {
  const bs_dumps_gres *r = &g->gres[k];
  const bs_dumps_view *v = &g->view[k];
  int first = -1;
  if (r->finding != BS_DUMPS_DESYNC)
    return;
  for (int i = 0; i < v->n && first < 0; i++)
    first = r->waiting[i] ? i : -1;
  if (first < 0 || !r->culprit[first])
    return;
  bool *pick = calloc((size_t)g->d->ranks + 1, sizeof *pick);
  for (int i = 0; pick && i < v->n; i++)
    pick[v->members[i]] = r->waiting[i] && !r->culprit[i];
  char *others = pick ? bs_report_block_ranks(pick, g->d->ranks) : NULL;
  bs_buf_printf(b,
                "  torchfrtrace takes rank %d's dump (the first it reads) as "
                "right: it would blame %s instead\n",
                v->members[first], others ? others : "the others");
  free(others);
  free(pick);
}

/* The groups that completed, in one line: the first MAX_DONE named, then
 * their number (thousands of TP groups would make a line of kilobytes). */
enum { MAX_DONE = 16, MAX_HELD = 8 };

static void completed(const bs_dumps_graph *g, bs_buf *b) {
  size_t done = 0, named = 0;
  for (size_t o = 0; o < g->d->ngroups; o++)
    done += g->gres[o].finding == BS_DUMPS_CLEAN;
  for (size_t o = 0; o < g->d->ngroups && named < MAX_DONE; o++) {
    if (g->gres[o].finding != BS_DUMPS_CLEAN)
      continue;
    bs_buf_printf(b, "%s", named++ ? ", " : "  completed: process group");
    if (named == 1)
      bs_buf_printf(b, "%s", done > 1 ? "s " : " ");
    group_name(b, &g->d->groups[o]);
  }
  if (done > named)
    bs_buf_printf(b, " and %zu more", done - named);
  if (done)
    bs_buf_printf(b, " (every member's every entry done)\n");
}

/* ---- the block of the group shown ---- */

/* Where each member of group k that waits in another group's op waits
 * (by group rank; NULL: in this group, or nowhere). */
static char **where_of(const bs_dumps_graph *g, int k) {
  const bs_dumps_view *v = &g->view[k];
  char **w = calloc(v->n > 0 ? (size_t)v->n : 1, sizeof *w);
  for (int i = 0; w && i < v->n; i++) {
    int n = g->in[v->members[i]];
    if (n < 0 || g->node[n].at.group == k)
      continue;
    if ((w[i] = malloc(BS_REPORT_DESC)))
      bs_dumps_graph_describe(g, g->node[n].at, w[i], BS_REPORT_DESC);
  }
  return w;
}

/* The group's block, its cause the graph's, its culprit line left to the
 * report (which names every root). */
static bs_status block(const bs_dumps_graph *g, int k, bs_buf *b) {
  bs_status st = BS_OK;
  bs_dumps_view v = g->view[k];
  bs_dumps_gres res = {0};
  bs_buf cause = {0};
  char **where = where_of(g, k);
  if (!where)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: report");
  bs_dumps_lines_cause(g, &cause);
  v.where = (const char *const *)where;
  v.cause = g->finding == BS_DUMPS_DESYNC ? NULL : bs_buf_str(&cause);
  v.quiet = g->finding != BS_DUMPS_DESYNC;
  BS_CHECK(bs_dumps_judge(&v, &res));
  bs_buf_printf(b, "%s", res.text ? res.text : "");
out:
  for (int i = 0; where && i < v.n; i++)
    free(where[i]);
  free(where);
  bs_buf_free(&cause);
  bs_dumps_judge_gres_free(&res);
  return st;
}

/* A p2p root's why: "rank 3 waits in recv from rank 2, p2p #2 (8 x
 * fp32): rank 2 never issued it". */
static void p2p_why(const bs_dumps_graph *g, const bs_dumps_root *r,
                    bs_buf *b) {
  for (size_t k = 0; k < g->nnodes; k++) {
    const bs_dumps_node *n = &g->node[k];
    char what[BS_REPORT_DESC];
    if (!n->at.p2p || n->at.group != r->at.group || n->at.seq != r->at.seq ||
        !n->c || n->c->peer != r->rank)
      continue;
    bs_dumps_p2p_describe(n->c, what, sizeof what);
    bs_buf_printf(b, "rank %d waits in %s: rank %d never issued it%s",
                  n->waiter, what, r->rank,
                  r->kind == BS_ROOT_NO_DUMP ? " (it left no dump)" : "");
    return;
  }
}

/* "  culprit: rank 3 (missing from #2)" (of the group shown; another's
 * named), "  culprit: rank 2 (rank 3 waits in recv from rank 2, p2p #2 (8
 * x fp32): rank 2 never issued it)", "  culprit: ranks 1,6 (the roots, each
 * on its own)". */
static void culprit_line(const bs_dumps_graph *g, int shown, bs_buf *b) {
  int *r = malloc((g->nroots + 1) * sizeof *r);
  for (size_t k = 0; r && k < g->nroots; k++)
    r[k] = g->root[k].rank;
  char *who =
      r && g->nroots ? bs_dumps_lines_ranks(g, r, (int)g->nroots) : NULL;
  const bs_dumps_root *one = g->nroots == 1 ? &g->root[0] : NULL;
  if (who)
    bs_buf_printf(b, "  culprit: %s (", who);
  if (who && one && one->at.p2p)
    p2p_why(g, one, b);
  else if (who && one)
    bs_buf_printf(b, "missing from #%llu%s%s", (unsigned long long)one->at.seq,
                  one->at.group == shown ? "" : " of process group ",
                  one->at.group == shown ? ""
                                         : g->d->groups[one->at.group].name);
  else if (who)
    bs_buf_printf(b, "the roots, each on its own");
  if (who)
    bs_buf_printf(b, ")\n");
  free(who);
  free(r);
}

static bs_status clean_text(const bs_dumps_graph *g, bs_dumps_verdict *v) {
  const bs_dumps *d = g->d;
  if (asprintf(&v->text,
               "backstop: no hang and no desync in %zu dump%s of %d ranks: "
               "every rank completed every entry it holds, in %zu process "
               "group%s, and they match\n",
               d->n, d->n == 1 ? "" : "s", d->ranks, d->ngroups,
               d->ngroups == 1 ? "" : "s") < 0)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: report");
  return BS_OK;
}

static bs_status text_of(const bs_dumps_graph *g, int k, bs_dumps_verdict *v) {
  bs_status st = BS_OK;
  bs_buf b = {0};
  BS_CHECK(block(g, k, &b));
  if (g->finding != BS_DUMPS_DESYNC)
    culprit_line(g, k, &b);
  bs_dumps_lines_roots(g, &b);
  torchfrtrace_note(g, k, &b);
  bs_dumps_lines_held(g, MAX_HELD, &b);
  bs_dumps_lines_cycles(g, &b);
  bs_dumps_lines_unknown(g, &b);
  completed(g, &b);
  if (b.oom)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: report");
  v->text = bs_buf_take(&b);
out:
  bs_buf_free(&b);
  return st;
}

/* The verdict's fields: the shown group's op, the roots as culprits. */
static bs_status fields(const bs_dumps_graph *g, int k, bs_dumps_verdict *v) {
  const bs_dumps_gres *r = k >= 0 ? &g->gres[k] : NULL;
  v->finding = g->finding;
  if (!(v->culprits = calloc(g->nroots + 1, sizeof(int))))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: report");
  for (size_t i = 0; i < g->nroots; i++)
    v->culprits[v->nculprits++] = g->root[i].rank;
  if (!r)
    return BS_OK;
  snprintf(v->pg, sizeof v->pg, "%s", g->d->groups[k].name);
  v->p2p = r->p2p;
  v->stuck_seq = r->seq;
  if (g->nroots && g->root[0].at.group == k && g->finding != BS_DUMPS_DESYNC) {
    v->p2p = g->root[0].at.p2p;
    v->stuck_seq = g->root[0].at.seq;
  }
  if (r->finding == BS_DUMPS_DESYNC) {
    v->mismatch_seq = r->seq;
    v->kind = r->kind;
  }
  return BS_OK;
}

static bs_status extras(const bs_dumps_graph *g, const bs_dumps_report_opts *o,
                        bs_dumps_verdict *v) {
  v->json = bs_dumps_json_of(g);
  if (o && o->dot)
    v->dot = bs_dumps_dot_of(g);
  if (o && o->trace)
    v->trace = bs_dumps_trace_of(g);
  if (!v->json || (o && o->dot && !v->dot) || (o && o->trace && !v->trace))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: report");
  return BS_OK;
}

bs_status bs_dumps_report_with(const bs_dumps *d, const bs_dumps_report_opts *o,
                               bs_dumps_verdict *out) {
  bs_status st = BS_OK;
  bs_dumps_graph g = {0};
  memset(out, 0, sizeof *out);
  BS_CHECK(bs_dumps_graph_build(d, &g));
  int k = shown_group(&g);
  BS_CHECK(fields(&g, k, out));
  if (g.finding == BS_DUMPS_CLEAN || k < 0)
    BS_CHECK(clean_text(&g, out));
  else
    BS_CHECK(text_of(&g, k, out));
  BS_CHECK(extras(&g, o, out));
out:
  if (g.d)
    bs_dumps_graph_free(&g);
  if (st != BS_OK)
    bs_dumps_report_verdict_free(out);
  return st;
}

bs_status bs_dumps_report(const bs_dumps *d, bs_dumps_verdict *out) {
  return bs_dumps_report_with(d, NULL, out);
}

void bs_dumps_report_verdict_free(bs_dumps_verdict *v) {
  free(v->culprits);
  free(v->text);
  free(v->json);
  free(v->dot);
  free(v->trace);
  memset(v, 0, sizeof *v);
}

bs_status bs_dumps_report_publish(const char *what, const char *path,
                                  const char *text) {
  if (bs_file_publish(path, text, strlen(text)) == BS_OK)
    return BS_OK;
  char why[256];
  snprintf(why, sizeof why, "%s", bs_err()->message);
  bs_err_clear();
  return bs_err_fail(BS_ERR_INVALID, NULL, "%s %s: %s", what, path, why);
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
