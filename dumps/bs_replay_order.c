/* The order of a rank without a dump (bs_replay_int.h). Its ops are known
 * from its peers' dumps, stream by stream: each of its groups' collectives
 * in their numbers' order, its p2p ops with each peer in that peer's order.
 * Across streams the order is a peer's: a rank in two of them issued their
 * ops in the order the rank without a dump did (NCCL runs a rank's ops in
 * the order it issued them, so ops both ranks completed cannot have been
 * issued in other orders), and its dump says which (entry by entry, by the
 * place it recorded them: no clock). Each pair of streams is ordered by one
 * rank in both. Times, which come from the peers' clocks (skewed host by
 * host), only break ties, and order what no peer's dump relates. */
#include <limits.h>
#include <stdlib.h>

#include "bs_replay_int.h"
#include "bs_sched_heap.h"
#include "bs_vec.h"

typedef struct stream {
  int group;
  int peer; /* -1: the group's collectives; else p2p with that rank */
} stream;

typedef struct edge {
  size_t from, to;
} edge;

typedef struct order {
  const bs_replay_state *r;
  const bs_replay_step *s;
  const bs_dump_coll *const *src; /* p2p: the peer's entry; else NULL */
  size_t n;
  int *of; /* by step: its stream */
  stream *st;
  size_t nst;
  edge *e;
  size_t ne, cap;
  struct placed {
    uint64_t rid;
    size_t step;
  } * p; /* a reference rank's entries of two streams */
} order;

static bool is_p2p(const bs_replay_step *s) {
  return s->op == BS_COLL_SEND || s->op == BS_COLL_RECV;
}

/* Each step's stream (few: a rank's groups and p2p peers). */
static void streams(order *o) {
  for (size_t i = 0; i < o->n; i++) {
    stream k = {o->s[i].group, is_p2p(&o->s[i]) ? o->s[i].peer : -1};
    size_t j = 0;
    while (j < o->nst && (o->st[j].group != k.group || o->st[j].peer != k.peer))
      j++;
    if (j == o->nst)
      o->st[o->nst++] = k;
    o->of[i] = (int)j;
  }
}

static bs_status add_edge(order *o, size_t from, size_t to) {
  if (!bs_vec_grow(&o->e, &o->cap, o->ne + 1, sizeof *o->e))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu order edges",
                       o->ne + 1);
  o->e[o->ne++] = (edge){from, to};
  return BS_OK;
}

/* Whether rank q (with a dump) took part in stream t. */
static bool in_stream(const order *o, const stream *t, int q) {
  if (t->peer >= 0)
    return t->peer == q;
  return bs_dumps_group_rank(o->r->d, t->group, q) >= 0;
}

/* A rank with a dump in streams a and b (-1: none): the p2p peer of
 * either, else a member of the smaller group that is in the other. */
static int reference(const order *o, const stream *a, const stream *b) {
  const bs_dumps *d = o->r->d;
  if (a->peer >= 0 || b->peer >= 0) {
    int q = a->peer >= 0 ? a->peer : b->peer;
    return bs_dumps_rank(d, q) && in_stream(o, a, q) && in_stream(o, b, q) ? q
                                                                           : -1;
  }
  const bs_dump_group *ga = &d->groups[a->group], *gb = &d->groups[b->group];
  const bs_dump_group *small = ga->n <= gb->n ? ga : gb;
  const stream *other = small == ga ? b : a;
  for (int m = 0; m < small->n; m++)
    if (bs_dumps_rank(d, small->ranks[m]) &&
        in_stream(o, other, small->ranks[m]))
      return small->ranks[m];
  return -1;
}

/* Rank q's entry of step i (NULL: its dump does not hold it). */
static const bs_dump_coll *entry_of(const order *o, size_t i, int q) {
  if (o->src[i])
    return o->src[i];
  const bs_dump *dq = bs_dumps_rank(o->r->d, q);
  const bs_dump_pg *pg = dq ? bs_dumps_pg_of(dq, o->s[i].group) : NULL;
  return pg ? bs_dumps_pg_find(pg, o->s[i].seq) : NULL;
}

static int by_rid(const void *x, const void *y) {
  const struct placed *a = x, *b = y;
  return (a->rid > b->rid) - (a->rid < b->rid);
}

/* Streams a and b in rank q's order: an edge from each of their steps to
 * the next one q issued. */
static bs_status chain(order *o, int a, int b, int q) {
  bs_status st = BS_OK;
  size_t np = 0;
  for (size_t i = 0; i < o->n; i++) {
    const bs_dump_coll *c =
        o->of[i] == a || o->of[i] == b ? entry_of(o, i, q) : NULL;
    if (c)
      o->p[np++] = (struct placed){c->rid, i};
  }
  qsort(o->p, np, sizeof *o->p, by_rid);
  for (size_t k = 1; k < np; k++)
    BS_CHECK(add_edge(o, o->p[k - 1].step, o->p[k].step));
out:
  return st;
}

