/* The truth of an executed corpus program (bs_corpus_int.h): what its
 * dumps show, by the rules of docs/hang-report.md, worked out from the
 * program's own state, never from its dumps.
 *
 * A desync: a group whose members (with a dump) issued ops of different
 * signatures at one sequence number; the first such, the ranks outside
 * the largest alike (a tie: the side without the lowest rank, marked).
 * A hang: each group's first collective not every member issued, and each
 * waiting rank's first p2p op its peer never matched, where a rank with a
 * dump issued it; a member missing from one that left no dump, ran past it
 * (bs_corpus_vote.h), or waits in none is a root, named at the first of
 * those it is missing from in its own program; one that waits in another
 * is an edge. Stuck ops on a cycle of edges are an order deadlock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_buf.h"
#include "bs_corpus_vote.h"
#include "bs_dumps_finding.h"
#include "bs_dumps_json.h"
#include "bs_json.h"
#include "bs_json_write.h"
#include "bs_vec.h"

typedef struct node {
  int g;
  uint64_t seq;
  bool p2p;
  int waiter; /* p2p */
  int missing[512], nmissing;
} node;

typedef struct troot {
  int rank, kind; /* bs_dumps_root_kind's order: stalled, skipped, no_dump,
                     unreadable, mismatch */
  int mismatch;
  int held[64], nheld; /* nodes */
  int held_kind[64];
  int g;
  uint64_t seq;
  bool p2p, known, even;
} troot;

typedef struct truth {
  bs_corpus *c;
  node *n;
  int nn;
  size_t cap;
  troot r[512];
  int nr;
  int *in; /* by rank: its node, -1 */
  bool desync;
} truth;

enum { K_STALLED = 0, K_SKIPPED, K_NO_DUMP, K_UNREADABLE, K_MISMATCH };
static const char *const kind_names[] = {"stalled", "skipped", "no_dump",
                                         "unreadable", "mismatch"};

static bool dumped(const bs_corpus *c, int r) {
  return !c->rank[r].no_dump;
}

static node *new_node(truth *t) {
  if (!bs_vec_grow(&t->n, &t->cap, (size_t)t->nn + 1, sizeof *t->n))
    return NULL;
  memset(&t->n[t->nn], 0, sizeof t->n[0]);
  return &t->n[t->nn++];
}

/* ---- a desync ---- */

/* What a dump records of op o: its name as recorded (coalesced ones as
 * all_reduce), dtype, elements, shape. */
typedef struct sig {
  int coll, dt, cols, nparts;
  uint32_t n, parts[3];
} sig;

static sig sig_of(const bs_corpus_op *o) {
  sig s = {.coll = o->coll == BS_CC_COALESCED ? BS_CC_ALL_REDUCE : o->coll,
           .dt = o->dt,
           .cols = o->cols > 1 ? (int)o->cols : 0,
           .nparts = o->coll == BS_CC_COALESCED ? o->nparts : 0,
           .n = o->n};
  memcpy(s.parts, o->parts, sizeof s.parts);
  if (!s.nparts)
    memset(s.parts, 0, sizeof s.parts);
  if (o->coll == BS_CC_ALL_TO_ALL) /* its sizes are each rank's own split */
    s.n = 0, s.cols = 0;
  return s;
}

static bool same_sig(sig a, sig b) {
  return !memcmp(&a, &b, sizeof a);
}

/* bs_dumps_mismatch of a against b: op, dtype, shape, size. */
static int mismatch_of(sig a, sig b) {
  if (a.coll != b.coll)
    return BS_DUMPS_MISMATCH_OP;
  if (a.dt != b.dt)
    return BS_DUMPS_MISMATCH_DTYPE;
  return a.n == b.n ? BS_DUMPS_MISMATCH_SHAPE : BS_DUMPS_MISMATCH_SIZE;
}

/* Rank r's op of group g numbered s, as its record holds it (NULL). */
static const bs_corpus_op *op_at(const bs_corpus *c, int r, int g, uint64_t s) {
  const bs_corpus_state *st = &c->st[r];
  for (size_t i = bs_corpus_vote_window(c, r); i < st->n; i++)
    if (!st->e[i].p2p && st->e[i].seq == s && c->rank[r].op[st->e[i].op].g == g)
      return &c->rank[r].op[st->e[i].op];
  return NULL;
}

static bool add_root(truth *t, int r, int kind, int node, int mismatch);

/* Group g's members at #s in classes of alike signatures: the largest
 * right (a tie: the one with the lowest rank, marked even), the others
 * roots. */
