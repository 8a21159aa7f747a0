/* The wait-for graph's cycles (bs_dumps_cycles.h): Tarjan's strongly
 * connected components, without recursion (thousands of stuck ops). */
#include "bs_dumps_cycles.h"

#include <stdlib.h>

#include "bs_vec.h"

typedef struct tarjan {
  const bs_dumps_graph *g;
  int *index, *low, *stack, *edge; /* edge: the next missing member to try */
  bool *on;
  int *call; /* the nodes being visited, deepest last */
  int next, sp, cp;
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

/* The component rooted at k popped: kept when it is a cycle. */
static bs_status pop(tarjan *t, bs_dumps_graph *g, int k) {
  int from = t->sp;
  while (t->stack[--from] != k)
    ;
  int n = t->sp - from;
  for (int i = from; i < t->sp; i++)
    t->on[t->stack[i]] = false;
  if (n < 2) {
    t->sp = from;
    return BS_OK;
  }
  bool grown = bs_vec_grow(&g->cycle, NULL, g->ncycles + 1, sizeof *g->cycle);
  int *nodes = malloc((size_t)n * sizeof *nodes);
  if (!grown || !nodes) {
    free(nodes);
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: cycles");
  }
  for (int i = 0; i < n; i++) {
    nodes[i] = t->stack[from + i];
    g->node[nodes[i]].scc = (int)g->ncycles;
  }
  g->cycle[g->ncycles++] = (bs_dumps_cycle){.nodes = nodes, .n = n};
  t->sp = from;
  return BS_OK;
}

static bs_status visit(tarjan *t, bs_dumps_graph *g, int start) {
  bs_status st = BS_OK;
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
        BS_CHECK(pop(t, g, k));
    }
  }
out:
  return st;
}

bs_status bs_dumps_cycles_find(bs_dumps_graph *g) {
  bs_status st = BS_OK;
  size_t n = g->nnodes + 1;
  tarjan t = {.g = g};
  t.index = malloc(n * sizeof *t.index);
  t.low = calloc(n, sizeof *t.low);
  t.stack = calloc(n, sizeof *t.stack);
  t.edge = calloc(n, sizeof *t.edge);
  t.call = calloc(n, sizeof *t.call);
  t.on = calloc(n, sizeof *t.on);
  if (!t.index || !t.low || !t.stack || !t.edge || !t.call || !t.on)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %zu stuck ops", g->nnodes);
  for (size_t k = 0; k < n; k++)
    t.index[k] = -1;
  for (size_t k = 0; k < g->nnodes; k++)
    if (t.index[k] < 0)
      BS_CHECK(visit(&t, g, (int)k));
out:
  free(t.index);
  free(t.low);
  free(t.stack);
  free(t.edge);
  free(t.call);
  free(t.on);
  return st;
}
