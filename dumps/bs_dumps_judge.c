/* One process group judged: its members' collectives compared sequence
 * number by sequence number (the first mismatch, the collective it is
 * stuck at, who is missing from it), its p2p ops matched pair by pair,
 * and the group's block written as the world writes its report.
 *
 * A collective is done only once every member issued it: a member that
 * says it completed #s (gloo retires an op that ended in an error) while
 * another waits in #s, or never reached it, is counted as in #s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_buf.h"
#include "bs_dumps_judge.h"

/* Backstop's names for the dtypes it has (PyTorch's otherwise). */
static const char *dtype_name(const char *torch) {
  bs_dtype dt;
  return bs_dumps_op_dtype(torch, &dt) ? bs_dtype_name(dt) : torch;
}

void bs_dumps_judge_describe(const bs_dump_coll *c, char *buf, size_t n) {
  int k = snprintf(buf, n, "%s #%llu", c->op, (unsigned long long)c->seq);
  bool one = c->in_tensors == 1 && c->out_tensors == 1 &&
             strcmp(c->in_dt, c->out_dt) == 0 && !strchr(c->in_dt, ',') &&
             !strchr(c->in, ','); /* one dimension: else its shape shows */
  uint64_t count = bs_dumps_coll_count(c);
  bool sizes = !strstr(c->op, "barrier") && (c->in_tensors || c->out_tensors);
  if (sizes && one)
    k += snprintf(buf + k, n - (size_t)k, " (%llu x %s)",
                  (unsigned long long)count, dtype_name(c->in_dt));
  else if (sizes)
    k += snprintf(buf + k, n - (size_t)k, " (%s %s -> %s %s)", c->in, c->in_dt,
                  c->out, c->out_dt);
  if (c->label[0] && k >= 0 && (size_t)k < n)
    snprintf(buf + k, n - (size_t)k, " [%s]", c->label);
}

/* Everything ranks must agree on, for grouping them (torchfrtrace's
 * rules): a gather's outputs and a scatter's inputs are the root's alone,
 * an all_to_all's sizes are each rank's own split (its dtypes are
 * compared). */
typedef struct agreed {
  bool in, in_dt, out, out_dt;
} agreed;

static agreed agreed_of(const bs_dump_coll *c) {
  bs_dumps_form form = bs_dumps_op_form(c->op);
  bool gather = form == BS_DUMPS_GATHER, scatter = form == BS_DUMPS_SCATTER;
  bool uneven = form == BS_DUMPS_ALL_TO_ALL;
  return (agreed){.in = !scatter && !uneven,
                  .in_dt = !scatter,
                  .out = !gather && !uneven,
                  .out_dt = !gather};
}

static void signature(const bs_dump_coll *c, char *buf, size_t n) {
  agreed a = agreed_of(c);
  snprintf(buf, n, "%s #%llu (%s %s -> %s %s)", c->op,
           (unsigned long long)c->seq, a.in ? c->in : "",
           a.in_dt ? c->in_dt : "", a.out ? c->out : "",
           a.out_dt ? c->out_dt : "");
}

/* signature(x) and signature(y) are the same text: the fields are
 * interned, so compared by address (millions of entries: no text made
 * unless they differ). */
static bool same_signature(const bs_dump_coll *x, const bs_dump_coll *y) {
  if (x->op != y->op || x->seq != y->seq)
    return false;
  agreed a = agreed_of(x);
  return (!a.in || x->in == y->in) && (!a.in_dt || x->in_dt == y->in_dt) &&
         (!a.out || x->out == y->out) && (!a.out_dt || x->out_dt == y->out_dt);
}

/* ---- the view ---- */

bs_status bs_dumps_judge_view_make(const bs_dumps *d, int g, bs_dumps_view *v) {
  const bs_dump_group *grp = &d->groups[g];
  size_t n = grp->n > 0 ? (size_t)grp->n : 1;
  *v = (bs_dumps_view){.d = d, .g = g, .n = grp->n, .members = grp->ranks};
  v->dump = calloc(n, sizeof *v->dump);
  v->pg = calloc(n, sizeof *v->pg);
  if (!v->dump || !v->pg) {
    bs_dumps_judge_view_free(v);
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: %d ranks", grp->n);
  }
  for (int i = 0; i < v->n; i++) {
    v->dump[i] = bs_dumps_rank(d, v->members[i]);
    v->pg[i] = bs_dumps_pg_of(v->dump[i], g);
    v->dumps += v->dump[i] != NULL;
  }
  return BS_OK;
}

