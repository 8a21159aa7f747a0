/* The wait-for graph's roots (bs_dumps_roots.h). */
#include "bs_dumps_roots.h"

#include <stdlib.h>
#include <string.h>

#include "bs_vec.h"

static bs_dumps_root *root_for(bs_dumps_graph *g, int r) {
  if (g->rootix[r] >= 0)
    return &g->root[g->rootix[r]];
  if (!bs_vec_grow(&g->root, &g->caproots, g->nroots + 1, sizeof *g->root))
    return NULL;
  g->rootix[r] = (int)g->nroots;
  bs_dumps_root *rt = &g->root[g->nroots++];
  *rt = (bs_dumps_root){.rank = r, .frame = ""};
  return rt;
}

static bool same_ref(bs_dumps_ref a, bs_dumps_ref b) {
  return a.group == b.group && a.seq == b.seq && a.p2p == b.p2p;
}

/* Room for one more in rt's held, held_kind and held_went (they grow
 * alike). */
static bool room(bs_dumps_root *rt) {
  size_t need = (size_t)rt->nheld + 1;
  size_t c[3] = {rt->capheld, rt->capheld, rt->capheld};
  if (!bs_vec_grow(&rt->held, &c[0], need, sizeof *rt->held) ||
      !bs_vec_grow(&rt->held_kind, &c[1], need, sizeof *rt->held_kind) ||
      !bs_vec_grow(&rt->held_went, &c[2], need, sizeof *rt->held_went))
    return false;
  rt->capheld = c[0];
  return true;
}

/* One more stuck op rank r is missing from, with what it did there. */
static bs_status held(bs_dumps_graph *g, int r, bs_dumps_ref at,
                      bs_dumps_root_kind kind, bs_dumps_ref went) {
  bs_dumps_root *rt = root_for(g, r);
  for (int i = 0; rt && i < rt->nheld; i++)
    if (same_ref(rt->held[i], at))
      return BS_OK;
  if (!rt || !room(rt))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: roots");
  rt->held[rt->nheld] = at;
  rt->held_kind[rt->nheld] = kind;
  rt->held_went[rt->nheld++] = went;
  return BS_OK;
}

/* ---- a desync's ---- */

static bs_status desync_roots(bs_dumps_graph *g) {
  bs_status st = BS_OK;
  for (size_t k = 0; k < g->d->ngroups; k++) {
    const bs_dumps_gres *r = &g->gres[k];
    const bs_dumps_view *v = &g->view[k];
    bs_dumps_ref at = {.group = (int)k, .seq = r->seq};
    for (int i = 0; r->finding == BS_DUMPS_DESYNC && i < v->n; i++)
      if (r->culprit[i]) {
        BS_CHECK(held(g, v->members[i], at, BS_ROOT_MISMATCH,
                      (bs_dumps_ref){.group = -1}));
        g->root[g->rootix[v->members[i]]].mismatch = r->kind;
      }
  }
out:
  return st;
}

/* ---- a hang's ---- */

/* What missing member m is to stuck op n: a root of some kind (true), or
 * waiting in another stuck op (false). */
static bool root_kind(bs_dumps_graph *g, const bs_dumps_node *n, int m,
                      bs_dumps_root_kind *kind, bs_dumps_ref *went) {
  *went = (bs_dumps_ref){.group = -1};
  if (!bs_dumps_rank(g->d, m)) {
    *kind = bs_dumps_bad_rank(g->d, m) ? BS_ROOT_UNREADABLE : BS_ROOT_NO_DUMP;
    return true;
  }
  if (!n->at.p2p &&
      bs_dumps_order_ran_past(g->order, m, n->at.group, n->at.seq, went)) {
    *kind = BS_ROOT_SKIPPED;
    return true;
  }
  /* Its peer waits for its side of a p2p op, having issued no such
   * collective as it waits in: it went on past its own op (its peer
   * issues the p2p op first). */
  const bs_dumps_node *in = g->in[m] >= 0 ? &g->node[g->in[m]] : NULL;
  if (n->at.p2p && in && !in->at.p2p &&
      !bs_dumps_order_issued(g->order, n->waiter, in->at.group, in->at.seq)) {
    *kind = BS_ROOT_SKIPPED;
    *went = in->at;
    return true;
  }
  *kind = BS_ROOT_STALLED;
  return g->in[m] < 0;
}

