/* Ranks' orders of ops across their groups (bs_dumps_order.h). A rank's
 * collectives of a group are indexed once asked for (thousands of ranks:
 * only those a vote reaches), a vote is kept once counted (the missing
 * members of a stuck op ask the same question). */
#include "bs_dumps_order.h"

#include <stdlib.h>
#include <string.h>

/* A rank's collectives of one group, in the order it issued them. */
typedef struct colls {
  uint64_t *seq, *rid;
  size_t n;
  bool made;
} colls;

typedef struct vkey {
  int kg, kh;
  uint64_t s, j;
} vkey;

typedef struct votes {
  int first, second; /* for g #s before h #j, for the other way */
} votes;

typedef struct vslot {
  vkey k;
  votes v;
  bool used;
} vslot;

struct bs_dumps_order {
  const bs_dumps *d;
  int *kind;     /* by group */
  int **by_kind; /* by kind (a group's index): each rank's group of it */
  colls **by;    /* by dump, then by its pg index */
  vslot *cache;  /* open addressing, a power of two long */
  size_t ncache, used;
};

/* ---- kinds ---- */

static bool generic(const char *desc) {
  return !desc[0] || !strcmp(desc, "undefined");
}

/* A run of generic groups: one size, desc and shape (each a translate of
 * the first: a loop's lines of a grid), no rank twice, until they hold
 * every rank (a loop of new_group over one dimension). The shape keeps a
 * group the dumps name after unseen ones (a lost node's) out of the loop
 * before them. */
typedef struct run {
  bool *in;
  int held, n, kind;
  const char *desc;
  const int *first; /* the first group's members */
} run;

static bool joins(const run *r, const bs_dump_group *g, int ranks) {
  if (r->kind < 0 || g->n != r->n || g->desc != r->desc || r->held >= ranks)
    return false;
  for (int i = 0; i < g->n; i++)
    if (r->in[g->ranks[i]] ||
        (i && g->ranks[i] - g->ranks[0] != r->first[i] - r->first[0]))
      return false;
  return true;
}

static void run_add(run *r, const bs_dump_group *g) {
  for (int i = 0; i < g->n; i++)
    r->in[g->ranks[i]] = true;
  r->held += g->n;
}

/* The kind of a group named by its desc: the first group's of that desc
 * and size. */
static int by_desc(const bs_dumps *d, const int *kind, size_t g) {
  const bs_dump_group *x = &d->groups[g];
  for (size_t o = 0; o < g; o++)
    if (d->groups[o].desc == x->desc && d->groups[o].n == x->n)
      return kind[o];
  return (int)g;
}

