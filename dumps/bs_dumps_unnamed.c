/* Stuck ops that wait for members the dumps do not name
 * (bs_dumps_unnamed.h). */
#include "bs_dumps_unnamed.h"

#include <stdlib.h>
#include <string.h>

#include "bs_dumps_cycles.h"
#include "bs_dumps_members.h"

/* Ways per op (more: it is taken as waiting for no op, which makes no
 * cycle, so what is kept stays certain), choices of ways in all. */
enum { MAX_WAYS = 8, MAX_WORLDS = 256 };

typedef struct ways {
  int node;
  int rank[MAX_WAYS]; /* a rank of each way, -1: the way ends (no op) */
  int n;
  bool full;   /* more than MAX_WAYS: taken as one that ends */
  bool inside; /* it may wait for none: stuck inside it */
  int pick;    /* this choice's way */
  bool *may;   /* by rank: it may be the member */
} ways;

/* The op a rank that may be node k's member waits in, -1: none. */
static int way_of(const bs_dumps_graph *g, int u) {
  return bs_dumps_rank(g->d, u) && g->rootix[u] < 0 ? g->in[u] : -1;
}

static void add_way(const bs_dumps_graph *g, ways *w, int u) {
  int to = way_of(g, u);
  for (int i = 0; i < w->n && !w->full; i++)
    if ((w->rank[i] < 0 ? -1 : way_of(g, w->rank[i])) == to)
      return;
  if (w->full || w->n == MAX_WAYS) {
    w->rank[0] = -1;
    w->n = 1;
    w->full = true;
    return;
  }
  w->rank[w->n++] = to >= 0 ? u : -1;
}

static void add_end(ways *w) {
  if (w->n == MAX_WAYS) {
    w->full = true;
    w->n = 0;
  }
  w->rank[w->n++] = -1;
}

/* Node k's ways and the ranks that may be its member (w->may, made);
 * false: no rank may be (it is stuck inside the op), or no memory. */
static bool ways_of(bs_dumps_graph *g, int k, ways *w) {
  int grp = g->node[k].at.group;
  *w = (ways){.node = k};
  if (!(w->may = calloc((size_t)g->d->ranks + 1, sizeof *w->may)))
    return false;
  for (int u = 0; u < g->d->ranks; u++) {
    w->may[u] = bs_dumps_group_rank(g->d, grp, u) < 0 &&
                !bs_dumps_members_out(g->d, u, grp);
    if (w->may[u])
      add_way(g, w, u);
  }
  /* A collective of one rank has no peer to wait for: one that did not
   * complete waits for a member; one of several may hang inside. */
  bool ends = false;
  for (int i = 0; i < w->n; i++)
    ends = ends || w->rank[i] < 0;
  w->inside = w->n && g->node[k].nwaiting > 1;
  if (w->inside && !ends)
    add_end(w);
  if (!w->n) {
    free(w->may);
    w->may = NULL;
  }
  return w->n > 0;
}

static bool unnamed(const bs_dumps_graph *g, const bs_dumps_node *n) {
  return !n->at.p2p && !n->desync && n->matched && !n->nmissing &&
         !g->d->groups[n->at.group].ranks_known;
}

/* Nodes on a cycle in every choice so far (cert) and, of those, which
 * shared one in each (part: the lowest such node; was: before this one). */
static void refine(const int *comp, int nn, bool *cert, int *part, int *was) {
  memcpy(was, part, (size_t)nn * sizeof *was);
  for (int k = 0; k < nn; k++) {
    cert[k] = cert[k] && comp[k] >= 0;
    part[k] = k;
    for (int j = 0; cert[k] && j < k && part[k] == k; j++)
      if (cert[j] && was[j] == was[k] && comp[j] == comp[k])
        part[k] = part[j];
  }
}

/* Every choice of ways tried: each unnamed op waits for its pick. */
static bs_status worlds(bs_dumps_graph *g, ways *w, int nw, bool *cert,
                        int *part) {
  bs_status st = BS_OK;
  int nn = (int)g->nnodes, total = 1;
  int *comp = malloc(((size_t)nn + 1) * sizeof *comp);
  int *was = malloc(((size_t)nn + 1) * sizeof *was);
  if (!comp || !was)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d stuck ops", nn);
  for (int i = 0; i < nw; i++)
    total *= w[i].n;
  for (int c = 0; c < total; c++) {
    int left = c;
    for (int i = 0; i < nw; i++) {
      bs_dumps_node *n = &g->node[w[i].node];
      w[i].pick = w[i].rank[left % w[i].n];
      left /= w[i].n;
      n->missing = w[i].pick >= 0 ? &w[i].pick : NULL;
      n->nmissing = w[i].pick >= 0;
    }
    int found = bs_dumps_cycles_mark(g, comp, NULL);
    for (int i = 0; i < nw; i++) {
      g->node[w[i].node].missing = NULL;
      g->node[w[i].node].nmissing = 0;
    }
    if (found < 0)
      BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d stuck ops", nn);
    refine(comp, nn, cert, part, was);
  }
out:
  free(comp);
  free(was);
  return st;
}

/* The cycles every choice makes, kept where they are new. */
static bs_status keep(bs_dumps_graph *g, const bool *cert, const int *part) {
  bs_status st = BS_OK;
  int nn = (int)g->nnodes;
  int *nodes = malloc(((size_t)nn + 1) * sizeof *nodes);
  if (!nodes)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d stuck ops", nn);
  for (int p = 0; p < nn; p++) {
    int n = 0;
    bool seen = false;
    for (int k = 0; k < nn; k++)
      if (cert[k] && part[k] == p) {
        seen = seen || g->node[k].scc >= 0;
        nodes[n++] = k;
      }
    if (n > 1 && !seen)
      BS_CHECK(bs_dumps_cycles_add(g, nodes, n));
  }
out:
  free(nodes);
  return st;
}

