/* The executed program's orders as its dumps would show them
 * (bs_corpus_vote.h). Small worlds of short programs: every question is
 * answered by a scan. */
#include "bs_corpus_vote.h"

#include <stdlib.h>
#include <string.h>

static bool dumped(const bs_corpus *c, int r) {
  return !c->rank[r].no_dump;
}

size_t bs_corpus_vote_window(const bs_corpus *c, int r) {
  size_t n = c->st[r].n, keep = c->fr_buffer ? (size_t)c->fr_buffer : 2000;
  return n > keep ? n - keep : 0;
}

static int group_of(const bs_corpus *c, int r, const bs_corpus_issued *e) {
  return c->rank[r].op[e->op].g;
}

/* The kind of group g: its mesh dimension, or its own. */
static int kind_of(const bs_corpus *c, int g) {
  return g && c->groups[g - 1].dim >= 0 ? c->groups[g - 1].dim : 100 + g;
}

static bool member(const bs_corpus *c, int g, int r) {
  const int *m;
  int n = bs_corpus_exec_members(c, g, &m);
  for (int i = 0; m && i < n; i++)
    if (m[i] == r)
      return true;
  return !m;
}

/* Rank r's group of kind k (-1: none). */
static int group_of_kind(const bs_corpus *c, int r, int k) {
  if (k >= 100)
    return member(c, k - 100, r) ? k - 100 : -1;
  for (int g = 1; g <= c->ngroups; g++)
    if (c->groups[g - 1].dim == k && member(c, g, r))
      return g;
  return -1;
}

typedef enum place { P_NO = 0, P_YES, P_BEFORE, P_UNKNOWN } place;

/* Where rank r's record puts collective #s of g. */
static place place_of(const bs_corpus *c, int r, int g, uint64_t s,
                      size_t *at) {
  const bs_corpus_state *st = &c->st[r];
  size_t from = bs_corpus_vote_window(c, r);
  uint64_t first = 0, last = 0;
  for (size_t i = from; i < st->n; i++) {
    const bs_corpus_issued *e = &st->e[i];
    if (e->p2p || group_of(c, r, e) != g)
      continue;
    first = first ? first : e->seq;
    last = e->seq;
    if (e->seq == s) {
      *at = i;
      return P_YES;
    }
  }
  if (!first)
    return from ? P_UNKNOWN : P_NO;
  return s < first ? P_BEFORE : s > last ? P_NO : P_UNKNOWN;
}

static int say(place a, size_t ra, place b, size_t rb) {
  bool ia = a == P_YES || a == P_BEFORE, ib = b == P_YES || b == P_BEFORE;
  if (a == P_UNKNOWN || b == P_UNKNOWN || (!ia && !ib))
    return 0;
  if (ia != ib)
    return ia ? 1 : -1;
  if (a == P_YES && b == P_YES)
    return ra < rb ? 1 : -1;
  return a == b ? 0 : a == P_BEFORE ? 1 : -1;
}

/* The vote on kind kg's #s before kind kh's #j. */
static int vote(const bs_corpus *c, int kg, uint64_t s, int kh, uint64_t j) {
  int first = 0, second = 0;
  for (int r = 0; r < c->world; r++) {
    int g = group_of_kind(c, r, kg), h = group_of_kind(c, r, kh);
    size_t ra = 0, rb = 0;
    if (!dumped(c, r) || g < 0 || h < 0 || g == h)
      continue;
    place a = place_of(c, r, g, s, &ra), b = place_of(c, r, h, j, &rb);
    int v = say(a, ra, b, rb);
    first += v > 0;
    second += v < 0;
  }
  return first == second ? 0 : first > second ? 1 : -1;
}

static int decide(const bs_corpus *c, int g, uint64_t s, int h, uint64_t j) {
  for (uint64_t t = 0; t <= 2 && t < s && t < j; t++) {
    int v = vote(c, kind_of(c, g), s - t, kind_of(c, h), j - t);
    if (v)
      return v;
  }
  return 0;
}

uint64_t bs_corpus_vote_last(const bs_corpus *c, int r, int g) {
  const bs_corpus_state *st = &c->st[r];
  for (size_t i = st->n; i > bs_corpus_vote_window(c, r); i--)
    if (!st->e[i - 1].p2p && group_of(c, r, &st->e[i - 1]) == g)
      return st->e[i - 1].seq;
  return 0;
}

/* Where rank r's record last holds an op of g (SIZE_MAX: nowhere). */
static size_t last_at(const bs_corpus *c, int r, int g) {
  const bs_corpus_state *st = &c->st[r];
  for (size_t i = st->n; i > bs_corpus_vote_window(c, r); i--)
    if (!st->e[i - 1].p2p && group_of(c, r, &st->e[i - 1]) == g)
      return i - 1;
  return SIZE_MAX;
}