void bs_dumps_judge_view_free(bs_dumps_view *v) {
  free(v->dump);
  free(v->pg);
  memset(v, 0, sizeof *v);
}

/* ---- the collectives ---- */

typedef struct judge {
  const bs_dumps_view *v;
  int n;
  uint64_t first, last; /* seqs every dump / some dump holds */
  bs_report_rank *where;
  bool *none;     /* blames no one: the report names the roots (quiet) */
  size_t *cursor; /* per member: the entry at or after a seq */
  bs_dumps_p2p_wait *wait;
  bs_dumps_gres *res;
  char why[2 * BS_REPORT_DESC + 160];
  char tail[2 * BS_REPORT_DESC + 320];
} judge;

static const bs_dump_coll *at(judge *j, int i, uint64_t seq) {
  const bs_dump_pg *p = j->v->pg[i];
  if (!p)
    return NULL;
  size_t *k = &j->cursor[i];
  while (*k < p->n && (p->c[*k].p2p || p->c[*k].seq < seq))
    (*k)++;
  return *k < p->n && p->c[*k].seq == seq ? &p->c[*k] : NULL;
}

/* The last collective member i holds (0: none). */
static uint64_t last_of(const judge *j, int i) {
  const bs_dump_pg *p = j->v->pg[i];
  for (size_t k = p ? p->n : 0; k > 0; k--)
    if (!p->c[k - 1].p2p)
      return p->c[k - 1].seq;
  return 0;
}

static void span(judge *j) {
  j->first = bs_dumps_group_first_seq(j->v->d, j->v->g);
  j->last = 0;
  for (int i = 0; i < j->n; i++) {
    uint64_t l = last_of(j, i);
    j->last = l > j->last ? l : j->last;
  }
}

/* The collective the group is stuck at: the lowest one a member has not
 * completed, or that some member never reached while others hold it; 0
 * when every member with a dump completed the same ones. */
static uint64_t stuck_at(judge *j) {
  uint64_t s = UINT64_MAX;
  for (int i = 0; i < j->n; i++) {
    const bs_dump_pg *p = j->v->pg[i];
    if (!j->v->dump[i])
      continue;
    uint64_t l = last_of(j, i);
    if (l < j->last && l + 1 < s)
      s = l + 1 < j->first ? j->first : l + 1;
    for (size_t k = 0; p && k < p->n; k++)
      if (!p->c[k].p2p && p->c[k].seq >= j->first &&
          p->c[k].state != BS_DUMP_COMPLETED && p->c[k].seq < s)
        s = p->c[k].seq;
  }
  return s == UINT64_MAX ? 0 : s;
}

static void no_dump(const judge *j, int i, bs_report_rank *r) {
  const bs_dump_bad *bad = bs_dumps_bad_rank(j->v->d, j->v->members[i]);
  if (bad)
    snprintf(r->desc, sizeof r->desc, "dump unreadable (%.60s: %.110s)",
             bad->file, bad->why);
  else
    snprintf(r->desc, sizeof r->desc, "no dump (where it is is not known)");
}

/* The p2p_seq_id of the last p2p op in p (0: none). */
static uint64_t last_p2p(const bs_dump_pg *p) {
  for (size_t k = p ? p->n : 0; k > 0; k--)
    if (p->c[k - 1].p2p)
      return p->c[k - 1].seq;
  return 0;
}

/* Where member i is with the group stuck at s: in s (its entry is not
 * completed, or completed as its last collective), else its first
 * collective not completed, else out of any. */
