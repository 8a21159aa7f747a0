/* Which p2p ops the replay pairs (bs_replay_int.h). A send from a to b is
 * matched with b's receive from a by their places: the k-th of one is the
 * k-th of the other, counted from the job's start. A ring that forgot
 * entries leaves that count unknown, and a long job's rings always have
 * (2000 entries by default): replayed as held, a send whose receive the
 * other ring forgot pairs with the wrong receive. So in a group where a
 * ring forgot entries, each direction (a's sends to b, b's receives from
 * a) is aligned at its last completed op: ops complete in the order a rank
 * issued them, and every completed send had its receive completed, so the
 * last completed of one is the last completed of the other. What one side
 * holds before the other's oldest is left out of the replay (done, long
 * ago). Checked, not assumed: completed ops first on each side, each pair
 * of one size and done alike, an op whose pair the other side never issued
 * not done; a batch, or what fails that, leaves the group's p2p ops out of
 * the replay, as a ring that forgot entries did before. */
#include <stdint.h>
#include <stdlib.h>

#include "bs_replay_int.h"
#include "bs_vec.h"

/* A p2p op of the group: whose, with whom, which way. */
typedef struct held {
  int rank, peer;
  bs_dump_kind kind;
  uint64_t seq;
  const bs_dump_coll *c;
} held;

typedef struct pairs {
  bs_replay_state *r;
  int g;
  held *h;
  size_t n, cap;
  bool batch;
} pairs;

/* One rank's ops to one peer one way against another's: rank, peer, way. */
static int by_direction(int ra, int pa, bs_dump_kind ka, int rb, int pb,
                        bs_dump_kind kb) {
  if (ra != rb)
    return (ra > rb) - (ra < rb);
  if (pa != pb)
    return (pa > pb) - (pa < pb);
  return (ka > kb) - (ka < kb);
}

static int by_way(const void *x, const void *y) {
  const held *a = x, *b = y;
  int c = by_direction(a->rank, a->peer, a->kind, b->rank, b->peer, b->kind);
  return c ? c : (a->seq > b->seq) - (a->seq < b->seq);
}

/* Every member's p2p ops of the group, by rank, peer, way and number. */
static bs_status gather(pairs *p) {
  const bs_dumps *d = p->r->d;
  const bs_dump_group *dg = &d->groups[p->g];
  for (int m = 0; m < dg->n; m++) {
    const bs_dump *dm = bs_dumps_rank(d, dg->ranks[m]);
    const bs_dump_pg *pg = dm ? bs_dumps_pg_of(dm, p->g) : NULL;
    for (size_t k = 0; pg && k < pg->n; k++) {
      const bs_dump_coll *c = &pg->c[k];
      if (!c->p2p)
        continue;
      p->batch = p->batch || c->nparts || c->kind == BS_DUMP_COLL;
      if (!bs_vec_grow(&p->h, &p->cap, p->n + 1, sizeof *p->h))
        return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu p2p ops", p->n + 1);
      p->h[p->n++] = (held){dm->rank, c->peer, c->kind, c->seq, c};
    }
  }
  if (p->n)
    qsort(p->h, p->n, sizeof *p->h, by_way);
  return BS_OK;
}