static bool blame(truth *t, int g, uint64_t s, const int *m, int nm,
                  const bs_corpus_op **o) {
  int best = -1, bestn = 0, ties = 0;
  for (int i = 0; i < nm; i++) {
    int cnt = 0;
    if (!o[i]) /* a member whose record does not hold #s: no vote */
      continue;
    for (int k = 0; k < nm; k++)
      cnt += o[k] && same_sig(sig_of(o[i]), sig_of(o[k]));
    if (cnt > bestn) {
      best = i;
      bestn = cnt;
      ties = 0;
    } else if (cnt == bestn && !same_sig(sig_of(o[i]), sig_of(o[best]))) {
      ties++;
    }
  }
  node *n = new_node(t);
  if (!n)
    return false;
  *n = (node){.g = g, .seq = s, .waiter = -1};
  for (int i = 0; i < nm; i++)
    if (o[i] && !same_sig(sig_of(o[i]), sig_of(o[best]))) {
      if (!add_root(t, m[i], K_MISMATCH, t->nn - 1,
                    mismatch_of(sig_of(o[i]), sig_of(o[best]))))
        return false;
      t->r[t->nr - 1].even = ties > 0;
    }
  return true;
}

/* The first seq every member's record holds of g. */
static uint64_t first_held(const bs_corpus *c, const int *m, int nm, int g) {
  uint64_t first = 1;
  for (int i = 0; i < nm; i++) {
    const bs_corpus_state *st = &c->st[m[i]];
    for (size_t k = bs_corpus_vote_window(c, m[i]);
         dumped(c, m[i]) && k < st->n; k++)
      if (!st->e[k].p2p && c->rank[m[i]].op[st->e[k].op].g == g) {
        first = st->e[k].seq > first ? st->e[k].seq : first;
        break;
      }
  }
  return first;
}

static bool desync_of(truth *t, int g) {
  const int *mm;
  int nm = bs_corpus_exec_members(t->c, g, &mm), m[512];
  const bs_corpus_op *o[512];
  for (int i = 0; i < nm; i++)
    m[i] = mm ? mm[i] : i;
  uint64_t last = 0;
  for (int i = 0; i < nm; i++)
    if (dumped(t->c, m[i])) {
      uint64_t l = bs_corpus_vote_last(t->c, m[i], g);
      last = l > last ? l : last;
    }
  for (uint64_t s = first_held(t->c, m, nm, g); s <= last; s++) {
    const bs_corpus_op *ref = NULL;
    bool differ = false;
    for (int i = 0; i < nm; i++) {
      o[i] = dumped(t->c, m[i]) ? op_at(t->c, m[i], g, s) : NULL;
      if (o[i] && ref && !same_sig(sig_of(o[i]), sig_of(ref)))
        differ = true;
      ref = ref ? ref : o[i];
    }
    if (differ) {
      t->desync = true;
      return blame(t, g, s, m, nm, o);
    }
  }
  return true;
}

/* ---- a hang: the stuck ops ---- */

static bool missing_add(node *n, int r) {
  if (n->nmissing >= 512)
    return false;
  n->missing[n->nmissing++] = r;
  return true;
}

/* Rank r's last collective of group g (0: none). */
static uint64_t last_coll(const bs_corpus *c, int r, int g) {
  uint64_t l = 0;
  for (size_t k = 0; k < c->st[r].n; k++)
    if (!c->st[r].e[k].p2p && c->rank[r].op[c->st[r].e[k].op].g == g)
      l = c->st[r].e[k].seq;
  return l;
}

/* Group g's first collective not every member issued, where a rank with
 * a dump issued it. */
static bool coll_node(truth *t, int g) {
  const bs_corpus *c = t->c;
  const int *mm;
  int nm = bs_corpus_exec_members(c, g, &mm);
  uint64_t low = UINT64_MAX, high = 0;
  for (int i = 0; i < nm; i++) {
    int r = mm ? mm[i] : i;
    uint64_t l = last_coll(c, r, g);
    low = l < low ? l : low;
    high = l > high ? l : high;
  }
  if (low == high)
    return true;
  bool seen = false;
  for (int i = 0; i < nm && !seen; i++) {
    int r = mm ? mm[i] : i;
    seen = dumped(c, r) && op_at(c, r, g, low + 1);
  }
  node *n = seen ? new_node(t) : NULL;
  if (!seen)
    return true;
  if (!n)
    return false;
  *n = (node){.g = g, .seq = low + 1, .waiter = -1};
  for (int i = 0; i < nm; i++) {
    int r = mm ? mm[i] : i;
    uint64_t l = last_coll(c, r, g);
    /* One that left no dump may have issued it or not: the dumps cannot
     * tell, and it is missing from what they show. */
    if ((l <= low || !dumped(c, r)) && !missing_add(n, r))
      return false;
  }
  return true;
}

