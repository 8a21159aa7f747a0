/* The hang/desync report block: one a user can read at a glance. Ranks
 * that are in the same place are grouped ("ranks 0-6: all_gather #12
 * ..."), the ranks missing from the stuck collective are named, and the
 * culprit is chosen by majority. Its layout is public: the world writes it
 * (bs_comm_report.c, bs_comm_report_pg.c) and `backstop analyze` writes
 * the same block from a job's dumps. */
#include "comm/front/bs_comm_report.h"

#include "comm/front/bs_comm_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_buf.h"

static void put(bs_buf *o, const char *s) {
  bs_buf_append(o, s, strlen(s));
}

/* A stand-in (a->name) shows its count and dtype only: the reduction or
 * root of the op standing in for it are not the recorded op's. */
static void describe_coll(const bs_coll_args *a, char *buf, size_t n) {
  static const char *const ops[BS_REDOP_COUNT] = {"sum", "max", "min"};
  bool own = !a->name[0];
  int k = snprintf(buf, n, "%s #%llu", bs_coll_args_name(a),
                   (unsigned long long)a->seq);
  if (own && (a->op == BS_COLL_SEND || a->op == BS_COLL_RECV))
    k += snprintf(buf + k, n - (size_t)k, " %s rank %d (%zu x %s)",
                  a->op == BS_COLL_SEND ? "to" : "from", a->peer, a->count,
                  bs_dtype_name(a->dt));
  else if (own &&
           (a->op == BS_COLL_REDUCE_SCATTER || a->op == BS_COLL_ALL_REDUCE))
    k += snprintf(buf + k, n - (size_t)k, " (%zu x %s, %s)", a->count,
                  bs_dtype_name(a->dt),
                  (unsigned)a->redop < BS_REDOP_COUNT ? ops[a->redop] : "?");
  else if (own && a->op == BS_COLL_BROADCAST)
    k += snprintf(buf + k, n - (size_t)k, " (%zu x %s, root %d)", a->count,
                  bs_dtype_name(a->dt), a->root);
  else if (bs_coll_has_data(a->op))
    k += snprintf(buf + k, n - (size_t)k, " (%zu x %s)", a->count,
                  bs_dtype_name(a->dt));
  if (a->label && k >= 0 && (size_t)k < n)
    snprintf(buf + k, n - (size_t)k, " [%s]", a->label);
}

static void describe(const bs_rank_pos *p, bs_report_rank *r) {
  char *buf = r->desc;
  size_t n = sizeof r->desc;
  r->in_coll = p->state == BS_RANK_IN_COLL;
  r->seq = p->at.seq;
  r->last_seq = p->last_seq;
  unsigned long long last = (unsigned long long)p->last_seq;
  switch (p->state) {
  case BS_RANK_IN_COLL:
    describe_coll(&p->at, buf, n);
    break;
  case BS_RANK_RUNNING:
    snprintf(buf, n, "not in a collective (last completed #%llu)", last);
    break;
  case BS_RANK_EXITED:
    snprintf(buf, n, "exited after #%llu: %s", last, p->why);
    break;
  default:
    snprintf(buf, n, "dead after #%llu: %s", last, p->why);
    break;
  }
}

/* How the block numbers its ranks. */
typedef struct numbering {
  int first;
  const int *map;
} numbering;

static int rank_at(numbering k, int i) {
  return k.map ? k.map[i] : k.first + i;
}

/* The end of the run of ranks from a on that step by one (z > a) or, of
 * STRIDE_RUN or more, by one other step ("1,3,...,4093": the odd ranks of
 * a TP x DP job are one DP group; 2047 numbers would hide the line). */
#define STRIDE_RUN 5
static int run_end(const int *idx, int m, numbering k, int a, int *step) {
  int z = a;
  *step = 1;
  while (z + 1 < m && idx[z + 1] == idx[z] + 1 &&
         rank_at(k, idx[z + 1]) == rank_at(k, idx[z]) + 1)
    z++;
  if (z > a || a + 1 >= m)
    return z;
  *step = rank_at(k, idx[a + 1]) - rank_at(k, idx[a]);
  while (z + 1 < m && rank_at(k, idx[z + 1]) - rank_at(k, idx[z]) == *step)
    z++;
  return *step > 1 && z - a + 1 >= STRIDE_RUN ? z : a;
}

/* "rank 3", "ranks 0-6,9" or "ranks 1,3,...,13": the m ranks
 * idx[0..m-1] (ascending). */
static void put_list(bs_buf *o, const int *idx, int m, numbering k) {
  put(o, m == 1 ? "rank " : "ranks ");
  for (int a = 0; a < m; a++) {
    int step = 1, z = run_end(idx, m, k, a, &step);
    int first = rank_at(k, idx[a]);
    bs_buf_printf(o, a ? ",%d" : "%d", first);
    if (z > a && step == 1)
      bs_buf_printf(o, "-%d", rank_at(k, idx[z]));
    else if (z > a)
      bs_buf_printf(o, ",%d,...,%d", first + step, rank_at(k, idx[z]));
    a = z;
  }
}

