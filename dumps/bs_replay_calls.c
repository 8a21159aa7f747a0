/* How a rank's plan goes out as calls (bs_replay_int.h): a collective, a
 * p2p batch, or lone p2p ops in a row; and the pair communicators the
 * lone ops need, in the one order every rank makes them in. */
#include <stdlib.h>

#include "bs_buf.h"
#include "bs_replay_int.h"
#include "bs_vec.h"

static bool is_p2p(const bs_replay_step *s) {
  return s->op == BS_COLL_SEND || s->op == BS_COLL_RECV;
}

/* The steps of s's batch: s[0..m). */
static size_t batch_len(const bs_replay_step *s, size_t left) {
  size_t m = 1;
  while (m < left && s[m].batch == s->batch)
    m++;
  return m;
}

/* Lone p2p ops of one group in a row, numbered as recorded (isend and
 * irecv: a rank records the next before the last completes, a ring's send
 * before its recv): s[0..m) issued together, each completing on its own,
 * or a ring would wait where the job did not. 0: s is no such op. */
static size_t lone_run(const bs_replay_step *s, size_t left) {
  size_t m = 0;
  while (m < left && is_p2p(&s[m]) && s[m].seq && s[m].group == s->group &&
         (m == 0 || s[m].seq > s[m - 1].seq) && batch_len(&s[m], left - m) == 1)
    m++;
  return m;
}

/* Whether a batch's steps each carry a seq of their own (an isend and an
 * irecv issued together), not the batch's one. */
static bool own_seqs(const bs_replay_step *s, size_t m) {
  for (size_t i = 1; i < m; i++)
    if (s[i].seq <= s[i - 1].seq)
      return false;
  return m > 1;
}

size_t bs_replay_calls_len(const bs_replay_state *r, const bs_replay_step *s,
                           size_t left, bool *own) {
  size_t lone = is_p2p(s) && !r->exact ? lone_run(s, left) : 0;
  size_t m = !is_p2p(s) ? 1 : lone ? lone : batch_len(s, left);
  *own = is_p2p(s) &&
         (lone > 0 || own_seqs(s, m) || (m == 1 && s->seq && r->exact));
  return m;
}

/* Rank's place among g's members (ascending), -1 when none: a search,
 * as a world of thousands has as many members. */
static int group_rank(const bs_replay_group *g, int rank) {
  int lo = 0, hi = g->n - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (g->members[mid] == rank)
      return mid;
    if (g->members[mid] < rank)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

static int pair_cmp(const void *a, const void *b) {
  const bs_replay_pair *x = a, *y = b;
  if (x->group != y->group)
    return x->group < y->group ? -1 : 1;
  if (x->lo != y->lo)
    return x->lo < y->lo ? -1 : 1;
  return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* The pair of each step of rank's calls with ops of their own seqs. */
static bs_status pairs_of_plan(const bs_replay_state *r, int rank,
                               bs_replay_pair **v, size_t *n, size_t *cap) {
  bs_status st = BS_OK;
  const bs_replay_plan *p = &r->plan[rank];
  for (size_t k = 0; k < p->n;) {
    bool own;
    size_t m = bs_replay_calls_len(r, &p->s[k], p->n - k, &own);
    for (size_t i = k; own && i < k + m; i++) {
      const bs_replay_group *g = &r->g[p->s[i].group];
      int a = group_rank(g, rank), b = group_rank(g, p->s[i].peer);
      bs_replay_pair e = {
          .group = p->s[i].group, .lo = a < b ? a : b, .hi = a < b ? b : a};
      if (a < 0 || b < 0)
        BS_FAIL(BS_ERR_INVALID, NULL,
                "replay: rank %d's p2p with rank %d outside their group", rank,
                p->s[i].peer);
      BS_CHECK(bs_vec_push(v, n, cap, &e, sizeof e, "replay: p2p pairs"));
    }
    k += m;
  }
out:
  return st;
}

bs_status bs_replay_calls_pairs(const bs_replay_state *r, bs_replay_pair **out,
                                size_t *nout) {
  bs_status st = BS_OK;
  bs_replay_pair *v = NULL;
  size_t n = 0, cap = 0, u = 0;
  for (int rank = 0; rank < r->n; rank++)
    BS_CHECK(pairs_of_plan(r, rank, &v, &n, &cap));
  if (n)
    qsort(v, n, sizeof *v, pair_cmp);
  for (size_t i = 0; i < n; i++)
    if (u == 0 || pair_cmp(&v[u - 1], &v[i]) != 0)
      v[u++] = v[i];
  *out = v;
  *nout = u;
  v = NULL;
out:
  free(v);
  return st;
}

void bs_replay_calls_said(const bs_replay_state *r, bs_buf *out) {
  for (size_t i = 0; i < r->npairs && i < 16; i++) {
    const bs_replay_pair *p = &r->pairs[i];
    bool same = i && r->pairs[i - 1].group == p->group;
    if (!same)
      bs_buf_printf(out, "%s%s: ",
                    i ? "; group "
                      : "  lone p2p ops on a pair communicator each: group ",
                    r->d->groups[p->group].name);
    bs_buf_printf(out, "%s%d:%d", same ? ", " : "", p->lo, p->hi);
  }
  if (r->npairs)
    bs_buf_printf(out, "%s (%zu, group ranks)\n", r->npairs > 16 ? ", ..." : "",
                  r->npairs);
}