/* Rank w's first p2p part not matched, when it waits and left a dump. */
static bool p2p_node(truth *t, int w) {
  const bs_corpus_state *st = &t->c->st[w];
  if (!dumped(t->c, w) || !st->waits)
    return true;
  for (size_t k = 0; k < st->n; k++) {
    const bs_corpus_issued *e = &st->e[k];
    if (!e->p2p || e->done)
      continue;
    node *n = new_node(t);
    if (!n)
      return false;
    *n = (node){.g = t->c->rank[w].op[e->op].g,
                .seq = e->seq,
                .p2p = true,
                .waiter = w};
    return missing_add(n, e->peer);
  }
  return true;
}

/* The node rank r waits in (-1: none). */
static int node_of(const truth *t, int r) {
  const bs_corpus *c = t->c;
  const bs_corpus_state *st = &c->st[r];
  if (!st->waits || !dumped(c, r))
    return -1;
  const bs_corpus_issued *e = &st->e[st->n - 1];
  for (size_t k = 0; k < st->n && e->p2p; k++)
    if (st->e[k].p2p && !st->e[k].done) {
      e = &st->e[k];
      break;
    }
  int g = c->rank[r].op[e->op].g;
  for (int k = 0; k < t->nn; k++)
    if (t->n[k].g == g && t->n[k].seq == e->seq && t->n[k].p2p == e->p2p &&
        (!e->p2p || t->n[k].waiter == r))
      return k;
  return -1;
}

/* ---- the roots ---- */

static bool add_root(truth *t, int r, int kind, int node, int mismatch) {
  troot *x = NULL;
  for (int i = 0; i < t->nr && !x; i++)
    x = t->r[i].rank == r ? &t->r[i] : NULL;
  if (!x) {
    if (t->nr >= 512)
      return false;
    x = &t->r[t->nr++];
    memset(x, 0, sizeof *x);
    x->rank = r;
  }
  if (x->nheld >= 64)
    return true;
  x->held_kind[x->nheld] = kind;
  x->held[x->nheld++] = node;
  x->mismatch = mismatch;
  return true;
}

static bool hang_roots(truth *t) {
  for (int k = 0; k < t->nn; k++) {
    const node *n = &t->n[k];
    for (int i = 0; i < n->nmissing; i++) {
      int m = n->missing[i], wg;
      uint64_t ws;
      int kind = -1;
      if (!dumped(t->c, m))
        kind = K_NO_DUMP;
      else if (!n->p2p &&
               bs_corpus_vote_ran_past(t->c, m, n->g, n->seq, &wg, &ws))
        kind = K_SKIPPED;
      else if (n->p2p && t->in[m] >= 0 && !t->n[t->in[m]].p2p &&
               !bs_corpus_vote_issued(t->c, n->waiter, t->n[t->in[m]].g,
                                      t->n[t->in[m]].seq))
        kind = K_SKIPPED; /* in a collective its waiting peer is not past */
      else if (t->in[m] < 0)
        kind = K_STALLED;
      if (kind >= 0 && !add_root(t, m, kind, k, 0))
        return false;
    }
  }
  return true;
}

/* Where rank m's program would issue its side of node k (a skipped op:
 * before anything; none: after everything). */
static size_t place_in_program(const truth *t, const troot *x, int h) {
  const bs_corpus *c = t->c;
  const node *n = &t->n[x->held[h]];
  const bs_corpus_rank *rk = &c->rank[x->rank];
  const bs_corpus_state *st = &c->st[x->rank];
  if (x->held_kind[h] == K_SKIPPED)
    return 0;
  for (size_t k = 0; k < st->n; k++) /* issued already: it waits in it */
    if (st->e[k].p2p == n->p2p && st->e[k].seq == n->seq &&
        rk->op[st->e[k].op].g == n->g)
      return (size_t)st->e[k].op + 1;
  uint64_t seq = 0;
  for (size_t k = 0; k < st->n; k++)
    if (!st->e[k].p2p && rk->op[st->e[k].op].g == n->g)
      seq = st->e[k].seq;
  for (size_t i = st->next; i < rk->n; i++) {
    const bs_corpus_op *o = &rk->op[i];
    if (o->g != n->g)
      continue;
    if (!n->p2p && o->kind == BS_CK_COLL && ++seq == n->seq)
      return i + 1;
    if (n->p2p && o->kind != BS_CK_COLL &&
        (o->to == n->waiter || o->from == n->waiter))
      return i + 1;
  }
  return SIZE_MAX;
}