static void place(judge *j, int i, uint64_t s) {
  bs_report_rank *r = &j->where[i];
  const bs_dump_pg *p = j->v->pg[i];
  if (!j->v->dump[i]) {
    no_dump(j, i, r);
    return;
  }
  uint64_t last = last_of(j, i);
  bool desync = j->res->finding == BS_DUMPS_DESYNC;
  for (size_t k = 0; p && k < p->n; k++) {
    const bs_dump_coll *c = &p->c[k];
    if (c->p2p || c->seq < j->first)
      continue;
    /* A desync shows each rank in its op at the mismatch, done or not (a
     * job that completed holds no op that is not). */
    bool waits =
        c->state != BS_DUMP_COMPLETED || (c->seq == s && c->seq == last);
    if ((!desync && waits) || (desync && c->seq >= s)) {
      if (desync && c->seq != s)
        break;
      r->in_coll = true;
      r->seq = c->seq;
      bs_dumps_judge_describe(c, r->desc, sizeof r->desc);
      return;
    }
    r->last_seq = c->seq;
  }
  const bs_dumps_p2p_wait *w = &j->wait[i];
  if (j->v->where && j->v->where[i]) {
    snprintf(r->desc, sizeof r->desc, "waits in %.150s (last completed #%llu)",
             j->v->where[i], (unsigned long long)r->last_seq);
    return;
  }
  if (w->op) {
    char what[BS_REPORT_DESC];
    bs_dumps_p2p_describe(w->op, what, sizeof what);
    snprintf(r->desc, sizeof r->desc, "%.150s (last completed #%llu)", what,
             (unsigned long long)r->last_seq);
    return;
  }
  if (!last && last_p2p(p)) /* p2p ops only, all done */
    snprintf(r->desc, sizeof r->desc,
             "not in an op (its p2p ops done, the "
             "last p2p #%llu)",
             (unsigned long long)last_p2p(p));
  else
    snprintf(r->desc, sizeof r->desc,
             "not in a collective (last completed #%llu)",
             (unsigned long long)r->last_seq);
}

/* ---- the first mismatch ---- */

/* Every dtype of the comma-separated list a is in list b. */
static bool within(const char *a, const char *b) {
  for (const char *p = a; *p;) {
    size_t n = strcspn(p, ",");
    bool found = false;
    for (const char *q = b; *q && !found;) {
      size_t m = strcspn(q, ",");
      found = m == n && !strncmp(p, q, n);
      q += m;
      q += strspn(q, ", ");
    }
    if (!found)
      return false;
    p += n;
    p += strspn(p, ", ");
  }
  return true;
}

/* Two lists name the same dtypes (a coalesced op of other tensors lists
 * one per tensor). */
static bool same_dtypes(const char *x, const char *y) {
  return within(x, y) && within(y, x);
}

/* The op first, then the dtype (16 x bf16 against 8 x fp32 is a dtype
 * mismatch, though the bytes agree), then the shape of as many elements,
 * then the size. */
static bs_dumps_mismatch kind_of(const bs_dump_coll *x, const bs_dump_coll *y) {
  agreed a = agreed_of(x);
  if (x->op != y->op)
    return BS_DUMPS_MISMATCH_OP;
  if ((a.in_dt && !same_dtypes(x->in_dt, y->in_dt)) ||
      (a.out_dt && !same_dtypes(x->out_dt, y->out_dt)))
    return BS_DUMPS_MISMATCH_DTYPE;
  if ((!a.in || x->in_numel == y->in_numel) &&
      (!a.out || x->out_numel == y->out_numel))
    return BS_DUMPS_MISMATCH_SHAPE;
  return BS_DUMPS_MISMATCH_SIZE;
}

/* "  first mismatch: #2, size: [[54242]] -> [[216968]] on rank 1 against
 * [[56974]] -> [[227896]] on rank 0" */
static void describe_mismatch(judge *j, const bs_dump_coll *const *c, int bad,
                              int good) {
  const int *m = j->v->members;
  bs_dumps_mismatch k = j->res->kind = kind_of(c[bad], c[good]);
  int len =
      snprintf(j->tail, sizeof j->tail,
               "  first mismatch: #%llu, %s: ", (unsigned long long)j->res->seq,
               bs_dumps_finding_mismatch_name(k));
  char *t = j->tail + len;
  size_t n = sizeof j->tail - (size_t)len;
  if (k == BS_DUMPS_MISMATCH_OP)
    snprintf(t, n, "%s on rank %d against %s on rank %d\n", c[bad]->op, m[bad],
             c[good]->op, m[good]);
  else if (k != BS_DUMPS_MISMATCH_DTYPE)
    snprintf(t, n,
             "%.100s -> %.100s on rank %d against %.100s -> %.100s on "
             "rank %d\n",
             c[bad]->in, c[bad]->out, m[bad], c[good]->in, c[good]->out,
             m[good]);
  else
    snprintf(t, n,
             "%.100s -> %.100s on rank %d against %.100s -> %.100s on "
             "rank %d\n",
             c[bad]->in_dt, c[bad]->out_dt, m[bad], c[good]->in_dt,
             c[good]->out_dt, m[good]);
}

