/* `backstop analyze`: the dumps' collectives compared rank against rank,
 * sequence number by sequence number, and the world's report block
 * written from what they say. */
#include "dumps/bs_dumps_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/front/bs_comm_report.h"
#include "util/bs_buf.h"
#include "util/bs_json.h"

/* Backstop's names for the dtypes it has (PyTorch's otherwise). */
static const char *dtype_name(const char *torch) {
  bs_dtype dt;
  return bs_dumps_dtype(torch, &dt) ? bs_dtype_name(dt) : torch;
}

/* "all_gather #11 (56974 x uint8)": a collective as the world's report
 * writes it (a dtype Backstop has by Backstop's name). */
static void describe(const bs_dump_coll *c, char *buf, size_t n) {
  int k = snprintf(buf, n, "%s #%llu", c->op, (unsigned long long)c->seq);
  bool one = c->in_tensors == 1 && c->out_tensors == 1 &&
             strcmp(c->in_dt, c->out_dt) == 0 && !strchr(c->in_dt, ',');
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

/* Everything ranks must agree on, for grouping them. */
static void signature(const bs_dump_coll *c, char *buf, size_t n) {
  snprintf(buf, n, "%s #%llu (%s %s -> %s %s)", c->op,
           (unsigned long long)c->seq, c->in, c->in_dt, c->out, c->out_dt);
}

/* ---- where each rank is ---- */

typedef struct analysis {
  const bs_dumps *d;
  int n;                 /* ranks of the group */
  int dumps;             /* of them, those that left a dump */
  uint64_t first, last;  /* sequence numbers every dump / some dump holds */
  bs_report_rank *where; /* by position in the group */
  size_t *cursor;        /* per dump: the entry at or after a seq */
  const bs_dump **dump;  /* by position; NULL: no dump */
  /* Whom the report blames, by position (a desync: its first mismatch; a
   * hang: the stuck collective), and why. */
  bool *culprit;
  char why[2 * BS_REPORT_DESC + 160];
} analysis;

/* The first collective rank i has not completed, from the first seq on. */
static void place(analysis *a, int i) {
  bs_report_rank *r = &a->where[i];
  const bs_dump *d = a->dump[i];
  if (!d) {
    snprintf(r->desc, sizeof r->desc, "no dump (where it is is not known)");
    return;
  }
  for (size_t k = 0; k < d->n; k++) {
    const bs_dump_coll *c = &d->c[k];
    if (c->p2p || c->seq < a->first)
      continue;
    if (c->state != BS_DUMP_COMPLETED) {
      r->in_coll = true;
      r->seq = c->seq;
      describe(c, r->desc, sizeof r->desc);
      return;
    }
    r->last_seq = c->seq;
  }
  snprintf(r->desc, sizeof r->desc,
           "not in a collective (last completed #%llu)",
           (unsigned long long)r->last_seq);
}

/* Rank i's collective #seq (entries run in order: a cursor per dump). */
static const bs_dump_coll *at(analysis *a, int i, uint64_t seq) {
  const bs_dump *d = a->dump[i];
  if (!d)
    return NULL;
  size_t *k = &a->cursor[i];
  while (*k < d->n && (d->c[*k].p2p || d->c[*k].seq < seq))
    (*k)++;
  return *k < d->n && d->c[*k].seq == seq ? &d->c[*k] : NULL;
}

/* ---- the first mismatch ---- */

typedef struct mismatch {
  uint64_t seq;
  bs_dumps_mismatch kind;
  char line[2 * BS_REPORT_DESC + 160];
} mismatch;

const char *bs_dumps_report_mismatch_name(bs_dumps_mismatch k) {
  static const char *const names[] = {
      [BS_DUMPS_MISMATCH_NONE] = "",
      [BS_DUMPS_MISMATCH_OP] = "op",
      [BS_DUMPS_MISMATCH_SIZE] = "size",
      [BS_DUMPS_MISMATCH_DTYPE] = "dtype",
  };
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

static bs_dumps_mismatch kind_of(const bs_dump_coll *x, const bs_dump_coll *y) {
  if (x->op != y->op)
    return BS_DUMPS_MISMATCH_OP;
  if (x->in != y->in || x->out != y->out)
    return BS_DUMPS_MISMATCH_SIZE;
  return BS_DUMPS_MISMATCH_DTYPE;
}

/* "size: input [[54242]] on ranks 1,3 against [[56974]] on ranks 0,2". */
static void describe_mismatch(analysis *a, mismatch *m,
                              const bs_dump_coll *const *c, int bad, int good) {
  bs_buf b = {0};
  m->kind = kind_of(c[bad], c[good]);
  bs_buf_printf(&b, "  first mismatch: #%llu, %s: ", (unsigned long long)m->seq,
                bs_dumps_report_mismatch_name(m->kind));
  if (m->kind == BS_DUMPS_MISMATCH_OP)
    bs_buf_printf(&b, "%s on rank %d against %s on rank %d", c[bad]->op,
                  a->d->members[bad], c[good]->op, a->d->members[good]);
  else if (m->kind == BS_DUMPS_MISMATCH_SIZE)
    bs_buf_printf(&b, "%s -> %s on rank %d against %s -> %s on rank %d",
                  c[bad]->in, c[bad]->out, a->d->members[bad], c[good]->in,
                  c[good]->out, a->d->members[good]);
  else
    bs_buf_printf(&b, "%s -> %s on rank %d against %s -> %s on rank %d",
                  c[bad]->in_dt, c[bad]->out_dt, a->d->members[bad],
                  c[good]->in_dt, c[good]->out_dt, a->d->members[good]);
  snprintf(m->line, sizeof m->line, "%s\n", bs_buf_str(&b));
  bs_buf_free(&b);
}

/* Collective #seq: the ranks that hold it, grouped; true when they differ. */
static bool differ_at(analysis *a, uint64_t seq, mismatch *m,
                      const bs_dump_coll **c, char (*sig)[BS_REPORT_DESC],
                      const char **desc) {
  bool differ = false;
  const bs_dump_coll *ref = NULL;
  for (int i = 0; i < a->n; i++) {
    c[i] = at(a, i, seq);
    desc[i] = NULL;
    if (!c[i])
      continue;
    signature(c[i], sig[i], sizeof sig[i]);
    desc[i] = sig[i];
    differ =
        differ || (ref && (ref->op != c[i]->op || ref->in != c[i]->in ||
                           ref->out != c[i]->out || ref->in_dt != c[i]->in_dt ||
                           ref->out_dt != c[i]->out_dt));
    ref = ref ? ref : c[i];
  }
  if (!differ)
    return false;
  m->seq = seq;
  bs_comm_report_culprits(desc, a->n, 0, a->d->members, seq, a->culprit, a->why,
                          sizeof a->why);
  int bad = -1, good = -1;
  for (int i = 0; i < a->n; i++) {
    if (c[i] && a->culprit[i] && bad < 0)
      bad = i;
    if (c[i] && !a->culprit[i] && good < 0)
      good = i;
  }
  describe_mismatch(a, m, c, bad, good);
  return true;
}

/* The next sequence number after s that some dump holds (the numbers in
 * between are nobody's: a dump cannot make the search run long). */
static uint64_t next_seq(analysis *a, uint64_t s) {
  uint64_t next = UINT64_MAX;
  for (int i = 0; i < a->n; i++) {
    const bs_dump *d = a->dump[i];
    for (size_t k = a->cursor[i]; d && k < d->n; k++)
      if (!d->c[k].p2p && d->c[k].seq > s) {
        next = d->c[k].seq < next ? d->c[k].seq : next;
        break;
      }
  }
  return next;
}

static bs_status first_mismatch(analysis *a, mismatch *m, bool *found) {
  bs_status st = BS_OK;
  size_t n = (size_t)a->n;
  const bs_dump_coll **c = calloc(n, sizeof *c);
  char(*sig)[BS_REPORT_DESC] = calloc(n, sizeof *sig);
  const char **desc = calloc(n, sizeof *desc);
  *found = false;
  if (!c || !sig || !desc)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d ranks", a->n);
  memset(a->cursor, 0, n * sizeof *a->cursor);
  for (uint64_t s = a->first; s <= a->last && !*found; s = next_seq(a, s))
    *found = differ_at(a, s, m, c, sig, desc);
out:
  free(c);
  free(sig);
  free(desc);
  return st;
}

/* ---- the block ---- */

static void cause(const analysis *a, const mismatch *m, bool found,
                  bs_dumps_finding f, uint64_t stuck, char *buf, size_t n) {
  int in = 0;
  for (int i = 0; i < a->n; i++)
    in += a->where[i].in_coll && a->where[i].seq == stuck;
  if (found)
    snprintf(buf, n, "the ranks issue different collectives at #%llu (%s)",
             (unsigned long long)m->seq,
             m->kind == BS_DUMPS_MISMATCH_OP
                 ? "another op"
                 : bs_dumps_report_mismatch_name(m->kind));
  else if (f == BS_DUMPS_HANG && in == a->n)
    snprintf(buf, n,
             "every rank waits in #%llu and their collectives match: stuck "
             "inside a matched collective, not a schedule problem",
             (unsigned long long)stuck);
  else
    snprintf(buf, n,
             "%d of %d ranks wait%s in #%llu, the others are not in "
             "it%s",
             in, a->n, in == 1 ? "s" : "", (unsigned long long)stuck,
             a->dumps < a->n ? " (some left no dump)" : "");
}

/* A hang: whom the stuck collective blames (those missing from it, or
 * outside the largest group of alike ranks in it). */
static bs_status blame_stuck(analysis *a, uint64_t stuck) {
  const char **desc = calloc((size_t)a->n, sizeof *desc);
  if (!desc)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: %d ranks", a->n);
  for (int i = 0; i < a->n; i++) {
    const bs_report_rank *r = &a->where[i];
    desc[i] = r->in_coll && r->seq == stuck ? r->desc : NULL;
  }
  bs_comm_report_culprits(desc, a->n, 0, a->d->members, stuck, a->culprit,
                          a->why, sizeof a->why);
  free(desc);
  return BS_OK;
}

/* The culprits as global ranks (a desync's were blamed by its mismatch). */
static bs_status verdict(analysis *a, bool found, bs_dumps_verdict *v) {
  bs_status st = BS_OK;
  /* n > 0 said to gcc 13, which finds a negative n's size otherwise. */
  if (!(v->culprits = calloc(a->n > 0 ? (size_t)a->n : 1, sizeof(int))))
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d ranks", a->n);
  if (!found)
    BS_CHECK(blame_stuck(a, v->stuck_seq));
  for (int i = 0; i < a->n; i++)
    if (a->culprit[i])
      v->culprits[v->nculprits++] = a->d->members[i];
out:
  return st;
}

static uint64_t stuck_of(const analysis *a, bool *any) {
  uint64_t s = UINT64_MAX, done = 0;
  *any = false;
  for (int i = 0; i < a->n; i++) {
    const bs_report_rank *r = &a->where[i];
    *any = *any || r->in_coll;
    if (r->in_coll && r->seq < s)
      s = r->seq;
    done = r->last_seq > done ? r->last_seq : done;
  }
  return s == UINT64_MAX ? done + 1 : s;
}

static bs_status write_block(const analysis *a, const mismatch *m, bool found,
                             bs_dumps_verdict *v) {
  char source[256], why[600];
  snprintf(source, sizeof source,
           "%d ranks, %d dump%s, version %s, comm lib %s%s%s", a->n, a->dumps,
           a->dumps == 1 ? "" : "s", a->d->version, a->d->lib,
           strcmp(a->d->pg_desc, "default_pg") ? ", process group " : "",
           strcmp(a->d->pg_desc, "default_pg") ? a->d->pg_desc : "");
  cause(a, m, found, v->finding, v->stuck_seq, why, sizeof why);
  bs_report_block b = {.status = found ? "desync" : "hang",
                       .source = source,
                       .cause = why,
                       .n = a->n,
                       .rank_of = a->d->members,
                       .ranks = a->where,
                       .culprit = a->culprit,
                       .culprit_why = a->why,
                       .tail = found ? m->line : NULL};
  v->text = bs_comm_report_format(&b);
  return v->text ? BS_OK : bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: report");
}

static bs_status clean_text(const analysis *a, bs_dumps_verdict *v) {
  if (asprintf(&v->text,
               "backstop: no hang and no desync in %d dump%s of %d ranks: "
               "every rank completed every collective it holds (#%llu to "
               "#%llu), and they match\n",
               a->dumps, a->dumps == 1 ? "" : "s", a->n,
               (unsigned long long)a->first, (unsigned long long)a->last) < 0)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "analyze: report");
  return BS_OK;
}

static void span(analysis *a) {
  a->first = bs_dumps_first_seq(a->d);
  a->last = 0;
  for (size_t i = 0; i < a->d->n; i++)
    for (size_t k = 0; k < a->d->d[i].n; k++)
      if (!a->d->d[i].c[k].p2p && a->d->d[i].c[k].seq > a->last)
        a->last = a->d->d[i].c[k].seq;
}

static bs_status judge(analysis *a, bs_dumps_verdict *v) {
  bs_status st = BS_OK;
  mismatch m = {0};
  bool found = false, stuck = false;
  span(a);
  for (int i = 0; i < a->n; i++)
    place(a, i);
  BS_CHECK(first_mismatch(a, &m, &found));
  v->stuck_seq = stuck_of(a, &stuck);
  v->finding = found                      ? BS_DUMPS_DESYNC
               : stuck || a->dumps < a->n ? BS_DUMPS_HANG
                                          : BS_DUMPS_CLEAN;
  if (found) {
    v->mismatch_seq = m.seq;
    v->kind = m.kind;
  }
  if (v->finding == BS_DUMPS_CLEAN) {
    v->stuck_seq = 0;
    BS_CHECK(clean_text(a, v));
    goto out;
  }
  BS_CHECK(verdict(a, found, v));
  BS_CHECK(write_block(a, &m, found, v));
out:
  return st;
}

bs_status bs_dumps_report(const bs_dumps *d, bs_dumps_verdict *out) {
  bs_status st = BS_OK;
  analysis a = {.d = d, .n = d->world};
  size_t n = (size_t)d->world;
  memset(out, 0, sizeof *out);
  a.where = calloc(n, sizeof *a.where);
  a.cursor = calloc(n, sizeof *a.cursor);
  a.dump = calloc(n, sizeof *a.dump);
  a.culprit = calloc(n, sizeof *a.culprit);
  if (!a.where || !a.cursor || !a.dump || !a.culprit)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: %d ranks", d->world);
  for (int i = 0; i < d->world; i++) {
    a.dump[i] = bs_dumps_rank(d, d->members[i]);
    a.dumps += a.dump[i] != NULL;
  }
  st = judge(&a, out);
out:
  free(a.where);
  free(a.cursor);
  free(a.dump);
  free(a.culprit);
  if (st != BS_OK)
    bs_dumps_report_verdict_free(out);
  return st;
}

void bs_dumps_report_verdict_free(bs_dumps_verdict *v) {
  free(v->culprits);
  free(v->text);
  memset(v, 0, sizeof *v);
}

bs_status bs_dumps_report_flights(const char *const *flights, int n,
                                  bs_dumps_verdict *out) {
  bs_status st = BS_OK;
  bs_dumps d = {0};
  memset(out, 0, sizeof *out);
  for (int k = 0; k < n; k++) {
    char name[32];
    bs_json root = {0};
    if (!flights[k] || !flights[k][0])
      continue;
    snprintf(name, sizeof name, "rank%d.flight.json", k);
    st = bs_json_parse(flights[k], strlen(flights[k]), &root);
    if (st == BS_OK)
      st = bs_dumps_add(&d, &root, name, NULL);
    bs_json_free(&root);
    BS_CHECK(st);
  }
  if (d.n == 0)
    BS_FAIL(BS_ERR_INVALID, NULL, "no rank left its flight recorder");
  BS_CHECK(bs_dumps_finish(&d));
  BS_CHECK(bs_dumps_report(&d, out));
out:
  bs_dumps_free(&d);
  return st;
}
