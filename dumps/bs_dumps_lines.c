/* The report's lines about the wait-for graph (bs_dumps_lines.h). */
#include "bs_dumps_lines.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_dumps_graph.h"

char *bs_dumps_lines_ranks(const bs_dumps_graph *g, const int *ranks, int n) {
  bool *pick = calloc((size_t)g->d->ranks + 1, sizeof *pick);
  for (int i = 0; pick && i < n; i++)
    pick[ranks[i]] = true;
  char *s = pick ? bs_report_block_ranks(pick, g->d->ranks) : NULL;
  free(pick);
  return s;
}

static void put_ranks(const bs_dumps_graph *g, const int *ranks, int n,
                      bs_buf *b) {
  char *s = bs_dumps_lines_ranks(g, ranks, n);
  bs_buf_printf(b, "%s", s ? s : "?");
  free(s);
}

static void put_op(const bs_dumps_graph *g, bs_dumps_ref at, bs_buf *b) {
  char what[320];
  bs_dumps_graph_describe(g, at, what, sizeof what);
  bs_buf_printf(b, "%s", what);
}

/* A p2p op's root is named by the op that waits for it: "the recv from
 * rank 2 that rank 3 waits in (p2p #2 of process group 0)". */
static bool put_p2p(const bs_dumps_graph *g, const bs_dumps_root *r,
                    bs_buf *b) {
  for (size_t k = 0; r->at.p2p && k < g->nnodes; k++) {
    const bs_dumps_node *n = &g->node[k];
    if (n->at.group != r->at.group || n->at.seq != r->at.seq || !n->at.p2p ||
        !n->c || n->c->peer != r->rank)
      continue;
    const bs_dump_group *grp = &g->d->groups[n->at.group];
    bs_buf_printf(b,
                  "its %s rank %d, whose %s %s rank %d (p2p #%llu of process "
                  "group %s%s%s%s) waits for it",
                  n->c->kind == BS_DUMP_SEND ? "recv from" : "send to",
                  n->waiter, n->c->kind == BS_DUMP_SEND ? "send" : "recv",
                  n->c->kind == BS_DUMP_SEND ? "to" : "from", r->rank,
                  (unsigned long long)n->at.seq, grp->name,
                  grp->desc[0] ? " (" : "", grp->desc, grp->desc[0] ? ")" : "");
    return true;
  }
  return false;
}

static void put_at(const bs_dumps_graph *g, const bs_dumps_root *r, bs_buf *b) {
  if (!put_p2p(g, r, b))
    put_op(g, r->at, b);
}

void bs_dumps_lines_root(const bs_dumps_graph *g, const bs_dumps_root *r,
                         bs_buf *b) {
  bs_buf_printf(b, "rank %d ", r->rank);
  switch (r->kind) {
  case BS_ROOT_SKIPPED:
    bs_buf_printf(b, "skipped ");
    put_at(g, r, b);
    bs_buf_printf(b, " and went on into ");
    put_op(g, r->went, b);
    break;
  case BS_ROOT_NO_DUMP:
  case BS_ROOT_UNREADABLE:
    bs_buf_printf(b, "%s, missing from ",
                  r->kind == BS_ROOT_NO_DUMP
                      ? "left no dump"
                      : "left a dump that does not read");
    put_at(g, r, b);
    break;
  case BS_ROOT_MISMATCH:
    bs_buf_printf(b, "issued another op than its peers at ");
    put_op(g, r->at, b);
    bs_buf_printf(b, " (%s)", bs_dumps_finding_mismatch_name(r->mismatch));
    break;
  default:
    bs_buf_printf(b, "stalled before ");
    put_at(g, r, b);
  }
}

void bs_dumps_lines_cause(const bs_dumps_graph *g, bs_buf *b) {
  size_t cycles = 0, matched = 0;
  for (size_t k = 0; k < g->nroots && k < 3; k++) {
    bs_buf_printf(b, "%s",
                  k               ? "; "
                  : g->nroots > 1 ? "independent roots: "
                                  : "");
    bs_dumps_lines_root(g, &g->root[k], b);
  }
  if (g->nroots > 3)
    bs_buf_printf(b, "; and %zu more roots", g->nroots - 3);
  for (size_t k = 0; k < g->nnodes; k++)
    matched += g->node[k].matched && !g->node[k].nmissing;
  cycles = g->ncycles;
  if (!g->nroots && cycles)
    bs_buf_printf(b,
                  "an order deadlock: a cycle of waits through %d stuck "
                  "ops, where no rank ran past an op against its peers' "
                  "order (each side issued its op first)",
                  g->cycle[0].n);
  else if (!g->nroots && matched)
    bs_buf_printf(b, "every member of a group is in its stuck op and their "
                     "ops match: stuck inside a matched op (what holds it "
                     "is not in the dumps)");
  else if (!g->nroots)
    bs_buf_printf(b, "the stuck ops wait for no rank the dumps name");
}

/* ---- the roots ---- */