/* An all_to_all every member holds sends as many elements as it receives,
 * over the group (torchfrtrace's check_size_alltoall); true when it does
 * not. The dumps hold each rank's totals only: whose splits are wrong is
 * not known, and no rank is blamed. */
static bool totals_differ(judge *j, uint64_t seq, const bs_dump_coll **c) {
  uint64_t in = 0, out = 0;
  for (int i = 0; i < j->n; i++) {
    if (!c[i] || bs_dumps_op_form(c[i]->op) != BS_DUMPS_ALL_TO_ALL)
      return false;
    in += c[i]->in_numel;
    out += c[i]->out_numel;
  }
  if (in == out)
    return false;
  j->res->seq = seq;
  j->res->kind = BS_DUMPS_MISMATCH_SIZE;
  snprintf(j->tail, sizeof j->tail,
           "  first mismatch: #%llu, size: the group's ranks send %llu "
           "elements in all and receive %llu: some rank's splits disagree "
           "with its peers' (the dumps hold each rank's totals only: no rank "
           "is blamed)\n",
           (unsigned long long)seq, (unsigned long long)in,
           (unsigned long long)out);
  return true;
}

/* Collective #seq: the members that hold it, grouped; true when they
 * differ (then the culprits are blamed by majority). */
static bool differ_at(judge *j, uint64_t seq, const bs_dump_coll **c,
                      char (*sig)[BS_REPORT_DESC], const char **desc) {
  const bs_dump_coll *ref = NULL;
  bool differ = false;
  for (int i = 0; i < j->n; i++) {
    c[i] = at(j, i, seq);
    if (!c[i])
      continue;
    differ = differ || (ref && !same_signature(ref, c[i]));
    ref = ref ? ref : c[i];
  }
  if (!differ)
    return totals_differ(j, seq, c);
  for (int i = 0; i < j->n; i++) {
    desc[i] = c[i] ? sig[i] : NULL;
    if (c[i])
      signature(c[i], sig[i], sizeof sig[i]);
  }
  j->res->seq = seq;
  bs_report_block_culprits(desc, j->n, 0, j->v->members, seq, j->res->culprit,
                           j->why, sizeof j->why);
  int bad = -1, good = -1;
  for (int i = 0; i < j->n; i++) {
    if (c[i] && j->res->culprit[i] && bad < 0)
      bad = i;
    if (c[i] && !j->res->culprit[i] && good < 0)
      good = i;
  }
  describe_mismatch(j, c, bad, good);
  return true;
}

/* The next seq after s that some member holds. */
static uint64_t next_seq(judge *j, uint64_t s) {
  uint64_t next = UINT64_MAX;
  for (int i = 0; i < j->n; i++) {
    const bs_dump_pg *p = j->v->pg[i];
    for (size_t k = j->cursor[i]; p && k < p->n; k++)
      if (!p->c[k].p2p && p->c[k].seq > s) {
        next = p->c[k].seq < next ? p->c[k].seq : next;
        break;
      }
  }
  return next;
}

static bs_status first_mismatch(judge *j, bool *found) {
  bs_status st = BS_OK;
  size_t n = j->n > 0 ? (size_t)j->n : 1;
  const bs_dump_coll **c = calloc(n, sizeof *c);
  char(*sig)[BS_REPORT_DESC] = calloc(n, sizeof *sig);
  const char **desc = calloc(n, sizeof *desc);
  *found = false;
  if (!c || !sig || !desc)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d ranks", j->n);
  memset(j->cursor, 0, n * sizeof *j->cursor);
  for (uint64_t s = j->first; s <= j->last && !*found; s = next_seq(j, s))
    *found = differ_at(j, s, c, sig, desc);
out:
  free(c);
  free(sig);
  free(desc);
  return st;
}

/* ---- the block ---- */

/* "4 ranks, 4 dumps, version 2.10, comm lib gloo"; another group than the
 * default one: its name, desc and members first. */
