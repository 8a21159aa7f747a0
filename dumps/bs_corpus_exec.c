/* A corpus program issued until no rank can move (bs_corpus_int.h): a
 * collective of a group completes once every member issued it (by the
 * group's sequence number, as PyTorch matches them), the k-th send from a
 * to b with the k-th receive of b from a; a rank issues its next op once
 * its last completed, a pair's two ops together. */
#include <stdlib.h>
#include <string.h>

#include "bs_corpus_int.h"
#include "bs_vec.h"

size_t bs_corpus_exec_limit(const bs_corpus *c, int r) {
  const bs_corpus_rank *rk = &c->rank[r];
  return rk->stalls && rk->stop < rk->n ? rk->stop : rk->n;
}

int bs_corpus_exec_members(const bs_corpus *c, int g, const int **ranks) {
  *ranks = g ? c->groups[g - 1].ranks : NULL;
  return g ? c->groups[g - 1].n : c->world;
}

/* How many issued each collective, by group and seq; each pair's sends
 * and receives, by (group, from, to). */
typedef struct counts {
  uint32_t **by_seq; /* by group: [seq] */
  size_t *cap;
  struct pair {
    uint64_t key;
    uint32_t sends, recvs;
  } * pair;
  size_t npair; /* a power of two */
  size_t used;
} counts;

static uint64_t pair_key(int g, int from, int to) {
  return ((uint64_t)(unsigned)g << 40) ^ ((uint64_t)(unsigned)from << 20) ^
         (uint64_t)(unsigned)to;
}

static struct pair *pair_of(counts *k, uint64_t key) {
  if (2 * (k->used + 1) > k->npair) {
    size_t n = k->npair ? 2 * k->npair : 256;
    struct pair *t = calloc(n, sizeof *t);
    if (!t)
      return NULL;
    for (size_t i = 0; i < k->npair; i++)
      if (k->pair[i].key) {
        size_t at = (k->pair[i].key * 0x9E3779B97F4A7C15ull >> 17) & (n - 1);
        while (t[at].key)
          at = (at + 1) & (n - 1);
        t[at] = k->pair[i];
      }
    free(k->pair);
    k->pair = t;
    k->npair = n;
  }
  key += 1; /* 0 marks a free slot */
  size_t at = (key * 0x9E3779B97F4A7C15ull >> 17) & (k->npair - 1);
  while (k->pair[at].key && k->pair[at].key != key)
    at = (at + 1) & (k->npair - 1);
  if (!k->pair[at].key) {
    k->pair[at].key = key;
    k->used++;
  }
  return &k->pair[at];
}

static uint32_t *seq_count(counts *k, int g, uint64_t s) {
  size_t had = k->cap[g]; /* every seq below the capacity is counted */
  if (s >= had) {
    if (!bs_vec_grow(&k->by_seq[g], &k->cap[g], (size_t)s + 1,
                     sizeof *k->by_seq[g]))
      return NULL;
    memset(k->by_seq[g] + had, 0, (k->cap[g] - had) * sizeof *k->by_seq[g]);
  }
  return &k->by_seq[g][s];
}

typedef struct exec {
  bs_corpus *c;
  counts k;
  uint64_t **seq; /* by rank, by group: its last collective seq */
  uint64_t **p2p; /* by rank, by group: its last p2p seq */
} exec;

static bool entry(bs_corpus_state *st, bs_corpus_issued e) {
  if (!bs_vec_grow(&st->e, &st->cap, st->n + 1, sizeof *st->e))
    return false;
  st->e[st->n++] = e;
  return true;
}

/* One side of a p2p op of rank r. */
static bool side(exec *x, int r, int op, int g, int part, int peer, bool send) {
  struct pair *p =
      pair_of(&x->k, send ? pair_key(g, r, peer) : pair_key(g, peer, r));
  if (!p)
    return false;
  uint32_t nth = send ? ++p->sends : ++p->recvs;
  return entry(&x->c->st[r], (bs_corpus_issued){.op = op,
                                                .part = part,
                                                .seq = ++x->p2p[r][g],
                                                .p2p = true,
                                                .send = send,
                                                .peer = peer,
                                                .nth = nth});
}