static void root_tail(const bs_dumps_graph *g, const bs_dumps_root *r,
                      bs_buf *b) {
  if (r->kind == BS_ROOT_STALLED && r->last)
    bs_buf_printf(b,
                  ": every op it issued is done, its last of that group #%llu",
                  (unsigned long long)r->last);
  else if (r->kind == BS_ROOT_STALLED)
    bs_buf_printf(b, ": every op it issued is done, none of that group");
  else if (r->kind == BS_ROOT_SKIPPED)
    bs_buf_printf(b, ", where its peers issue this one first");
  if (r->kind == BS_ROOT_SKIPPED && r->waits) {
    bs_buf_printf(b, "; it waits in ");
    put_op(g, r->now, b);
  }
  if (r->nheld > 1) {
    bs_buf_printf(b, " (missing from %d stuck ops%s)", r->nheld,
                  r->order_known ? ""
                                 : ": the dumps do not tell which it would "
                                   "issue first");
  }
}

void bs_dumps_lines_roots(const bs_dumps_graph *g, bs_buf *b) {
  for (size_t k = 0; k < g->nroots; k++) {
    const bs_dumps_root *r = &g->root[k];
    bs_buf_printf(b, "  root: ");
    bs_dumps_lines_root(g, r, b);
    root_tail(g, r, b);
    bs_buf_printf(b, "\n");
    if (strstr(r->frame, ".py:")) /* a Python call site (Backstop's own
                                     frames name its phases) */
      bs_buf_printf(b, "    at %s\n", r->frame);
  }
}

/* ---- the held groups ---- */

enum { MAX_MISSING = 4 };

static void put_missing(const bs_dumps_graph *g, const bs_dumps_node *n,
                        bs_buf *b) {
  for (int i = 0; i < n->nmissing && i < MAX_MISSING; i++) {
    int m = n->missing[i];
    bs_buf_printf(b, "%srank %d", i ? ", " : "", m);
    if (g->rootix[m] >= 0)
      bs_buf_printf(b, " (root)");
    else if (g->in[m] >= 0) {
      bs_buf_printf(b, " (in ");
      put_op(g, g->node[g->in[m]].at, b);
      bs_buf_printf(b, ")");
    }
  }
  if (n->nmissing > MAX_MISSING)
    bs_buf_printf(b, " and %d more", n->nmissing - MAX_MISSING);
}

static void held_line(const bs_dumps_graph *g, size_t k, bool *pick,
                      bs_buf *b) {
  const bs_dumps_node *n = &g->node[k];
  bs_buf_printf(b, "  held: ");
  put_op(g, n->at, b);
  bs_buf_printf(b, ": ");
  put_ranks(g, n->waiting, n->nwaiting, b);
  bs_buf_printf(b, " wait%s", n->nwaiting == 1 ? "s" : "");
  if (!n->nmissing && n->unnamed) {
    bs_buf_printf(b,
                  ", every member the dumps name in it, %s they do not "
                  "name%s\n",
                  n->matched ? "stuck inside it or waiting for one" : "for one",
                  n->scc >= 0 ? "; a cycle of waits" : "");
    return;
  }
  if (!n->nmissing) {
    bs_buf_printf(b, ", every member in it%s\n",
                  n->matched ? " (stuck inside it)" : "");
    return;
  }
  bs_buf_printf(b, " for ");
  put_missing(g, n, b);
  memset(pick, 0, ((size_t)g->d->ranks + 1) * sizeof *pick);
  int roots = bs_dumps_graph_reach(g, (int)k, pick);
  int *who = roots ? malloc((size_t)roots * sizeof *who) : NULL;
  int m = 0;
  for (int r = 0; who && r < g->d->ranks; r++)
    if (pick[r])
      who[m++] = r;
  if (m) {
    bs_buf_printf(b, "; its root%s: ", m == 1 ? "" : "s");
    put_ranks(g, who, m, b);
  } else if (n->scc >= 0) {
    bs_buf_printf(b, "; a cycle of waits");
  }
  free(who);
  bs_buf_printf(b, "\n");
}

void bs_dumps_lines_held(const bs_dumps_graph *g, size_t max, bs_buf *b) {
  bool *pick = calloc((size_t)g->d->ranks + 1, sizeof *pick);
  size_t shown = 0;
  for (size_t k = 0; pick && k < g->nnodes && shown < max; k++)
    if (!g->node[k].desync) {
      held_line(g, k, pick, b);
      shown++;
    }
  if (g->nnodes > shown + (g->finding == BS_DUMPS_DESYNC))
    bs_buf_printf(b, "  held: and %zu more stuck ops\n", g->nnodes - shown);
  free(pick);
}

/* ---- cycles, and what is not known ---- */

void bs_dumps_lines_cycles(const bs_dumps_graph *g, bs_buf *b) {
  for (size_t c = 0; c < g->ncycles; c++) {
    const bs_dumps_cycle *cy = &g->cycle[c];
    bs_buf_printf(b, "  %s:", g->nroots ? "cycle" : "order deadlock");
    for (int i = 0; i < cy->n; i++) {
      const bs_dumps_node *n = &g->node[cy->nodes[i]];
      bs_buf_printf(b, "%s ", i ? ";" : "");
      put_ranks(g, n->waiting, n->nwaiting, b);
      bs_buf_printf(b, " issued ");
      put_op(g, n->at, b);
      bs_buf_printf(b, " first and wait%s in it", n->nwaiting == 1 ? "s" : "");
    }
    bs_buf_printf(b, "\n");
  }
}

void bs_dumps_lines_unknown(const bs_dumps_graph *g, bs_buf *b) {
  for (size_t k = 0; k < g->nunknown; k++)
    bs_buf_printf(b, "  not known: %s\n", g->unknown[k]);
}