/* Whether the dumps tell which of x's ops is first (as analyze orders a
 * root's stuck ops): a rank in both groups of each pair that issued one
 * and not the other, else the period of its own record. */
static bool told(const truth *t, const troot *x, int pick) {
  const node *a = &t->n[x->held[pick]];
  int groups[64], ng = 0;
  bool peers = true;
  if (x->nheld == 1)
    return true;
  for (int h = 0; h < x->nheld; h++) {
    const node *b = &t->n[x->held[h]];
    groups[ng++] = b->g;
    if (b->p2p || a->p2p || (h != pick && a->g == b->g))
      return false;
    if (h != pick)
      peers = peers &&
              bs_corpus_vote_ordered(t->c, x->rank, a->g, a->seq, b->g, b->seq);
  }
  return peers || (dumped(t->c, x->rank) &&
                   bs_corpus_vote_period(t->c, x->rank, groups, ng));
}

static void settle_root(truth *t, troot *x) {
  int pick = 0;
  size_t best = SIZE_MAX;
  for (int h = 0; h < x->nheld; h++) {
    size_t at = place_in_program(t, x, h);
    if (at < best || (at == best && x->held[h] < x->held[pick])) {
      best = at;
      pick = h;
    }
  }
  const node *n = &t->n[x->held[pick]];
  x->kind = x->held_kind[pick];
  x->g = n->g;
  x->seq = n->seq;
  x->p2p = n->p2p;
  x->known = told(t, x, pick);
  if (x->kind == K_SKIPPED && !n->p2p)
    x->seq = bs_corpus_vote_first_past(t->c, x->rank, n->g, n->seq);
}

/* ---- the order deadlock ---- */

/* Whether node k reaches itself through ranks that wait (no root). */
static bool on_cycle(const truth *t, int k, int at, bool *seen) {
  if (seen[at])
    return at == k;
  seen[at] = true;
  const node *n = &t->n[at];
  for (int i = 0; i < n->nmissing; i++) {
    int m = n->missing[i], next = t->in[m];
    bool root = false;
    for (int r = 0; r < t->nr; r++)
      root |= t->r[r].rank == m;
    if (!root && next >= 0 && (next == k || on_cycle(t, k, next, seen)))
      return true;
  }
  return false;
}

/* ---- the JSON ---- */

static void put_root(const truth *t, const troot *x, bs_buf *b) {
  const bs_corpus *c = t->c;
  bs_buf_printf(b,
                "{\"rank\": %d, \"kind\": \"%s\", \"group\": \"%s\", "
                "\"op\": %llu, \"p2p\": %s, \"mismatch\": ",
                x->rank, kind_names[x->kind], bs_corpus_prog_name(c, x->g),
                (unsigned long long)x->seq, x->p2p ? "true" : "false");
  bs_json_write_str(b, x->kind == K_MISMATCH
                           ? bs_dumps_finding_mismatch_name(x->mismatch)
                           : NULL);
  bs_buf_printf(b, ", \"order_known\": %s, \"even_split\": %s, \"held\": [",
                x->known ? "true" : "false", x->even ? "true" : "false");
  for (int h = 0; h < x->nheld; h++) {
    const node *n = &t->n[x->held[h]];
    bs_buf_printf(b, "%s{\"group\": \"%s\", \"op\": %llu, \"p2p\": %s}",
                  h ? ", " : "", bs_corpus_prog_name(c, n->g),
                  (unsigned long long)n->seq, n->p2p ? "true" : "false");
  }
  bs_buf_printf(b, "]}");
}

static void put_cycle(const truth *t, bs_buf *b) {
  bool *seen = calloc((size_t)t->nn + 1, sizeof *seen);
  bool *groups = calloc((size_t)t->c->ngroups + 1, sizeof *groups), any = false;
  for (int k = 0; seen && groups && k < t->nn; k++) {
    memset(seen, 0, (size_t)t->nn + 1);
    if (on_cycle(t, k, k, seen))
      any = groups[t->n[k].g] = true;
  }
  bs_buf_printf(b, "[");
  if (any && !t->desync) {
    bs_buf_printf(b, "{\"order_deadlock\": true, \"groups\": [");
    for (int g = 0, first = 1; g <= t->c->ngroups; g++)
      if (groups[g]) {
        bs_buf_printf(b, "%s\"%s\"", first ? "" : ", ",
                      bs_corpus_prog_name(t->c, g));
        first = 0;
      }
    bs_buf_printf(b, "]}");
  }
  bs_buf_printf(b, "]");
  free(seen);
  free(groups);
}