static void source(const judge *j, char *buf, size_t n) {
  const bs_dumps *d = j->v->d;
  const bs_dump_group *g = &d->groups[j->v->g];
  bool dflt = !strcmp(g->desc, "default_pg") && g->n == d->ranks;
  int k = 0;
  if (!dflt) {
    bool *pick = calloc((size_t)d->ranks + 1, sizeof *pick);
    for (int i = 0; pick && i < g->n; i++)
      pick[g->ranks[i]] = true;
    char *list = pick ? bs_report_block_ranks(pick, d->ranks) : NULL;
    char count[32];
    /* A long list (thousands of members) is its count here, whole: the
     * lines below name every rank; a list cut short would end in a wrong
     * number. */
    snprintf(count, sizeof count, "%d ranks", g->n);
    k = snprintf(buf, n, "process group %s%s%s%s of %s; ", g->name,
                 g->desc[0] ? " (" : "", g->desc, g->desc[0] ? ")" : "",
                 !list                ? "?"
                 : strlen(list) > 160 ? count
                                      : list);
    free(list);
    free(pick);
  }
  if (k >= 0 && (size_t)k < n)
    snprintf(buf + k, n - (size_t)k,
             "%d ranks, %d dump%s, version %s, comm lib %s",
             dflt ? j->n : d->ranks, (int)d->n, d->n == 1 ? "" : "s",
             d->version, d->lib);
}

static void cause(const judge *j, bool found, char *buf, size_t n) {
  int in = 0;
  uint64_t s = j->res->seq;
  if (j->v->cause) {
    snprintf(buf, n, "%s", j->v->cause);
    return;
  }
  for (int i = 0; i < j->n; i++)
    in += j->where[i].in_coll && j->where[i].seq == s;
  if (found)
    snprintf(buf, n, "the ranks issue different collectives at #%llu (%s)",
             (unsigned long long)s,
             j->res->kind == BS_DUMPS_MISMATCH_OP
                 ? "another op"
                 : bs_dumps_finding_mismatch_name(j->res->kind));
  else if (in == j->n)
    snprintf(buf, n,
             "every rank waits in #%llu and their collectives match: stuck "
             "inside a matched collective, not a schedule problem",
             (unsigned long long)s);
  else
    snprintf(buf, n,
             "%d of %d ranks wait%s in #%llu, the others are not in it%s", in,
             j->n, in == 1 ? "s" : "", (unsigned long long)s,
             j->v->dumps < j->n ? " (some left no dump)" : "");
}

/* No culprit by the rules above, and members that left no dump: they
 * are (what they did is not known; the others show every op done). */
static void blame_dumpless(judge *j) {
  bool *cul = j->res->culprit, any = false;
  for (int i = 0; i < j->n; i++)
    if (cul[i])
      return;
  for (int i = 0; i < j->n; i++)
    any |= cul[i] = !j->v->dump[i];
  if (any)
    snprintf(j->why, sizeof j->why,
             "left no dump, while every other member's dump shows its ops "
             "done");
}

/* A hang at collective s: those missing from it, or outside the largest
 * group of alike ranks in it (alike as a desync compares them: a gather's
 * root and its other ranks are); a missing rank that waits in a p2p op
 * its peer never issued hands the blame to that peer. */
static bs_status blame_stuck(judge *j) {
  uint64_t s = j->res->seq;
  size_t n = j->n > 0 ? (size_t)j->n : 1;
  const char **desc = calloc(n, sizeof *desc);
  char(*sig)[BS_REPORT_DESC] = calloc(n, sizeof *sig);
  if (!desc || !sig) {
    free(desc);
    free(sig);
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: %d ranks", j->n);
  }
  memset(j->cursor, 0, n * sizeof *j->cursor);
  for (int i = 0; i < j->n; i++) {
    const bs_report_rank *r = &j->where[i];
    const bs_dump_coll *c = r->in_coll && r->seq == s ? at(j, i, s) : NULL;
    if (c)
      signature(c, sig[i], sizeof sig[i]);
    desc[i] = c ? sig[i] : NULL;
    j->res->waiting[i] = desc[i] != NULL;
  }
  bs_report_block_culprits(desc, j->n, 0, j->v->members, s, j->res->culprit,
                           j->why, sizeof j->why);
  for (int i = 0; i < j->n; i++) {
    char why[sizeof j->why];
    int to = j->res->culprit[i] && !desc[i]
                 ? bs_dumps_p2p_blame(j->v, j->wait, i, why, sizeof why)
                 : -1;
    if (to < 0 || to == i)
      continue;
    j->res->culprit[i] = false;
    j->res->culprit[to] = true;
    snprintf(j->why, sizeof j->why, "%s", why);
  }
  blame_dumpless(j);
  free(desc);
  free(sig);
  return BS_OK;
}