/* The ranks i with pick[i] set, into idx; returns how many. */
static int picked(const bool *pick, int n, int *idx) {
  int m = 0;
  for (int i = 0; i < n; i++)
    if (pick[i])
      idx[m++] = i;
  return m;
}

char *bs_report_block_ranks(const bool *pick, int n) {
  bs_buf o = {0};
  int *idx = malloc((n > 0 ? (size_t)n : 1) * sizeof *idx);
  if (!idx)
    return NULL;
  put_list(&o, idx, picked(pick, n, idx), (numbering){0, NULL});
  free(idx);
  return bs_buf_take(&o);
}

/* The ranks grouped by equal descriptions, made once by sorting (thousands
 * of ranks in as many places must not cost a comparison per pair): group g
 * holds member[start[g] .. start[g + 1]), ascending, and the groups are
 * numbered in order of their lowest rank; of[i] is rank i's group, -1 for
 * a rank without a description. */
typedef struct groups {
  int count;
  int *member, *start, *of;
} groups;

typedef struct keyed {
  const char *desc;
  int i;
} keyed;

static int by_desc_then_rank(const void *x, const void *y) {
  const keyed *a = x, *b = y;
  int c = strcmp(a->desc, b->desc);
  return c ? c : (a->i > b->i) - (a->i < b->i);
}

static void groups_free(groups *g) {
  free(g->member);
  free(g->start);
  free(g->of);
  *g = (groups){0};
}

/* of[i]: the lowest rank of rank i's group (sorted by description, then
 * rank, the first of each run). */
static void lowest_of(const keyed *k, int m, int *of) {
  int head = 0;
  for (int j = 0; j < m; j++) {
    if (j > 0 && strcmp(k[j].desc, k[j - 1].desc) != 0)
      head = j;
    of[k[j].i] = k[head].i;
  }
}

/* of[i], a lowest rank, becomes its group's number (in order of the
 * lowest ranks), and each group's members are placed in rank order (a
 * counting sort). at: n ints of room. */
static void place(groups *g, int n, int *at) {
  for (int i = 0; i < n; i++) {
    if (g->of[i] < 0)
      continue;
    if (g->of[i] == i) /* a group's lowest rank: the next group */
      at[i] = g->count++;
    g->of[i] = at[g->of[i]];
    g->start[g->of[i] + 1]++;
  }
  for (int x = 0; x < g->count; x++) {
    g->start[x + 1] += g->start[x];
    at[x] = g->start[x]; /* now group x's next free member */
  }
  for (int i = 0; i < n; i++)
    if (g->of[i] >= 0)
      g->member[at[g->of[i]]++] = i;
}

/* Groups the n descriptions (desc[i] NULL: rank i in none); false (no
 * groups) when out of memory. */
static bool groups_make(groups *g, const char *const *desc, int n) {
  size_t m = n > 0 ? (size_t)n : 1;
  int nk = 0;
  keyed *k = malloc(m * sizeof *k);
  int *at = malloc(m * sizeof *at);
  *g = (groups){.member = malloc(m * sizeof *g->member),
                .start = calloc(m + 1, sizeof *g->start),
                .of = malloc(m * sizeof *g->of)};
  bool ok = k && at && g->member && g->start && g->of;
  for (int i = 0; ok && i < n; i++) {
    g->of[i] = -1;
    if (desc[i])
      k[nk++] = (keyed){desc[i], i};
  }
  if (ok) {
    qsort(k, (size_t)nk, sizeof *k, by_desc_then_rank);
    lowest_of(k, nk, g->of);
    place(g, n, at);
  } else {
    groups_free(g);
  }
  free(k);
  free(at);
  return ok;
}

static numbering numbering_of(const bs_report_block *b) {
  return (numbering){b->first_rank, b->rank_of};
}

/* The sequence number the world is stuck at: the lowest one a rank waits
 * in, else the one after the last completed. */
static uint64_t stuck_seq(const bs_report_block *b) {
  uint64_t s = UINT64_MAX, done = 0;
  for (int i = 0; i < b->n; i++) {
    const bs_report_rank *r = &b->ranks[i];
    if (r->in_coll && r->seq < s)
      s = r->seq;
    if (r->last_seq > done)
      done = r->last_seq;
  }
  return s == UINT64_MAX ? done + 1 : s;
}

static int group_size(const groups *g, int x) {
  return g->start[x + 1] - g->start[x];
}

/* One line per group of alike ranks, in order of their lowest rank. */
static void put_groups(bs_buf *o, const bs_report_block *b, const groups *g) {
  for (int x = 0; x < g->count; x++) {
    const int *member = g->member + g->start[x];
    put(o, "  ");
    put_list(o, member, group_size(g, x), numbering_of(b));
    bs_buf_printf(o, ": %s\n", b->ranks[member[0]].desc);
  }
}

