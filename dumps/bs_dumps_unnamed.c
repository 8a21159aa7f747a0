/* Stuck ops that wait for members the dumps do not name
 * (bs_dumps_unnamed.h). */
#include "bs_dumps_unnamed.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "bs_dumps_cycles.h"
#include "bs_dumps_members.h"
#include "bs_num.h"

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

/* By rank: it may be a member of group grp the dumps do not name. */
static bool *may_of(const bs_dumps_graph *g, int grp) {
  bool *may = calloc((size_t)g->d->ranks + 1, sizeof *may);
  for (int u = 0; may && u < g->d->ranks; u++)
    may[u] = bs_dumps_group_rank(g->d, grp, u) < 0 &&
             !bs_dumps_members_out(g->d, u, grp);
  return may;
}

/* Node k's ways and the ranks that may be its member (w->may, made);
 * false: no rank may be (it is stuck inside the op), or no memory. */
static bool ways_of(bs_dumps_graph *g, int k, ways *w) {
  int grp = g->node[k].at.group;
  *w = (ways){.node = k};
  if (!(w->may = may_of(g, grp)))
    return false;
  for (int u = 0; u < g->d->ranks; u++)
    if (w->may[u])
      add_way(g, w, u);
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

/* ---- where every rank waits ---- */

/* Whether every rank has a dump and waits in a stuck op. */
static bool all_wait(const bs_dumps_graph *g) {
  for (int u = 0; u < g->d->ranks; u++)
    if (!bs_dumps_rank(g->d, u) || g->in[u] < 0)
      return false;
  return true;
}

/* Whether node t waits for exactly the ranks in node u, and they all may
 * be members of u's group (may). */
static bool twin(const bs_dumps_graph *g, int t, int u, const bool *may) {
  const bs_dumps_node *nt = &g->node[t], *nu = &g->node[u];
  if (t == u || !nt->nwaiting || nt->nmissing != nu->nwaiting)
    return false;
  for (int j = 0; j < nt->nwaiting; j++)
    if (!may[nt->waiting[j]])
      return false;
  for (int j = 0; j < nt->nmissing; j++)
    if (g->in[nt->missing[j]] != u)
      return false;
  return true;
}

/* Whether groups a and b were made one right after the other. */
static bool made_next(const bs_dumps *d, int a, int b) {
  long x, y;
  return bs_num_long(d->groups[a].name, 0, LONG_MAX, &x) &&
         bs_num_long(d->groups[b].name, 0, LONG_MAX, &y) &&
         (x == y + 1 || y == x + 1);
}

/* Unnamed node u's twin: the one op that waits for exactly its ranks
 * (of those, the one whose group was made right before or after u's);
 * -1: none. */
static int twin_of(const bs_dumps_graph *g, int u, const bool *may) {
  int to = -1, next = -1, n = 0, nn = 0;
  for (int t = 0; t < (int)g->nnodes; t++) {
    if (!twin(g, t, u, may))
      continue;
    n++;
    to = t;
    if (made_next(g->d, g->node[t].at.group, g->node[u].at.group)) {
      nn++;
      next = t;
    }
  }
  return n == 1 ? to : nn == 1 ? next : -1;
}

/* Unnamed node u's one rank it may be that waits in no stuck op (or left
 * no dump), where that rank is missing from another already (a root
 * either way; none else such that may be it); -1: none. */
static int idle_of(const bs_dumps_graph *g, const bool *may,
                   const bool *blamed) {
  int idle = -1;
  for (int r = 0; r < g->d->ranks; r++) {
    if (!may[r] || (bs_dumps_rank(g->d, r) && g->in[r] >= 0))
      continue;
    if (idle >= 0)
      return -1;
    idle = r;
  }
  return idle >= 0 && blamed[idle] ? idle : -1;
}

/* Node n is taken as waiting for ranks (n of them), members of its group. */
static bs_status take(bs_dumps_graph *g, bs_dumps_node *n, const int *ranks,
                      int nr, const bool *may) {
  if (!(n->missing = malloc((size_t)nr * sizeof *n->missing)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: stuck ops");
  memcpy(n->missing, ranks, (size_t)nr * sizeof *n->missing);
  n->nmissing = nr;
  for (int j = 0; j < nr; j++)
    if (!bs_dumps_order_join(g->order, n->at.group, ranks[j]))
      return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: stuck ops");
  n->matched = false;
  n->unnamed = true;
  n->may_be = bs_report_block_ranks(may, g->d->ranks);
  return BS_OK;
}

static bs_status close_one(bs_dumps_graph *g, int u, bool every,
                           const bool *blamed) {
  bs_status st = BS_OK;
  bs_dumps_node *n = &g->node[u];
  bool *may = may_of(g, n->at.group);
  if (!may)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d ranks", g->d->ranks);
  int t = every ? twin_of(g, u, may) : -1;
  int idle = every ? -1 : idle_of(g, may, blamed);
  if (t >= 0) {
    BS_CHECK(take(g, n, g->node[t].waiting, g->node[t].nwaiting, may));
    n->closed_by = t;
  } else if (idle >= 0) {
    BS_CHECK(take(g, n, &idle, 1, may));
    n->idle = idle;
  }
out:
  free(may);
  return st;
}

bs_status bs_dumps_unnamed_close(bs_dumps_graph *g, const bool *blamed) {
  bs_status st = BS_OK;
  bool every = all_wait(g);
  for (size_t k = 0; k < g->nnodes; k++)
    if (unnamed(g, &g->node[k]))
      BS_CHECK(close_one(g, (int)k, every, blamed));
out:
  return st;
}