static bool issue(exec *x, int r) {
  bs_corpus_state *st = &x->c->st[r];
  const bs_corpus_op *o = &x->c->rank[r].op[st->next];
  int op = (int)st->next++;
  switch (o->kind) {
  case BS_CK_SEND:
    return side(x, r, op, o->g, 0, o->to, true);
  case BS_CK_RECV:
    return side(x, r, op, o->g, 0, o->from, false);
  case BS_CK_PAIR:
    return (o->to < 0 || side(x, r, op, o->g, 0, o->to, true)) &&
           (o->from < 0 || side(x, r, op, o->g, 1, o->from, false));
  default: {
    uint64_t s = ++x->seq[r][o->g];
    uint32_t *n = seq_count(&x->k, o->g, s);
    if (!n)
      return false;
    (*n)++;
    return entry(st, (bs_corpus_issued){.op = op, .seq = s});
  }
  }
}

static bool done(exec *x, int r, const bs_corpus_issued *e) {
  const bs_corpus_op *o = &x->c->rank[r].op[e->op];
  if (!e->p2p) {
    const int *m;
    uint32_t *n = seq_count(&x->k, o->g, e->seq);
    return n && *n >= (uint32_t)bs_corpus_exec_members(x->c, o->g, &m);
  }
  struct pair *p = pair_of(&x->k, e->send ? pair_key(o->g, r, e->peer)
                                          : pair_key(o->g, e->peer, r));
  return p && (e->send ? p->recvs : p->sends) >= e->nth;
}

/* The entries of rank r's last op all done. */
static bool last_done(exec *x, int r) {
  bs_corpus_state *st = &x->c->st[r];
  for (size_t i = st->n; i > 0 && st->e[i - 1].op == (int)st->next - 1; i--)
    if (!done(x, r, &st->e[i - 1]))
      return false;
  return true;
}

static bool sweep(exec *x, bool *moved, bool *ok) {
  *moved = false;
  for (int r = 0; r < x->c->world && *ok; r++) {
    bs_corpus_state *st = &x->c->st[r];
    while (st->next < bs_corpus_exec_limit(x->c, r) &&
           (st->next == 0 || last_done(x, r))) {
      if (!(*ok = issue(x, r)))
        break;
      *moved = true;
    }
  }
  return *ok;
}

static void settle(exec *x) {
  for (int r = 0; r < x->c->world; r++) {
    bs_corpus_state *st = &x->c->st[r];
    for (size_t i = 0; i < st->n; i++)
      st->e[i].done = done(x, r, &st->e[i]);
    st->waits = st->n && !last_done(x, r);
  }
}

static void exec_free(exec *x) {
  int ng = x->c->ngroups + 1;
  for (int g = 0; x->k.by_seq && g < ng; g++)
    free(x->k.by_seq[g]);
  for (int r = 0; r < x->c->world; r++) {
    free(x->seq ? x->seq[r] : NULL);
    free(x->p2p ? x->p2p[r] : NULL);
  }
  free(x->k.by_seq);
  free(x->k.cap);
  free(x->k.pair);
  free(x->seq);
  free(x->p2p);
}

bs_status bs_corpus_exec_run(bs_corpus *c) {
  bs_status st = BS_OK;
  size_t ng = (size_t)c->ngroups + 1, w = (size_t)c->world;
  exec x = {.c = c};
  bool ok = true, moved = true;
  c->st = calloc(w, sizeof *c->st);
  x.k.by_seq = calloc(ng, sizeof *x.k.by_seq);
  x.k.cap = calloc(ng, sizeof *x.k.cap);
  x.seq = calloc(w, sizeof *x.seq);
  x.p2p = calloc(w, sizeof *x.p2p);
  ok = c->st && x.k.by_seq && x.k.cap && x.seq && x.p2p;
  for (size_t r = 0; ok && r < w; r++)
    ok = (x.seq[r] = calloc(ng, sizeof **x.seq)) &&
         (x.p2p[r] = calloc(ng, sizeof **x.p2p));
  while (ok && moved)
    sweep(&x, &moved, &ok);
  if (!ok)
    BS_FAIL(BS_ERR_NOMEM, NULL, "corpus: running a program of %d ranks",
            c->world);
  settle(&x);
out:
  exec_free(&x);
  return st;
}