static void put_missing(bs_buf *o, const bs_report_block *b, uint64_t seq,
                        int *idx) {
  int m = 0;
  for (int i = 0; i < b->n; i++) {
    const bs_report_rank *r = &b->ranks[i];
    if (!(r->in_coll && r->seq == seq))
      idx[m++] = i;
  }
  bs_buf_printf(o, "  missing from #%llu: ", (unsigned long long)seq);
  if (m)
    put_list(o, idx, m, numbering_of(b));
  else if (b->world > b->n) /* a process's block: the others say theirs */
    bs_buf_printf(o,
                  "none of the %d here (the other %d: their processes' blocks)",
                  b->n, b->world - b->n);
  else
    put(o, "none (every rank is there, in a different collective)");
  bs_buf_append(o, "\n", 1);
}

/* The largest group; a tie goes to the one with the lowest rank. */
static int largest(const groups *g, bool *tie) {
  int best = 0;
  for (int x = 1; x < g->count; x++)
    best = group_size(g, x) > group_size(g, best) ? x : best;
  *tie = false;
  for (int x = 0; x < g->count; x++)
    *tie = *tie || (x != best && group_size(g, x) == group_size(g, best));
  return best;
}

static void put_why(bs_buf *o, const char *const *desc, const groups *g,
                    int best, bool tie, numbering k) {
  const int *member = g->member + g->start[best];
  put(o, tie ? "an even split: " : "against the majority: ");
  put_list(o, member, group_size(g, best), k);
  bs_buf_printf(o, " in %s", desc[member[0]]);
  if (tie)
    put(o, ", the group with the lowest rank, taken as right");
}

int bs_report_block_culprits(const char *const *desc, int n, int first_rank,
                             const int *rank_of, uint64_t seq, bool *culprit,
                             char *why, size_t why_n) {
  int best = 0, blamed = 0;
  bool tie = false;
  groups g;
  groups_make(&g, desc, n); /* out of memory: no groups, no one blamed */
  bs_buf o = {0};
  if (g.count)
    best = largest(&g, &tie);
  for (int i = 0; i < n; i++) {
    if (g.count > 1)
      culprit[i] = g.of[i] >= 0 && g.of[i] != best;
    else
      culprit[i] = g.count == 1 && !desc[i];
    blamed += culprit[i];
  }
  if (why_n && g.count > 1)
    put_why(&o, desc, &g, best, tie, (numbering){first_rank, rank_of});
  else if (why_n && blamed)
    bs_buf_printf(&o, "missing from #%llu", (unsigned long long)seq);
  if (why_n)
    snprintf(why, why_n, "%s", bs_buf_str(&o));
  bs_buf_free(&o);
  groups_free(&g);
  return blamed;
}

/* Blamed as bs_report_block_culprits says of the stuck collective, or as
 * the caller says. */
static void put_culprit(bs_buf *o, const bs_report_block *b, uint64_t seq,
                        const char **desc, bool *pick, int *idx) {
  char why[2 * BS_REPORT_DESC + 160] = "";
  const char *reason = b->culprit_why;
  for (int i = 0; i < b->n; i++) {
    const bs_report_rank *r = &b->ranks[i];
    desc[i] = r->in_coll && r->seq == seq ? r->desc : NULL;
  }
  if (b->culprit) {
    memcpy(pick, b->culprit, (size_t)b->n * sizeof *pick);
  } else {
    bs_report_block_culprits(desc, b->n, b->first_rank, b->rank_of, seq, pick,
                             why, sizeof why);
    reason = why;
  }
  int blamed = picked(pick, b->n, idx);
  if (blamed) {
    put(o, "  culprit: ");
    put_list(o, idx, blamed, numbering_of(b));
    bs_buf_printf(o, " (%s)\n", reason ? reason : "");
  }
}

char *bs_report_block_format(const bs_report_block *b) {
  char *buf = NULL;
  bs_buf o = {0};
  size_t n = b->n > 0 ? (size_t)b->n : 1;
  groups g = {0};
  bool *pick = calloc(n, sizeof *pick);
  int *idx = malloc(n * sizeof *idx);
  const char **desc = malloc(n * sizeof *desc);
  if (!pick || !idx || !desc)
    goto out;
  for (int i = 0; i < b->n; i++)
    desc[i] = b->ranks[i].desc;
  if (!groups_make(&g, desc, b->n))
    goto out;
  uint64_t seq = stuck_seq(b);
  bs_buf_printf(&o, "backstop: %s at collective #%llu (%s)\n", b->status,
                (unsigned long long)seq, b->source);
  bs_buf_printf(&o, "  cause: %s\n", b->cause);
  put_groups(&o, b, &g);
  put_missing(&o, b, seq, idx);
  put_culprit(&o, b, seq, desc, pick, idx);
  if (b->tail)
    put(&o, b->tail);
  buf = bs_buf_take(&o);
out:
  groups_free(&g);
  free(pick);
  free(idx);
  free(desc);
  return buf;
}

void bs_report_block_describe(const bs_rank_pos *p, bs_report_rank *r) {
  describe(p, r);
}