/* Whether every rank has a dump and waits in a stuck op: no root is
 * left to end a chain of waits. */
static bool all_wait(const bs_dumps_graph *g) {
  for (int u = 0; u < g->d->ranks; u++)
    if (!bs_dumps_rank(g->d, u) || g->in[u] < 0)
      return false;
  return !g->nroots && !g->ncycles;
}

/* Whether node t waits for exactly the ranks that wait in node u: its
 * missing members, or, t's own members not named either, u's ranks may
 * be members of t. */
static bool waits_for_all(const bs_dumps_graph *g, const ways *w, int nw, int t,
                          int u) {
  const bs_dumps_node *nt = &g->node[t], *nu = &g->node[u];
  for (int i = 0; nt->unnamed && i < nw; i++)
    if (w[i].node == t) {
      for (int j = 0; j < nu->nwaiting; j++)
        if (!w[i].may[nu->waiting[j]])
          return false;
      return true;
    }
  if (nt->nmissing != nu->nwaiting)
    return false;
  for (int j = 0; j < nt->nmissing; j++)
    if (g->in[nt->missing[j]] != u)
      return false;
  return true;
}

/* Unnamed op i's pick: a rank of the one op that waits for exactly its
 * ranks and whose ranks may all be its members (two groups of the same
 * ranks, each side in its own op first); -1: none, or several. */
static int closing_pick(const bs_dumps_graph *g, const ways *w, int nw, int i) {
  int u = w[i].node, to = -1;
  for (int t = 0; t < (int)g->nnodes; t++) {
    const bs_dumps_node *nt = &g->node[t];
    bool all = t != u && nt->nwaiting > 0;
    for (int j = 0; all && j < nt->nwaiting; j++)
      all = w[i].may[nt->waiting[j]];
    if (!all || !waits_for_all(g, w, nw, t, u))
      continue;
    if (to >= 0)
      return -1;
    to = t;
  }
  return to >= 0 ? g->node[to].waiting[0] : -1;
}

/* Where every rank waits and no cycle is certain, the unnamed ops' waits
 * close among themselves, unless each of them hangs inside itself (all
 * its members in it, at once): taken as the former. Each waits for the
 * ranks that may be its member and wait in another unnamed op; the
 * cycles those picks make are kept (an order deadlock whose groups the
 * dumps cannot list: the same ranks' two groups, each side's op first). */
static bs_status closing(bs_dumps_graph *g, const ways *w, int nw) {
  bs_status st = BS_OK;
  int nn = (int)g->nnodes;
  int *pick = malloc(((size_t)nw + 1) * sizeof *pick);
  int *comp = malloc(((size_t)nn + 1) * sizeof *comp);
  int *order = malloc(((size_t)nn + 1) * sizeof *order);
  if (!pick || !comp || !order)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d stuck ops", nn);
  for (int i = 0; i < nw; i++) {
    bs_dumps_node *n = &g->node[w[i].node];
    pick[i] = closing_pick(g, w, nw, i);
    n->missing = pick[i] >= 0 ? &pick[i] : NULL;
    n->nmissing = pick[i] >= 0;
  }
  int nc = bs_dumps_cycles_mark(g, comp, order);
  for (int i = 0; i < nw; i++) {
    g->node[w[i].node].missing = NULL;
    g->node[w[i].node].nmissing = 0;
  }
  if (nc < 0)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d stuck ops", nn);
  for (int c = 0, at = 0; c < nc; c++) {
    int n = 0;
    while (at + n < nn && comp[order[at + n]] == c)
      n++;
    BS_CHECK(bs_dumps_cycles_add(g, order + at, n));
    at += n;
  }
  for (int i = 0; i < nw; i++)
    if (pick[i] >= 0 && comp[w[i].node] >= 0)
      g->node[w[i].node].closed_by = g->in[pick[i]];
out:
  free(pick);
  free(comp);
  free(order);
  return st;
}

bs_status bs_dumps_unnamed_find(bs_dumps_graph *g) {
  bs_status st = BS_OK;
  int nn = (int)g->nnodes, nw = 0, total = 1;
  ways *w = calloc((size_t)nn + 1, sizeof *w);
  bool *cert = malloc(((size_t)nn + 1) * sizeof *cert);
  int *part = calloc((size_t)nn + 1, sizeof *part);
  if (!w || !cert || !part)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d stuck ops", nn);
  for (int k = 0; k < nn; k++) {
    cert[k] = true;
    if (!unnamed(g, &g->node[k]) || !ways_of(g, k, &w[nw]))
      continue;
    g->node[k].unnamed = true;
    g->node[k].matched = w[nw].inside;
    if (total * w[nw].n > MAX_WORLDS) { /* one that ends: no cycle made */
      w[nw].n = 1;
      w[nw].rank[0] = -1;
    }
    total *= w[nw++].n;
  }
  if (nw)
    BS_CHECK(worlds(g, w, nw, cert, part));
  if (nw)
    BS_CHECK(keep(g, cert, part));
  if (nw && all_wait(g))
    BS_CHECK(closing(g, w, nw));
  for (int i = 0; i < nw; i++)
    g->node[w[i].node].may_be = bs_report_block_ranks(w[i].may, g->d->ranks);
out:
  for (int i = 0; w && i < nw; i++)
    free(w[i].may);
  free(w);
  free(cert);
  free(part);
  return st;
}