static bs_status kinds(bs_dumps_order *o) {
  const bs_dumps *d = o->d;
  run r = {.kind = -1};
  if (!(r.in = calloc((size_t)d->ranks + 1, sizeof *r.in)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: %d ranks", d->ranks);
  for (size_t g = 0; g < d->ngroups; g++) {
    const bs_dump_group *x = &d->groups[g];
    if (!generic(x->desc)) {
      o->kind[g] = by_desc(d, o->kind, g);
      continue;
    }
    if (!joins(&r, x, d->ranks)) {
      memset(r.in, 0, ((size_t)d->ranks + 1) * sizeof *r.in);
      r = (run){.in = r.in,
                .n = x->n,
                .desc = x->desc,
                .kind = (int)g,
                .first = x->ranks};
    }
    run_add(&r, x);
    o->kind[g] = r.kind;
  }
  free(r.in);
  return BS_OK;
}

bs_status bs_dumps_order_make(const bs_dumps *d, bs_dumps_order **out) {
  bs_status st = BS_OK;
  bs_dumps_order *o = calloc(1, sizeof *o);
  *out = NULL;
  if (!o || !(o->kind = calloc(d->ngroups + 1, sizeof *o->kind)) ||
      !(o->by_kind = calloc(d->ngroups + 1, sizeof *o->by_kind)) ||
      !(o->by = calloc(d->n + 1, sizeof *o->by)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %zu groups", d->ngroups);
  o->d = d;
  BS_CHECK(kinds(o));
  *out = o;
  o = NULL;
out:
  bs_dumps_order_free(o);
  return st;
}

void bs_dumps_order_free(bs_dumps_order *o) {
  if (!o)
    return;
  for (size_t i = 0; o->by && i < o->d->n; i++) {
    for (size_t k = 0; o->by[i] && k < o->d->d[i].npg; k++) {
      free(o->by[i][k].seq);
      free(o->by[i][k].rid);
    }
    free(o->by[i]);
  }
  free(o->by);
  for (size_t k = 0; o->by_kind && k < o->d->ngroups; k++)
    free(o->by_kind[k]);
  free(o->by_kind);
  free(o->kind);
  free(o->cache);
  free(o);
}

int bs_dumps_order_kind(const bs_dumps_order *o, int g) {
  return o->kind[g];
}

/* ---- a rank's collectives ---- */

static bool colls_make(const bs_dump_pg *p, colls *c) {
  size_t n = 0;
  c->seq = malloc((p->n + 1) * sizeof *c->seq);
  c->rid = malloc((p->n + 1) * sizeof *c->rid);
  if (!c->seq || !c->rid)
    return false;
  for (size_t k = 0; k < p->n; k++)
    if (!p->c[k].p2p) {
      c->seq[n] = p->c[k].seq;
      c->rid[n++] = p->c[k].rid;
    }
  c->n = n;
  c->made = true;
  return true;
}

/* Dump i's collectives of group g (NULL: it holds none, or no memory). */
static const colls *colls_of(const bs_dumps_order *o, size_t i, int g) {
  const bs_dump *dp = &o->d->d[i];
  const bs_dump_pg *p = bs_dumps_pg_of(dp, g);
  if (!p)
    return NULL;
  if (!o->by[i] && !(o->by[i] = calloc(dp->npg, sizeof *o->by[i])))
    return NULL;
  colls *c = &o->by[i][p - dp->pg];
  return c->made || colls_make(p, c) ? c : NULL;
}

static long dump_index(const bs_dumps_order *o, int r) {
  const bs_dump *dp = bs_dumps_rank(o->d, r);
  return dp ? dp - o->d->d : -1;
}

uint64_t bs_dumps_order_last(const bs_dumps_order *o, int r, int g) {
  long i = dump_index(o, r);
  const colls *c = i >= 0 ? colls_of(o, (size_t)i, g) : NULL;
  return c && c->n ? c->seq[c->n - 1] : 0;
}

/* Where a rank stands to collective #s of a group. */
typedef enum place {
  P_NO = 0, /* it has not issued it */
  P_YES,    /* it did, at rid */
  P_BEFORE, /* it did, before its first entry held (its ring forgot) */
  P_UNKNOWN
} place;

static size_t lower(const uint64_t *v, size_t n, uint64_t x) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static place place_of(const bs_dumps_order *o, size_t i, int g, uint64_t s,
                      uint64_t *rid) {
  const colls *c = colls_of(o, i, g);
  if (!c || !c->n)
    return o->d->d[i].lost ? P_UNKNOWN : P_NO;
  if (s < c->seq[0])
    return P_BEFORE;
  if (s > c->seq[c->n - 1])
    return P_NO;
  size_t k = lower(c->seq, c->n, s);
  if (c->seq[k] != s)
    return P_UNKNOWN;
  *rid = c->rid[k];
  return P_YES;
}

bool bs_dumps_order_rid(const bs_dumps_order *o, int r, bs_dumps_ref at,
                        uint64_t *rid) {
  long i = dump_index(o, r);
  const bs_dump_pg *p = i >= 0 ? bs_dumps_pg_of(&o->d->d[i], at.group) : NULL;
  if (p && at.p2p) {
    for (size_t k = 0; k < p->n; k++)
      if (p->c[k].p2p && p->c[k].seq == at.seq) {
        *rid = p->c[k].rid;
        return true;
      }
    return false;
  }
  return p && place_of(o, (size_t)i, at.group, at.seq, rid) == P_YES;
}

/* The collectives of g rank i issued before rid (UINT64_MAX: not known). */
static uint64_t count_before(const bs_dumps_order *o, size_t i, int g,
                             uint64_t rid) {
  const colls *c = colls_of(o, i, g);
  if (!c || !c->n)
    return o->d->d[i].lost ? UINT64_MAX : 0;
  size_t k = lower(c->rid, c->n, rid);
  return k ? c->seq[k - 1] : c->seq[0] - 1;
}

/* ---- votes ---- */

/* Kind k's group of each rank (-1: none, -2: two), made on first use: a
 * rank is a member of groups it holds no entry of too. */
static const int *kind_ranks(bs_dumps_order *o, int k) {
  const bs_dumps *d = o->d;
  if (o->by_kind[k])
    return o->by_kind[k];
  int *of = malloc(((size_t)d->ranks + 1) * sizeof *of);
  if (!of)
    return NULL;
  for (int r = 0; r < d->ranks; r++)
    of[r] = -1;
  for (size_t g = 0; g < d->ngroups; g++)
    for (int i = 0; o->kind[g] == k && i < d->groups[g].n; i++) {
      int r = d->groups[g].ranks[i];
      of[r] = of[r] == -1 ? (int)g : -2;
    }
  return o->by_kind[k] = of;
}

bool bs_dumps_order_join(bs_dumps_order *o, int g, int r) {
  int *of = (int *)kind_ranks(o, o->kind[g]);
  if (!of)
    return false;
  of[r] = of[r] == -1 || of[r] == g ? g : -2;
  if (o->cache) /* votes counted before it are stale */
    memset(o->cache, 0, o->ncache * sizeof *o->cache);
  o->used = 0;
  return true;
}

/* Dump i's one group of kind k, -1 when it has none or two. */
static int group_of_kind(bs_dumps_order *o, size_t i, int k) {
  const int *of = kind_ranks(o, k);
  int g = of ? of[o->d->d[i].rank] : -1;
  return g >= 0 ? g : -1;
}

/* +1: a before b, -1: b before a, 0: no say. */
static int say(place a, uint64_t ra, place b, uint64_t rb) {
  bool ia = a == P_YES || a == P_BEFORE, ib = b == P_YES || b == P_BEFORE;
  if (a == P_UNKNOWN || b == P_UNKNOWN || (!ia && !ib))
    return 0;
  if (ia && !ib)
    return 1;
  if (ib && !ia)
    return -1;
  if (a == P_YES && b == P_YES)
    return ra < rb ? 1 : -1;
  return a == P_BEFORE && b == P_BEFORE ? 0 : a == P_BEFORE ? 1 : -1;
}

static votes count(bs_dumps_order *o, vkey k) {
  votes v = {0, 0};
  for (size_t i = 0; i < o->d->n; i++) {
    int g = group_of_kind(o, i, k.kg), h = group_of_kind(o, i, k.kh);
    uint64_t ra = 0, rb = 0;
    if (g < 0 || h < 0 || g == h)
      continue;
    place a = place_of(o, i, g, k.s, &ra), b = place_of(o, i, h, k.j, &rb);
    int s = say(a, ra, b, rb);
    v.first += s > 0;
    v.second += s < 0;
  }
  return v;
}

static size_t hash(vkey k) {
  uint64_t h = ((uint64_t)k.kg * 0x9E3779B97F4A7C15ull) ^
               ((uint64_t)k.kh * 0xC2B2AE3D27D4EB4Full) ^
               (k.s * 0x165667B19E3779F9ull) ^ (k.j * 0x27D4EB2F165667C5ull);
  return (size_t)(h ^ (h >> 29));
}

static bool same(vkey a, vkey b) {
  return a.kg == b.kg && a.kh == b.kh && a.s == b.s && a.j == b.j;
}

static vslot *slot(vslot *t, size_t n, vkey k) {
  for (size_t at = hash(k) & (n - 1);; at = (at + 1) & (n - 1))
    if (!t[at].used || same(t[at].k, k))
      return &t[at];
}

/* Doubles the cache (kept at most half full); not bs_vec: its slots are
 * hashed again into a new, empty table. */
static bool grow(bs_dumps_order *o) {
  size_t n = o->ncache ? 2 * o->ncache : 64;
  vslot *t = calloc(n, sizeof *t);
  if (!t)
    return false;
  for (size_t i = 0; i < o->ncache; i++)
    if (o->cache[i].used)
      *slot(t, n, o->cache[i].k) = o->cache[i];
  free(o->cache);
  o->cache = t;
  o->ncache = n;
  return true;
}

static votes vote(bs_dumps_order *o, vkey k) {
  if (2 * (o->used + 1) > o->ncache && !grow(o))
    return count(o, k);
  vslot *s = slot(o->cache, o->ncache, k);
  if (!s->used) {
    *s = (vslot){.k = k, .v = count(o, k), .used = true};
    o->used++;
  }
  return s->v;
}

/* Whether g #s comes before h #j by the vote (+1), after (-1), or no one
 * can tell (0); a tie asks the ops one back, twice. */
static int decide(bs_dumps_order *o, int g, uint64_t s, int h, uint64_t j) {
  for (uint64_t t = 0; t <= 2 && t < s && t < j; t++) {
    votes v = vote(o, (vkey){o->kind[g], o->kind[h], s - t, j - t});
    if (v.first != v.second)
      return v.first > v.second ? 1 : -1;
  }
  return 0;
}

bool bs_dumps_order_ran_past(bs_dumps_order *o, int m, int g, uint64_t s,
                             bs_dumps_ref *went) {
  long i = dump_index(o, m);
  if (i < 0)
    return false;
  const bs_dump *dp = &o->d->d[i];
  const colls *own = colls_of(o, (size_t)i, g);
  bool any = false;
  uint64_t after = own && own->n ? own->rid[own->n - 1] : 0, best = 0;
  for (size_t p = 0; p < dp->npg; p++) {
    int h = dp->pg[p].group;
    const colls *c = h != g ? colls_of(o, (size_t)i, h) : NULL;
    if (!c || !c->n || o->kind[h] == o->kind[g] || c->rid[c->n - 1] < after ||
        (any && c->rid[c->n - 1] >= best))
      continue;
    if (decide(o, g, s, h, c->seq[c->n - 1]) > 0) {
      any = true;
      best = c->rid[c->n - 1];
      *went = (bs_dumps_ref){.group = h, .seq = c->seq[c->n - 1]};
    }
  }
  return any;
}

bool bs_dumps_order_issued(bs_dumps_order *o, int r, int g, uint64_t s) {
  long i = dump_index(o, r);
  int h = i >= 0 ? group_of_kind(o, (size_t)i, o->kind[g]) : -1;
  uint64_t rid;
  place p = h >= 0 ? place_of(o, (size_t)i, h, s, &rid) : P_UNKNOWN;
  return p == P_YES || p == P_BEFORE;
}

/* Whether rank i issued g #t after an op of another group that its peers
 * issue after it. */
static bool late(bs_dumps_order *o, size_t i, int g, uint64_t t) {
  const bs_dump *dp = &o->d->d[i];
  uint64_t rt = 0;
  if (place_of(o, i, g, t, &rt) != P_YES)
    return false;
  for (size_t p = 0; p < dp->npg; p++) {
    int h = dp->pg[p].group;
    uint64_t c = h != g && o->kind[h] != o->kind[g] ? count_before(o, i, h, rt)
                                                    : UINT64_MAX;
    if (c != UINT64_MAX && c >= 1 && decide(o, g, t, h, c) > 0)
      return true;
  }
  return false;
}

uint64_t bs_dumps_order_first_past(bs_dumps_order *o, int m, int g,
                                   uint64_t s) {
  long i = dump_index(o, m);
  while (i >= 0 && s > 1 && late(o, (size_t)i, g, s - 1))
    s--;
  return s;
}

/* ---- the first of ops a rank never issued ---- */

/* +1: a before b by the ranks of both groups, -1: after, 0: not known. */
static int by_peers(const bs_dumps_order *o, int m, bs_dumps_ref a,
                    bs_dumps_ref b) {
  const bs_dump_group *ga = &o->d->groups[a.group];
  votes v = {0, 0};
  if (a.p2p || b.p2p || a.group == b.group) /* a p2p op's waiters' numbers
                                               order nothing of m's */
    return 0;
  for (int k = 0; k < ga->n; k++) {
    long i = ga->ranks[k] != m ? dump_index(o, ga->ranks[k]) : -1;
    uint64_t ra = 0, rb = 0;
    if (i < 0 || bs_dumps_group_rank(o->d, b.group, ga->ranks[k]) < 0)
      continue;
    place pa = place_of(o, (size_t)i, a.group, a.seq, &ra);
    place pb = place_of(o, (size_t)i, b.group, b.seq, &rb);
    int s = say(pa, ra, pb, rb);
    v.first += s > 0;
    v.second += s < 0;
  }
  return v.first == v.second ? 0 : v.first > v.second ? 1 : -1;
}

/* +1: collective a before b as the ranks of their kinds issued them,
 * -1: after, 0: not known. */
static int by_kinds(bs_dumps_order *o, bs_dumps_ref a, bs_dumps_ref b) {
  if (a.p2p || b.p2p || o->kind[a.group] == o->kind[b.group])
    return 0;
  return decide(o, a.group, a.seq, b.group, b.seq);
}

/* Rank m's ops' groups in the order it issued them (caller frees). */
static int *record(const bs_dumps_order *o, long i, size_t *n) {
  const bs_dump *dp = &o->d->d[i];
  size_t total = 0;
  for (size_t p = 0; p < dp->npg; p++)
    total += dp->pg[p].n;
  int *seq = malloc((total + 1) * sizeof *seq);
  uint64_t *rid = malloc((total + 1) * sizeof *rid);
  size_t *at = calloc(dp->npg + 1, sizeof *at);
  for (*n = 0; seq && rid && at && *n < total; (*n)++) {
    size_t best = 0;
    bool found = false;
    for (size_t p = 0; p < dp->npg; p++)
      if (at[p] < dp->pg[p].n && (!found || dp->pg[p].c[at[p]].rid < rid[*n])) {
        best = p;
        found = true;
        rid[*n] = dp->pg[p].c[at[p]].rid;
      }
    seq[*n] = dp->pg[best].group;
    at[best]++;
  }
  free(rid);
  free(at);
  return seq;
}

/* Whether record g[from..len) holds an op of every candidate's group. */
static bool holds_all(const int *g, size_t from, size_t len,
                      const bs_dumps_ref *at, const bool *out, int n) {
  for (int c = 0; c < n; c++) {
    bool found = out[c];
    for (size_t k = from; k < len && !found; k++)
      found = g[k] == at[c].group;
    if (!found)
      return false;
  }
  return true;
}

/* The smallest period of the record's tail that holds every candidate's
 * group: its last ops repeat the t before them, a last step cut short
 * allowed (*whole: two whole repeats; else the record is one repeat and a
 * part, from its start), 0: none. */
static size_t period(const int *g, size_t n, const bs_dumps_ref *at,
                     const bool *out, int nc, bool *whole) {
  for (size_t t = 1; t < n && t <= 512; t++) {
    size_t m = 0; /* the last ops that repeat the one t before */
    while (m < n - t && g[n - 1 - m] == g[n - 1 - m - t])
      m++;
    *whole = m >= t;
    if ((*whole || m == n - t) && holds_all(g, n - t, n, at, out, nc))
      return t;
  }
  *whole = false;
  return 0;
}

/* By the period of m's record: the candidate its next ops reach first
 * (*whole: a period tells); without one, the candidate whose group its
 * record reached first (a guess: a step's order); -1: none. */
static int by_period(const bs_dumps_order *o, int m, const bs_dumps_ref *at,
                     const bool *out, int n, bool *whole) {
  long i = dump_index(o, m);
  size_t len = 0;
  int *g = i >= 0 ? record(o, i, &len) : NULL, pick = -1;
  size_t t = g ? period(g, len, at, out, n, whole) : 0;
  size_t from = t ? len - t : 0;
  for (size_t k = from; g && k < len && pick < 0; k++)
    for (int c = 0; c < n && pick < 0; c++)
      if (!out[c] && at[c].group == g[k])
        pick = c;
  free(g);
  return pick;
}

int bs_dumps_order_first(bs_dumps_order *o, int m, const bs_dumps_ref *at,
                         int n, bool *known) {
  bool *out = calloc((size_t)n + 1, sizeof *out);
  int left = n, pick = 0;
  *known = n == 1;
  if (n <= 1 || !out) {
    free(out);
    return 0;
  }
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n && !out[a]; b++)
      if (a != b && by_peers(o, m, at[b], at[a]) > 0) {
        out[a] = true;
        left--;
      }
  *known = left == 1;
  /* Where no rank is in both groups (a mesh's dp and pp groups meet in
   * one rank): as the ranks of their kinds issued ops of those numbers. */
  for (int a = 0; a < n && left > 1; a++)
    for (int b = 0; b < n && !out[a] && left > 1; b++)
      if (a != b && !out[b] && by_kinds(o, at[b], at[a]) > 0) {
        out[a] = true;
        left--;
      }
  for (int a = 0; a < n && left == 1; a++)
    if (!out[a])
      pick = a;
  bool whole = false;
  int p = left == 1 ? pick : by_period(o, m, at, out, n, &whole);
  if (p >= 0) {
    pick = p;
    *known = *known || whole;
  } else {
    for (int a = 0; a < n; a++)
      if (!out[a] && (out[pick] || at[a].group < at[pick].group))
        pick = a;
  }
  free(out);
  return pick;
}
