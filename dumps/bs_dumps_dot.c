/* The wait-for graph as DOT (bs_dumps_dot.h). */
#include "bs_dumps_dot.h"

#include <stdlib.h>
#include <string.h>

#include "bs_buf.h"
#include "bs_dumps_graph.h"
#include "bs_dumps_lines.h"

/* A DOT string's text: quotes and backslashes escaped. */
static void esc(bs_buf *b, const char *s) {
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      bs_buf_printf(b, "\\");
    bs_buf_printf(b, "%c", *s);
  }
}

static void put_ranks(const bs_dumps_graph *g, const int *r, int n, bs_buf *b) {
  char *s = bs_dumps_lines_ranks(g, r, n);
  bs_buf_printf(b, "%s", s ? s : "?");
  free(s);
}

static void op_node(const bs_dumps_graph *g, size_t k, bs_buf *b) {
  const bs_dumps_node *n = &g->node[k];
  char what[320];
  bs_dumps_graph_describe(g, n->at, what, sizeof what);
  bs_buf_printf(b, "  op%zu [shape=box, label=\"", k);
  esc(b, what);
  bs_buf_printf(b, "\\n");
  put_ranks(g, n->waiting, n->nwaiting, b);
  bs_buf_printf(b, " wait%s%s\"%s];\n", n->nwaiting == 1 ? "s" : "",
                n->matched && !n->nmissing ? "\\n(every member in it)" : "",
                n->scc >= 0 ? ", color=red" : "");
}

/* The roots of one kind at one op as one node: root<k> for root k, the
 * first of its run. */
static bool same_root(const bs_dumps_root *a, const bs_dumps_root *b) {
  return a->kind == b->kind && a->at.group == b->at.group &&
         a->at.seq == b->at.seq && a->at.p2p == b->at.p2p;
}

static size_t run_of(const bs_dumps_graph *g, size_t k) {
  while (k > 0 && same_root(&g->root[k - 1], &g->root[k]))
    k--;
  return k;
}

static void root_nodes(const bs_dumps_graph *g, bs_buf *b) {
  for (size_t k = 0; k < g->nroots;) {
    size_t e = k + 1;
    while (e < g->nroots && same_root(&g->root[k], &g->root[e]))
      e++;
    int *r = malloc((e - k) * sizeof *r);
    for (size_t i = k; r && i < e; i++)
      r[i - k] = g->root[i].rank;
    char what[320];
    bs_dumps_graph_describe(g, g->root[k].at, what, sizeof what);
    bs_buf_printf(b,
                  "  root%zu [shape=ellipse, style=filled, "
                  "fillcolor=salmon, label=\"",
                  k);
    if (r)
      put_ranks(g, r, (int)(e - k), b);
    bs_buf_printf(b, "\\n%s ", bs_dumps_graph_kind_name(g->root[k].kind));
    esc(b, what);
    bs_buf_printf(b, "\"];\n");
    free(r);
    k = e;
  }
}

/* Where an arrow for missing member m goes: the op it waits in (>= 0),
 * its run of roots (-2 - run), nowhere (-1). */
static int target(const bs_dumps_graph *g, int m) {
  return g->rootix[m] >= 0 ? -2 - (int)run_of(g, (size_t)g->rootix[m])
                           : g->in[m];
}

/* Node k's arrows: one per op its missing members wait in, one per run of
 * roots among them, labelled with those members. */
static void arrows(const bs_dumps_graph *g, size_t k, int *buf, bool *done,
                   bs_buf *b) {
  const bs_dumps_node *n = &g->node[k];
  memset(done, 0, (size_t)n->nmissing + 1);
  for (int i = 0; i < n->nmissing; i++) {
    int to = target(g, n->missing[i]), c = 0;
    if (done[i] || to == -1)
      continue;
    for (int j = i; j < n->nmissing; j++)
      if (!done[j] && target(g, n->missing[j]) == to) {
        done[j] = true;
        buf[c++] = n->missing[j];
      }
    if (to >= 0)
      bs_buf_printf(b, "  op%zu -> op%d [label=\"", k, to);
    else
      bs_buf_printf(b, "  op%zu -> root%d [label=\"", k, -2 - to);
    put_ranks(g, buf, c, b);
    bool red = to >= 0 && n->scc >= 0 && g->node[to].scc == n->scc;
    bs_buf_printf(b, "\"%s];\n", red ? ", color=red" : "");
  }
}

char *bs_dumps_dot_of(const bs_dumps_graph *g) {
  bs_buf b = {0};
  int *buf = malloc(((size_t)g->d->ranks + 1) * sizeof *buf);
  bool *done = malloc((size_t)g->d->ranks + 1);
  if (!buf || !done) {
    free(buf);
    free(done);
    return NULL;
  }
  bs_buf_printf(&b,
                "digraph waits {\n  rankdir=LR;\n  label=\"backstop "
                "analyze: %s, %zu root%s, %zu cycle%s\";\n",
                g->finding == BS_DUMPS_DESYNC ? "desync"
                : g->finding == BS_DUMPS_HANG ? "hang"
                                              : "no hang",
                g->nroots, g->nroots == 1 ? "" : "s", g->ncycles,
                g->ncycles == 1 ? "" : "s");
  for (size_t k = 0; k < g->nnodes; k++)
    op_node(g, k, &b);
  root_nodes(g, &b);
  for (size_t k = 0; k < g->nnodes; k++)
    arrows(g, k, buf, done, &b);
  bs_buf_printf(&b, "}\n");
  free(buf);
  free(done);
  return bs_buf_take(&b);
}