static bs_status hang_roots(bs_dumps_graph *g) {
  bs_status st = BS_OK;
  for (size_t k = 0; k < g->nnodes; k++) {
    const bs_dumps_node *n = &g->node[k];
    for (int i = 0; !n->matched && i < n->nmissing; i++) {
      bs_dumps_root_kind kind;
      bs_dumps_ref went;
      if (root_kind(g, n, n->missing[i], &kind, &went))
        BS_CHECK(held(g, n->missing[i], n->at, kind, went));
    }
  }
out:
  return st;
}

/* ---- each root at its first op ---- */

/* Rank r's entry of op `at` (NULL: its dump holds none). */
static const bs_dump_coll *entry(const bs_dumps_graph *g, int r,
                                 bs_dumps_ref at) {
  const bs_dump_pg *p = bs_dumps_pg_of(bs_dumps_rank(g->d, r), at.group);
  for (size_t k = 0; p && k < p->n; k++)
    if (p->c[k].seq == at.seq && p->c[k].p2p == at.p2p)
      return &p->c[k];
  return NULL;
}

/* Rank r's last entry (NULL: none). */
static const bs_dump_coll *last_entry(const bs_dumps_graph *g, int r) {
  const bs_dump *dp = bs_dumps_rank(g->d, r);
  const bs_dump_coll *last = NULL;
  for (size_t k = 0; dp && k < dp->npg; k++) {
    const bs_dump_pg *p = &dp->pg[k];
    if (p->n && (!last || p->c[p->n - 1].rid > last->rid))
      last = &p->c[p->n - 1];
  }
  return last;
}

static void settle(bs_dumps_graph *g, bs_dumps_root *rt) {
  bool known = true;
  int pick = rt->nheld > 1 ? bs_dumps_order_first(g->order, rt->rank, rt->held,
                                                  rt->nheld, &known)
                           : 0;
  const bs_dump_coll *c = NULL;
  rt->at = rt->held[pick];
  rt->kind = rt->held_kind[pick];
  rt->went = rt->held_went[pick];
  rt->order_known = known;
  if (rt->kind == BS_ROOT_SKIPPED) {
    if (!rt->at.p2p)
      rt->at.seq = bs_dumps_order_first_past(g->order, rt->rank, rt->at.group,
                                             rt->at.seq);
    c = entry(g, rt->rank, rt->went);
  } else if (rt->kind == BS_ROOT_STALLED) {
    rt->last = bs_dumps_order_last(g->order, rt->rank, rt->at.group);
  } else if (rt->kind == BS_ROOT_MISMATCH) {
    c = entry(g, rt->rank, rt->at);
  }
  c = c ? c : last_entry(g, rt->rank);
  rt->frame = c && c->frame ? c->frame : "";
  rt->waits = g->in[rt->rank] >= 0;
  if (rt->waits)
    rt->now = g->node[g->in[rt->rank]].at;
}

static int by_rank(const void *a, const void *b) {
  int x = ((const bs_dumps_root *)a)->rank,
      y = ((const bs_dumps_root *)b)->rank;
  return (x > y) - (x < y);
}

bs_status bs_dumps_roots_find(bs_dumps_graph *g) {
  bs_status st = BS_OK;
  bool desync = false;
  for (size_t k = 0; k < g->d->ngroups; k++)
    desync = desync || g->gres[k].finding == BS_DUMPS_DESYNC;
  /* A desync's roots alone: the stuck ops it leaves are its doing. */
  BS_CHECK(desync ? desync_roots(g) : hang_roots(g));
  for (size_t k = 0; k < g->nroots; k++)
    settle(g, &g->root[k]);
  if (g->nroots)
    qsort(g->root, g->nroots, sizeof *g->root, by_rank);
  for (size_t k = 0; k < g->nroots; k++)
    g->rootix[g->root[k].rank] = (int)k;
out:
  return st;
}