/* The ops of one rank to one peer one way: [*from, *to) of p->h. */
static void way(const pairs *p, int rank, int peer, bs_dump_kind kind,
                size_t *from, size_t *to) {
  held key = {rank, peer, kind, 0, NULL};
  size_t lo = 0, hi = p->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (by_way(&p->h[mid], &key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *from = *to = lo;
  while (*to < p->n && p->h[*to].rank == rank && p->h[*to].peer == peer &&
         p->h[*to].kind == kind)
    (*to)++;
}

static bool done(const held *h) {
  return h->c->state == BS_DUMP_COMPLETED;
}

/* How many of n ops are done, all before the others (-1: not so). */
static long done_first(const held *h, size_t n) {
  size_t k = 0;
  while (k < n && done(&h[k]))
    k++;
  for (size_t j = k; j < n; j++)
    if (done(&h[j]))
      return -1;
  return (long)k;
}

/* Rank's ops to peer one way before number `from` are left out. */
static bs_status skip(pairs *p, int rank, int peer, bs_dump_kind kind,
                      uint64_t from) {
  bs_replay_state *r = p->r;
  if (!bs_vec_grow(&r->skips, &r->skips_cap, r->nskips + 1, sizeof *r->skips))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: p2p alignment");
  r->skips[r->nskips++] = (bs_replay_skip){p->g, rank, peer, kind, from};
  return BS_OK;
}

static bool lost(const bs_dumps *d, int rank) {
  const bs_dump *dm = bs_dumps_rank(d, rank);
  return dm && dm->lost;
}

/* a's sends to b against b's receives from a (s and r of them), aligned
 * at their last completed ones; false when they do not pair. */
static bool align(pairs *p, int a, int b, const held *s, size_t ns,
                  const held *r, size_t nr, bs_status *st) {
  long ds = done_first(s, ns), dr = done_first(r, nr);
  if (ds < 0 || dr < 0)
    return false;
  /* The side with more completed lost its partners' older ones: only a
   * ring that forgot entries may hold fewer. */
  size_t is = ds > dr ? (size_t)(ds - dr) : 0;
  size_t ir = dr > ds ? (size_t)(dr - ds) : 0;
  if ((is && !lost(p->r->d, b)) || (ir && !lost(p->r->d, a)))
    return false;
  for (size_t k = 0; is + k < ns || ir + k < nr; k++) {
    const held *x = is + k < ns ? &s[is + k] : NULL;
    const held *y = ir + k < nr ? &r[ir + k] : NULL;
    if ((x && y && x->c->in_numel != y->c->in_numel) ||
        (x ? done(x) : false) != (y ? done(y) : false))
      return false;
  }
  if (is)
    *st = skip(p, a, b, BS_DUMP_SEND, is < ns ? s[is].seq : UINT64_MAX);
  if (ir && *st == BS_OK)
    *st = skip(p, b, a, BS_DUMP_RECV, ir < nr ? r[ir].seq : UINT64_MAX);
  return true;
}

/* Every direction between two ranks with dumps aligned (a rank without
 * one replays its peers' completed ops: they pair as held). */
static bool aligned(pairs *p, bs_status *st) {
  const bs_dumps *d = p->r->d;
  for (size_t i = 0; i < p->n && *st == BS_OK;) {
    const held *h = &p->h[i];
    size_t from, to, rf = 0, rt = 0;
    way(p, h->rank, h->peer, h->kind, &from, &to);
    i = to;
    if (!bs_dumps_rank(d, h->peer))
      continue;
    bool send = h->kind == BS_DUMP_SEND;
    way(p, h->peer, h->rank, send ? BS_DUMP_RECV : BS_DUMP_SEND, &rf, &rt);
    if (!send && rt > rf) /* that direction is its sender's to align */
      continue;
    bool ok =
        send ? align(p, h->rank, h->peer, &p->h[from], to - from, &p->h[rf],
                     rt - rf, st)
             : align(p, h->peer, h->rank, NULL, 0, &p->h[from], to - from, st);
    if (!ok)
      return false;
  }
  return *st == BS_OK;
}

static bool any_lost(const bs_dumps *d, int g) {
  const bs_dump_group *dg = &d->groups[g];
  for (int m = 0; m < dg->n; m++)
    if (lost(d, dg->ranks[m]))
      return true;
  return false;
}

bs_status bs_replay_pairs_make(bs_replay_state *r, int g) {
  bs_status st = BS_OK;
  pairs p = {.r = r, .g = g};
  size_t before = r->nskips;
  if (any_lost(r->d, g))
    BS_CHECK(gather(&p));
  if (p.n && (p.batch || !aligned(&p, &st))) {
    r->unpaired[g] = st == BS_OK;
    r->nskips = before; /* none of the group's */
  }
out:
  free(p.h);
  return st;
}

static int by_key(const void *x, const void *y) {
  const bs_replay_skip *a = x, *b = y;
  if (a->group != b->group)
    return (a->group > b->group) - (a->group < b->group);
  return by_direction(a->rank, a->peer, a->kind, b->rank, b->peer, b->kind);
}

void bs_replay_pairs_sort(bs_replay_state *r) {
  if (r->nskips)
    qsort(r->skips, r->nskips, sizeof *r->skips, by_key);
}

bool bs_replay_pairs_keep(const bs_replay_state *r, int g, int rank,
                          const bs_dump_coll *c) {
  bs_replay_skip key = {g, rank, c->peer, c->kind, 0};
  const bs_replay_skip *s =
      r->nskips ? bsearch(&key, r->skips, r->nskips, sizeof key, by_key) : NULL;
  if (r->unpaired[g])
    return false;
  return !s || c->seq >= s->from;
}