/* Each stream in its own order; each pair of streams in a reference
 * rank's. */
static bs_status edges(order *o) {
  bs_status st = BS_OK;
  size_t *last = calloc(o->nst + 1, sizeof *last); /* by stream: + 1 */
  if (!last)
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %zu streams", o->nst);
  for (size_t i = 0; i < o->n; i++) {
    if (last[o->of[i]])
      BS_CHECK(add_edge(o, last[o->of[i]] - 1, i));
    last[o->of[i]] = i + 1;
  }
  for (size_t a = 0; a < o->nst; a++)
    for (size_t b = a + 1; b < o->nst; b++) {
      int q = reference(o, &o->st[a], &o->st[b]);
      if (q >= 0)
        BS_CHECK(chain(o, (int)a, (int)b, q));
    }
out:
  free(last);
  return st;
}

static int by_from(const void *x, const void *y) {
  const edge *a = x, *b = y;
  return (a->from > b->from) - (a->from < b->from);
}

/* The steps in q into out from *placed on, earliest first (ties: the
 * lower step, the order read); those with no edge left into them go in as
 * each leaves. */
static void drain(order *o, bs_sched_heap *q, size_t *indeg,
                  const size_t *first, size_t *out, size_t *placed) {
  uint64_t when;
  for (int v; (v = bs_sched_heap_top(q, &when)) >= 0;) {
    bs_sched_heap_drop(q, v);
    out[(*placed)++] = (size_t)v;
    for (size_t k = first[v]; indeg && k < first[v + 1]; k++)
      if (--indeg[o->e[k].to] == 0)
        bs_sched_heap_set(q, (int)o->e[k].to, o->s[o->e[k].to].at_ns);
  }
}

/* Kahn's topological order into out, by time among the steps free to go;
 * what a cycle (dumps at odds) leaves out follows by time. */
static void topo(order *o, size_t *indeg, size_t *first, bs_sched_heap *q,
                 size_t *out) {
  size_t placed = 0;
  if (o->ne) /* NULL when none: no qsort */
    qsort(o->e, o->ne, sizeof *o->e, by_from);
  for (size_t k = 0; k < o->ne; k++)
    indeg[o->e[k].to]++;
  for (size_t i = 0, k = 0; i <= o->n; i++) {
    for (; k < o->ne && o->e[k].from < i; k++)
      ;
    first[i] = k;
  }
  for (size_t i = 0; i < o->n; i++)
    if (indeg[i] == 0)
      bs_sched_heap_set(q, (int)i, o->s[i].at_ns);
  drain(o, q, indeg, first, out, &placed);
  for (size_t i = 0; i < o->n; i++)
    if (indeg[i] > 0)
      bs_sched_heap_set(q, (int)i, o->s[i].at_ns);
  drain(o, q, NULL, first, out, &placed);
}

bs_status bs_replay_order(const bs_replay_state *r, bs_replay_step *s,
                          const bs_dump_coll *const *src, size_t n) {
  bs_status st = BS_OK;
  order o = {.r = r, .s = s, .src = src, .n = n};
  size_t *indeg = calloc(n + 1, sizeof *indeg);
  size_t *first = calloc(n + 1, sizeof *first);
  size_t *out = calloc(n + 1, sizeof *out);
  bs_sched_heap q = {0};
  bs_replay_step *copy = malloc((n + 1) * sizeof *copy);
  o.of = calloc(n + 1, sizeof *o.of);
  o.st = calloc(n + 1, sizeof *o.st);
  o.p = calloc(n + 1, sizeof *o.p);
  if (n > INT_MAX)
    BS_FAIL(BS_ERR_INVALID, NULL, "replay: %zu ops of one rank", n);
  if (!bs_sched_heap_init(&q, (int)n + 1) || !indeg || !first || !out ||
      !copy || !o.of || !o.st || !o.p)
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: the order of %zu ops", n);
  streams(&o);
  BS_CHECK(edges(&o));
  topo(&o, indeg, first, &q, out);
  for (size_t k = 0; k < n; k++)
    copy[k] = s[out[k]];
  for (size_t k = 0; k < n; k++) {
    s[k] = copy[k];
    s[k].order = k;
  }
out:
  free(indeg);
  free(first);
  free(out);
  bs_sched_heap_fini(&q);
  free(copy);
  free(o.of);
  free(o.st);
  free(o.p);
  free(o.e);
  return st;
}