static char *json(const truth *t) {
  bs_buf b = {0};
  const bs_corpus *c = t->c;
  const char *verdict = t->desync ? "desync" : t->nn ? "hang" : "clean";
  bs_buf_printf(&b,
                "{\"schema\": \"backstop-hang-report/1\", \"verdict\": "
                "\"%s\", \"ranks\": %d,\n \"roots\": [",
                verdict, c->world);
  for (int i = 0; i < t->nr; i++) {
    bs_buf_printf(&b, "%s\n  ", i ? "," : "");
    put_root(t, &t->r[i], &b);
  }
  bs_buf_printf(&b, "],\n \"cycles\": ");
  put_cycle(t, &b);
  bs_buf_printf(&b,
                ",\n \"program\": {\"seed\": %llu, \"index\": %llu, "
                "\"fault\": ",
                (unsigned long long)c->seed, (unsigned long long)c->index);
  bs_json_write_str(&b, c->what);
  bs_buf_printf(&b, "}}\n");
  return bs_buf_take(&b);
}

static int by_rank(const void *a, const void *b) {
  return ((const troot *)a)->rank - ((const troot *)b)->rank;
}

static bool build(truth *t) {
  bool ok = true;
  for (int g = 0; ok && g <= t->c->ngroups; g++)
    ok = desync_of(t, g);
  if (t->desync || !ok)
    return ok;
  t->nn = t->nr = 0;
  for (int g = 0; ok && g <= t->c->ngroups; g++)
    ok = coll_node(t, g);
  for (int w = 0; ok && w < t->c->world; w++)
    ok = p2p_node(t, w);
  for (int r = 0; ok && r < t->c->world; r++)
    t->in[r] = node_of(t, r);
  return ok && hang_roots(t);
}

bs_status bs_corpus_truth_make(bs_corpus *c, bool *shows) {
  bs_status st = BS_OK;
  truth *t = calloc(1, sizeof *t);
  *shows = false;
  if (!t || !(t->in = calloc((size_t)c->world, sizeof *t->in)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "corpus: truth of %d ranks", c->world);
  t->c = c;
  if (!build(t))
    BS_FAIL(BS_ERR_NOMEM, NULL, "corpus: truth of %d ranks", c->world);
  for (int i = 0; i < t->nr && !t->desync; i++)
    settle_root(t, &t->r[i]);
  for (int i = 0; i < t->nr && t->desync; i++) {
    t->r[i].g = t->n[t->r[i].held[0]].g;
    t->r[i].seq = t->n[t->r[i].held[0]].seq;
    t->r[i].kind = K_MISMATCH;
    t->r[i].known = true;
  }
  if (t->nr)
    qsort(t->r, (size_t)t->nr, sizeof *t->r, by_rank);
  free(c->truth);
  if (!(c->truth = json(t)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "corpus: truth");
  *shows = t->desync || t->nn > 0;
out:
  if (t) {
    free(t->n);
    free(t->in);
  }
  free(t);
  return st;
}

bs_status bs_corpus_truth_json(const bs_corpus *c, bs_buf *out) {
  bs_buf_printf(out, "%s", c->truth ? c->truth : "");
  return out->oom ? bs_err_fail(BS_ERR_NOMEM, NULL, "corpus: truth") : BS_OK;
}

/* ---- a truth read back ---- */

static bool roots_ok(const bs_json *roots, char *why, size_t n) {
  for (size_t i = 0; i < roots->n; i++)
    if (bs_json_get_int(&roots->items[i], "rank", -1) < 0 ||
        bs_json_get_int(&roots->items[i], "op", -1) < 0 ||
        !bs_json_get_str(&roots->items[i], "kind", NULL) ||
        !bs_json_get_str(&roots->items[i], "group", NULL)) {
      snprintf(why, n, "root %zu lacks a rank, op, kind or group", i);
      return false;
    }
  return true;
}

bool bs_corpus_truth_check(const char *text, char *why, size_t n) {
  bs_json j = {0};
  const bs_json *roots = NULL;
  bool ok = false;
  if (bs_json_parse(text, strlen(text), &j) != BS_OK)
    snprintf(why, n, "%s", bs_err()->message);
  else if (strcmp(bs_json_get_str(&j, "schema", ""), BS_DUMPS_JSON_SCHEMA))
    snprintf(why, n, "its schema is not %s", BS_DUMPS_JSON_SCHEMA);
  else if (!(roots = bs_json_get(&j, "roots")) || roots->type != BS_JARR)
    snprintf(why, n, "no \"roots\" list");
  else
    ok = roots_ok(roots, why, n);
  bs_json_free(&j);
  bs_err_clear();
  return ok;
}