static bs_status write_block(judge *j, bool found) {
  char src[400], why[600];
  source(j, src, sizeof src);
  cause(j, found, why, sizeof why);
  bs_report_block b = {.status = found ? "desync" : "hang",
                       .source = src,
                       .cause = why,
                       .n = j->n,
                       .rank_of = j->v->members,
                       .ranks = j->where,
                       .culprit = j->v->quiet ? j->none : j->res->culprit,
                       .culprit_why = j->why,
                       .tail = found ? j->tail : NULL};
  j->res->text = bs_report_block_format(&b);
  return j->res->text ? BS_OK
                      : bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: report");
}

/* ---- p2p only: a member waits in a p2p op, no collective is stuck ---- */

static bs_status p2p_block(judge *j, int i) {
  bs_status st = BS_OK;
  const bs_dumps_p2p_wait *w = &j->wait[i];
  char src[400], what[BS_REPORT_DESC];
  bs_buf b = {0};
  int to = bs_dumps_p2p_blame(j->v, j->wait, i, j->why, sizeof j->why);
  source(j, src, sizeof src);
  bs_dumps_p2p_describe(w->op, what, sizeof what);
  j->res->p2p = true;
  j->res->seq = w->op->seq;
  for (int k = 0; k < j->n; k++)
    j->res->waiting[k] = j->wait[k].op != NULL;
  if (to >= 0)
    j->res->culprit[to] = true;
  else
    snprintf(j->why, sizeof j->why, "rank %d and its peer both issued %s",
             j->v->members[i], what);
  bs_buf_printf(&b, "backstop: hang at p2p #%llu (%s)\n",
                (unsigned long long)w->op->seq, src);
  bs_buf_printf(&b, "  cause: %s\n", j->v->cause ? j->v->cause : j->why);
  for (int k = 0; k < j->n; k++) {
    char desc[BS_REPORT_DESC];
    if (j->wait[k].op)
      bs_dumps_p2p_describe(j->wait[k].op, desc, sizeof desc);
    bs_buf_printf(&b, "  rank %d: %s\n", j->v->members[k],
                  j->wait[k].op ? desc : j->where[k].desc);
  }
  if (to >= 0 && !j->v->quiet)
    bs_buf_printf(&b, "  culprit: rank %d (%s)\n", j->v->members[to], j->why);
  if (b.oom)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: report");
  j->res->text = b.s;
  b.s = NULL;
out:
  bs_buf_free(&b);
  return st;
}

/* The lowest member waiting in a p2p op (-1: none). */
static int p2p_waiter(const judge *j) {
  for (int i = 0; i < j->n; i++)
    if (j->wait[i].op)
      return i;
  return -1;
}

/* "hang at all_reduce #2: rank 1 waits, rank 3 missing" for the groups'
 * summary. */
static void one_line(judge *j) {
  const bs_dumps_view *v = j->v;
  const bs_dump_group *g = &v->d->groups[v->g];
  bool *wait = j->res->waiting, *cul = j->res->culprit;
  /* The line names global ranks. */
  char *wg = NULL, *cg = NULL;
  bool *pick = calloc((size_t)v->d->ranks + 1, sizeof *pick);
  for (int pass = 0; pick && pass < 2; pass++) {
    bool any = false;
    memset(pick, 0, ((size_t)v->d->ranks + 1) * sizeof *pick);
    for (int i = 0; i < v->n; i++)
      any |= pick[v->members[i]] = pass ? cul[i] : wait[i];
    *(pass ? &cg : &wg) = any ? bs_report_block_ranks(pick, v->d->ranks) : NULL;
  }
  snprintf(j->res->line, sizeof j->res->line,
           "process group %s%s%s%s: %s at %s #%llu: %s %s, culprit %s", g->name,
           g->desc[0] ? " (" : "", g->desc, g->desc[0] ? ")" : "",
           j->res->finding == BS_DUMPS_DESYNC ? "desync" : "hang",
           j->res->p2p ? "p2p" : "collective", (unsigned long long)j->res->seq,
           wg && wg[0] ? wg : "none",
           j->res->finding == BS_DUMPS_DESYNC ? "in it" : "waiting",
           cg && cg[0] ? cg : "not known");
  free(wg);
  free(cg);
  free(pick);
}

