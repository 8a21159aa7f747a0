/* The wait-for graph's cycles (bs_dumps_cycles.h): Tarjan's strongly
 * connected components, without recursion (thousands of stuck ops). */
#include "bs_dumps_cycles.h"

#include <stdlib.h>

#include "bs_vec.h"

typedef struct tarjan {
  const bs_dumps_graph *g;
  int *index, *low, *stack, *edge; /* edge: the next missing member to try */
  bool *on;
  int *call;  /* the nodes being visited, deepest last */
  int *comp;  /* out: each node's cycle, -1: none */
  int *order; /* out: the cycles' nodes, cycle by cycle, as Tarjan met them */
  int next, sp, cp, ncomp, norder;
} tarjan;

/* Node k's next successor from edge t->edge[k] on, -1: none left. */
static int successor(tarjan *t, int k) {
  const bs_dumps_node *n = &t->g->node[k];
  while (t->edge[k] < n->nmissing) {
    int m = n->missing[t->edge[k]++];
    if (t->g->rootix[m] < 0 && t->g->in[m] >= 0)
      return t->g->in[m];
  }
  return -1;
}

static void enter(tarjan *t, int k) {
  t->index[k] = t->low[k] = t->next++;
  t->stack[t->sp++] = k;
  t->on[k] = true;
  t->call[t->cp++] = k;
}

/* The component rooted at k popped: numbered when it is a cycle. */
static void pop(tarjan *t, int k) {
  int from = t->sp;
  while (t->stack[--from] != k)
    ;
  bool cycle = t->sp - from > 1;
  for (int i = from; i < t->sp; i++) {
    t->on[t->stack[i]] = false;
    t->comp[t->stack[i]] = cycle ? t->ncomp : -1;
    if (cycle)
      t->order[t->norder++] = t->stack[i];
  }
  t->ncomp += t->sp - from > 1;
  t->sp = from;
}

static void visit(tarjan *t, int start) {
  enter(t, start);
  while (t->cp > 0) {
    int k = t->call[t->cp - 1], s = successor(t, k);
    if (s >= 0 && t->index[s] < 0) {
      enter(t, s);
    } else if (s >= 0) {
      if (t->on[s] && t->index[s] < t->low[k])
        t->low[k] = t->index[s];
    } else {
      t->cp--;
      if (t->cp > 0 && t->low[k] < t->low[t->call[t->cp - 1]])
        t->low[t->call[t->cp - 1]] = t->low[k];
      if (t->low[k] == t->index[k])
        pop(t, k);
    }
  }
}

int bs_dumps_cycles_mark(const bs_dumps_graph *g, int *comp, int *order) {
  size_t n = g->nnodes + 1;
  tarjan t = {.g = g, .comp = comp, .order = order};
  t.index = malloc(n * sizeof *t.index);
  t.low = calloc(n, sizeof *t.low);
  t.stack = calloc(n, sizeof *t.stack);
  t.edge = calloc(n, sizeof *t.edge);
  t.call = calloc(n, sizeof *t.call);
  t.on = calloc(n, sizeof *t.on);
  if (!order)
    t.order = malloc(n * sizeof *t.order);
  bool ok = t.index && t.low && t.stack && t.edge && t.call && t.on && t.order;
  for (size_t k = 0; ok && k < n; k++)
    t.index[k] = -1;
  for (size_t k = 0; ok && k < g->nnodes; k++)
    if (t.index[k] < 0)
      visit(&t, (int)k);
  free(t.index);
  free(t.low);
  free(t.stack);
  free(t.edge);
  free(t.call);
  free(t.on);
  if (!order)
    free(t.order);
  return ok ? t.ncomp : -1;
}

bs_status bs_dumps_cycles_add(bs_dumps_graph *g, const int *nodes, int n) {
  bool grown = bs_vec_grow(&g->cycle, NULL, g->ncycles + 1, sizeof *g->cycle);
  int *copy = malloc(((size_t)n + 1) * sizeof *copy);
  if (!grown || !copy) {
    free(copy);
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: cycles");
  }
  for (int i = 0; i < n; i++) {
    copy[i] = nodes[i];
    g->node[nodes[i]].scc = (int)g->ncycles;
  }
  g->cycle[g->ncycles++] = (bs_dumps_cycle){.nodes = copy, .n = n};
  return BS_OK;
}

bs_status bs_dumps_cycles_find(bs_dumps_graph *g) {
  bs_status st = BS_OK;
  int *comp = malloc((g->nnodes + 1) * sizeof *comp);
  int *nodes = malloc((g->nnodes + 1) * sizeof *nodes);
  int ncomp = comp && nodes ? bs_dumps_cycles_mark(g, comp, nodes) : -1;
  if (ncomp < 0)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %zu stuck ops", g->nnodes);
  int on = 0; /* nodes on a cycle: those of order filled */
  for (size_t k = 0; k < g->nnodes; k++)
    on += comp[k] >= 0;
  for (int c = 0, at = 0; c < ncomp; c++) {
    int n = 0;
    while (at + n < on && comp[nodes[at + n]] == c)
      n++;
    BS_CHECK(bs_dumps_cycles_add(g, nodes + at, n));
    at += n;
  }
out:
  free(comp);
  free(nodes);
  return st;
}