bool bs_corpus_vote_ran_past(const bs_corpus *c, int m, int g, uint64_t s,
                             int *went_g, uint64_t *went_s) {
  size_t after = last_at(c, m, g), best = SIZE_MAX;
  for (int h = 0; h <= c->ngroups; h++) {
    size_t at = h != g ? last_at(c, m, h) : SIZE_MAX;
    if (at == SIZE_MAX || kind_of(c, h) == kind_of(c, g) ||
        (after != SIZE_MAX && at < after) || (best != SIZE_MAX && at >= best))
      continue;
    if (decide(c, g, s, h, c->st[m].e[at].seq) > 0) {
      best = at;
      *went_g = h;
      *went_s = c->st[m].e[at].seq;
    }
  }
  return best != SIZE_MAX;
}

/* The collectives of h rank r's record shows before entry at (SIZE_MAX:
 * not known). */
static uint64_t count_before(const bs_corpus *c, int r, int h, size_t at) {
  const bs_corpus_state *st = &c->st[r];
  size_t from = bs_corpus_vote_window(c, r);
  uint64_t seen = 0, first = 0;
  for (size_t i = from; i < st->n; i++)
    if (!st->e[i].p2p && group_of(c, r, &st->e[i]) == h) {
      first = first ? first : st->e[i].seq;
      if (i < at)
        seen = st->e[i].seq;
    }
  if (!first)
    return from ? SIZE_MAX : 0;
  return seen ? seen : first - 1;
}

static bool late(const bs_corpus *c, int m, int g, uint64_t t) {
  size_t at = 0;
  if (place_of(c, m, g, t, &at) != P_YES)
    return false;
  for (int h = 0; h <= c->ngroups; h++) {
    bool in = member(c, h, m);
    uint64_t n = in && h != g && kind_of(c, h) != kind_of(c, g)
                     ? count_before(c, m, h, at)
                     : SIZE_MAX;
    if (n != SIZE_MAX && n >= 1 && decide(c, g, t, h, n) > 0)
      return true;
  }
  return false;
}

uint64_t bs_corpus_vote_first_past(const bs_corpus *c, int m, int g,
                                   uint64_t s) {
  while (s > 1 && late(c, m, g, s - 1))
    s--;
  return s;
}

bool bs_corpus_vote_holds(const bs_corpus *c, int r, int g) {
  const bs_corpus_state *st = &c->st[r];
  for (size_t i = bs_corpus_vote_window(c, r); i < st->n; i++)
    if (group_of(c, r, &st->e[i]) == g)
      return true;
  return false;
}

bool bs_corpus_vote_ordered(const bs_corpus *c, int m, int ga, uint64_t sa,
                            int gb, uint64_t sb) {
  int first = 0, second = 0;
  for (int r = 0; r < c->world; r++) {
    size_t a = 0, b = 0;
    if (r == m || !dumped(c, r) || !member(c, ga, r) || !member(c, gb, r))
      continue;
    place pa = place_of(c, r, ga, sa, &a), pb = place_of(c, r, gb, sb, &b);
    int v = say(pa, a, pb, b);
    first += v > 0;
    second += v < 0;
  }
  return first != second;
}

/* Rank r's record as the groups of its entries, in order (caller frees). */
static int *groups_of(const bs_corpus *c, int r, size_t *n) {
  const bs_corpus_state *st = &c->st[r];
  size_t from = bs_corpus_vote_window(c, r);
  int *g = malloc((st->n - from + 1) * sizeof *g);
  *n = 0;
  for (size_t i = from; g && i < st->n; i++)
    g[(*n)++] = group_of(c, r, &st->e[i]);
  return g;
}

static bool unit_holds(const int *g, size_t from, size_t n, const int *want,
                       int nw) {
  for (int w = 0; w < nw; w++) {
    bool found = false;
    for (size_t k = from; k < n && !found; k++)
      found = g[k] == want[w];
    if (!found)
      return false;
  }
  return true;
}

bool bs_corpus_vote_period(const bs_corpus *c, int r, const int *groups,
                           int n) {
  size_t len = 0;
  int *g = groups_of(c, r, &len);
  bool found = false;
  for (size_t t = 1; g && !found && 2 * t <= len && t <= 512; t++)
    found = !memcmp(g + len - t, g + len - 2 * t, t * sizeof *g) &&
            unit_holds(g, len - t, len, groups, n);
  free(g);
  return found;
}

bool bs_corpus_vote_issued(const bs_corpus *c, int r, int g, uint64_t s) {
  size_t at = 0;
  int h = group_of_kind(c, r, kind_of(c, g));
  place p = h >= 0 ? place_of(c, r, h, s, &at) : P_UNKNOWN;
  return p == P_YES || p == P_BEFORE;
}