/* Whether the dump holds an entry issued after c. */
static bool went_on(const bs_dump *d, const bs_dump_coll *c) {
  for (size_t k = 0; k < d->npg; k++)
    if (d->pg[k].n && d->pg[k].c[d->pg[k].n - 1].rid > c->rid)
      return true;
  return false;
}

/* Whether a member with a dump issued ops after collective #s: a
 * collective returns to its caller once every member is in it (a gloo op
 * that failed for want of a peer raises instead). */
static bool one_went_on(judge *j, uint64_t s) {
  for (int i = 0; i < j->n; i++) {
    const bs_dump_coll *c =
        j->v->dump[i] ? bs_dumps_pg_find(j->v->pg[i], s) : NULL;
    if (c && went_on(j->v->dump[i], c))
      return true;
  }
  return false;
}

static bs_status decide(judge *j) {
  bs_status st = BS_OK;
  bool found = false;
  bs_dumps_gres *res = j->res;
  span(j);
  BS_CHECK(bs_dumps_p2p_waits(j->v, j->wait));
  BS_CHECK(first_mismatch(j, &found));
  uint64_t s = found ? res->seq : stuck_at(j);
  int waiter = p2p_waiter(j);
  /* A member without a dump is not shown done: the hang is where the
   * others' collectives end, unless one waits in a p2p op (its peer may
   * be that member: the p2p block follows the wait to it), or another
   * member went on past it (it returned: that member was in it). */
  if (!s && j->v->dumps < j->n && waiter < 0 && j->last &&
      !one_went_on(j, j->last)) {
    s = j->last;
    res->dumpless = true;
  }
  res->finding = found ? BS_DUMPS_DESYNC : BS_DUMPS_CLEAN;
  for (int i = 0; i < j->n; i++)
    place(j, i, s);
  if (found) {
    for (int i = 0; i < j->n; i++)
      res->waiting[i] = j->where[i].in_coll && j->where[i].seq == s;
    BS_CHECK(write_block(j, true));
  } else if (s) {
    res->finding = BS_DUMPS_HANG;
    res->seq = s;
    BS_CHECK(blame_stuck(j));
    BS_CHECK(write_block(j, false));
  } else if (waiter >= 0) {
    res->finding = BS_DUMPS_HANG;
    BS_CHECK(p2p_block(j, waiter));
  } else {
    res->finding = BS_DUMPS_CLEAN;
    goto out;
  }
  one_line(j);
out:
  return st;
}

bs_status bs_dumps_judge(const bs_dumps_view *v, bs_dumps_gres *res) {
  bs_status st = BS_OK;
  size_t n = v->n > 0 ? (size_t)v->n : 1;
  judge j = {.v = v, .n = v->n, .res = res};
  memset(res, 0, sizeof *res);
  j.where = calloc(n, sizeof *j.where);
  j.none = calloc(n, sizeof *j.none);
  j.cursor = calloc(n, sizeof *j.cursor);
  j.wait = calloc(n, sizeof *j.wait);
  res->culprit = calloc(n, sizeof *res->culprit);
  res->waiting = calloc(n, sizeof *res->waiting);
  if (!j.where || !j.none || !j.cursor || !j.wait || !res->culprit ||
      !res->waiting)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d ranks", v->n);
  BS_CHECK(decide(&j));
out:
  free(j.where);
  free(j.none);
  free(j.cursor);
  free(j.wait);
  if (st != BS_OK)
    bs_dumps_judge_gres_free(res);
  return st;
}

void bs_dumps_judge_gres_free(bs_dumps_gres *res) {
  free(res->culprit);
  free(res->waiting);
  free(res->text);
  memset(res, 0, sizeof *res);
}
