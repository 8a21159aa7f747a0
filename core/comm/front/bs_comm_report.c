/* The hang/desync report: one block a user can read at a glance. Ranks that
 * are in the same place are grouped ("ranks 0-6: all_gather #12 ..."), the
 * ranks missing from the stuck collective are named, the culprit is chosen
 * by majority, and the time from the stall to its detection says whether
 * the deadlock detector or the timeout caught it. The block's layout
 * (bs_comm_report_format) is public: `backstop analyze` writes the same
 * block from a job's dumps. */
#include "comm/front/bs_comm_report.h"

#include "comm/backend/bs_comm_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *short_name(bs_coll op) {
  return bs_coll_name(op) + strlen("nccl:");
}

static void describe_coll(const bs_coll_args *a, char *buf, size_t n) {
  static const char *const ops[BS_REDOP_COUNT] = {"sum", "max", "min"};
  int k = snprintf(buf, n, "%s #%llu", short_name(a->op),
                   (unsigned long long)a->seq);
  if (a->op == BS_COLL_REDUCE_SCATTER || a->op == BS_COLL_ALL_REDUCE)
    k += snprintf(buf + k, n - (size_t)k, " (%zu x %s, %s)", a->count,
                  bs_dtype_name(a->dt),
                  (unsigned)a->redop < BS_REDOP_COUNT ? ops[a->redop] : "?");
  else if (a->op == BS_COLL_BROADCAST)
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

/* "rank 3" or "ranks 0-6,9": the ranks i with pick[i] set. */
static void put_ranks(FILE *o, const bool *pick, int n, numbering k) {
  int count = 0;
  for (int i = 0; i < n; i++)
    count += pick[i];
  fputs(count == 1 ? "rank " : "ranks ", o);
  bool comma = false;
  for (int i = 0; i < n; i++) {
    if (!pick[i])
      continue;
    int j = i;
    while (j + 1 < n && pick[j + 1] && rank_at(k, j + 1) == rank_at(k, j) + 1)
      j++;
    fprintf(o, comma ? ",%d" : "%d", rank_at(k, i));
    if (j > i)
      fprintf(o, "-%d", rank_at(k, j));
    comma = true;
    i = j;
  }
}

char *bs_comm_report_ranks(const bool *pick, int n) {
  char *buf = NULL;
  size_t len = 0;
  FILE *o = open_memstream(&buf, &len);
  if (!o)
    return NULL;
  put_ranks(o, pick, n, (numbering){0, NULL});
  if (fclose(o) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
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

static void put_groups(FILE *o, const bs_report_block *b, bool *done,
                       bool *pick) {
  for (int i = 0; i < b->n; i++) {
    if (done[i])
      continue;
    for (int j = 0; j < b->n; j++) {
      pick[j] = !done[j] && strcmp(b->ranks[i].desc, b->ranks[j].desc) == 0;
      done[j] = done[j] || pick[j];
    }
    fputs("  ", o);
    put_ranks(o, pick, b->n, numbering_of(b));
    fprintf(o, ": %s\n", b->ranks[i].desc);
  }
}

static void put_missing(FILE *o, const bs_report_block *b, uint64_t seq,
                        bool *pick) {
  bool any = false;
  for (int i = 0; i < b->n; i++) {
    const bs_report_rank *r = &b->ranks[i];
    pick[i] = !(r->in_coll && r->seq == seq);
    any = any || pick[i];
  }
  fprintf(o, "  missing from #%llu: ", (unsigned long long)seq);
  if (any)
    put_ranks(o, pick, b->n, numbering_of(b));
  else if (b->world > b->n) /* a process's block: the others say theirs */
    fprintf(o, "none of the %d here (the other %d: their processes' blocks)",
            b->n, b->world - b->n);
  else
    fputs("none (every rank is there, in a different collective)", o);
  fputc('\n', o);
}

/* The group each description belongs to (-1: none), numbered in order of
 * their lowest rank, and the size of each; returns how many groups. */
static int group_of(const char *const *desc, int n, int *group, int *count) {
  int ngroups = 0;
  for (int i = 0; i < n; i++) {
    group[i] = -1;
    if (!desc[i])
      continue;
    int g = 0;
    while (g < ngroups && strcmp(desc[count[n + g]], desc[i]) != 0)
      g++;
    if (g == ngroups) {
      count[n + g] = i; /* the group's lowest rank */
      count[g] = 0;
      ngroups++;
    }
    group[i] = g;
    count[g]++;
  }
  return ngroups;
}

/* The largest group; a tie goes to the one with the lowest rank. */
static int largest(const int *count, int ngroups, bool *tie) {
  int best = 0;
  for (int g = 1; g < ngroups; g++)
    best = count[g] > count[best] ? g : best;
  *tie = false;
  for (int g = 0; g < ngroups; g++)
    *tie = *tie || (g != best && count[g] == count[best]);
  return best;
}

static void put_why(FILE *o, const char *const *desc, const int *group,
                    int best, bool tie, int n, numbering k, bool *pick) {
  int lowest = -1;
  for (int i = 0; i < n; i++) {
    pick[i] = group[i] == best;
    lowest = pick[i] && lowest < 0 ? i : lowest;
  }
  fputs(tie ? "an even split: " : "against the majority: ", o);
  put_ranks(o, pick, n, k);
  fprintf(o, " in %s", desc[lowest]);
  if (tie)
    fputs(", the group with the lowest rank, taken as right", o);
}

int bs_comm_report_culprits(const char *const *desc, int n, int first_rank,
                            const int *rank_of, uint64_t seq, bool *culprit,
                            char *why, size_t why_n) {
  int ngroups = 0, best = 0, blamed = 0;
  bool tie = false;
  size_t m = n > 0 ? (size_t)n : 1;
  int *group = malloc(m * sizeof *group);
  int *count = malloc(2 * m * sizeof *count); /* sizes, then lowest ranks */
  bool *pick = malloc(m * sizeof *pick);
  FILE *o = why_n ? fmemopen(why, why_n, "w") : NULL;
  if (group && count && pick) {
    ngroups = group_of(desc, n, group, count);
    best = ngroups ? largest(count, ngroups, &tie) : 0;
  }
  for (int i = 0; i < n; i++) {
    if (ngroups > 1)
      culprit[i] = group[i] >= 0 && group[i] != best;
    else
      culprit[i] = ngroups == 1 && !desc[i];
    blamed += culprit[i];
  }
  if (o && ngroups > 1)
    put_why(o, desc, group, best, tie, n, (numbering){first_rank, rank_of},
            pick);
  else if (o && blamed)
    fprintf(o, "missing from #%llu", (unsigned long long)seq);
  if (o)
    fclose(o);
  free(group);
  free(count);
  free(pick);
  return blamed;
}

/* Blamed as bs_comm_report_culprits says of the stuck collective, or as
 * the caller says. */
static void put_culprit(FILE *o, const bs_report_block *b, uint64_t seq,
                        bool *pick) {
  char why[2 * BS_REPORT_DESC + 160] = "";
  const char *reason = b->culprit_why;
  const char **desc = malloc((size_t)b->n * sizeof *desc);
  int blamed = 0;
  if (!desc)
    return;
  for (int i = 0; i < b->n; i++) {
    const bs_report_rank *r = &b->ranks[i];
    desc[i] = r->in_coll && r->seq == seq ? r->desc : NULL;
  }
  if (b->culprit) {
    memcpy(pick, b->culprit, (size_t)b->n * sizeof *pick);
    for (int i = 0; i < b->n; i++)
      blamed += pick[i];
  } else {
    blamed = bs_comm_report_culprits(desc, b->n, b->first_rank, b->rank_of, seq,
                                     pick, why, sizeof why);
    reason = why;
  }
  if (blamed) {
    fputs("  culprit: ", o);
    put_ranks(o, pick, b->n, numbering_of(b));
    fprintf(o, " (%s)\n", reason ? reason : "");
  }
  free(desc);
}

char *bs_comm_report_format(const bs_report_block *b) {
  char *buf = NULL;
  size_t len = 0;
  size_t n = b->n > 0 ? (size_t)b->n : 1;
  bool *done = calloc(n, sizeof *done);
  bool *pick = calloc(n, sizeof *pick);
  FILE *o = done && pick ? open_memstream(&buf, &len) : NULL;
  if (!o)
    goto out;
  uint64_t seq = stuck_seq(b);
  fprintf(o, "backstop: %s at collective #%llu (%s)\n", b->status,
          (unsigned long long)seq, b->source);
  fprintf(o, "  cause: %s\n", b->cause);
  put_groups(o, b, done, pick);
  put_missing(o, b, seq, pick);
  put_culprit(o, b, seq, pick);
  if (b->tail)
    fputs(b->tail, o);
  if (fclose(o) != 0) {
    free(buf);
    buf = NULL;
  }
out:
  free(done);
  free(pick);
  return buf;
}

/* The block of in's ranks, under status and with tail. */
static char *report_of(const bs_report_in *in, const char *status,
                       const char *tail) {
  char *text = NULL;
  char source[96];
  size_t n = in->size > 0 ? (size_t)in->size : 1;
  bs_report_rank *ranks = calloc(n, sizeof *ranks);
  if (!ranks)
    return NULL;
  for (int i = 0; i < in->size; i++)
    describe(&in->pos[i], &ranks[i]);
  if (in->world > in->size)
    snprintf(source, sizeof source, "%d of %d ranks, %s backend", in->size,
             in->world, in->backend);
  else
    snprintf(source, sizeof source, "%d ranks, %s backend", in->size,
             in->backend);
  bs_report_block b = {.status = status,
                       .source = source,
                       .cause = in->cause,
                       .n = in->size,
                       .first_rank = in->first_rank,
                       .world = in->world,
                       .ranks = ranks,
                       .tail = tail};
  text = bs_comm_report_format(&b);
  free(ranks);
  return text;
}

char *bs_comm_report(const bs_report_in *in) {
  char tail[128];
  uint64_t d = in->detect_ns > in->stall_ns ? in->detect_ns - in->stall_ns : 0;
  snprintf(tail, sizeof tail,
           "  stall -> detection: %.3f ms (watchdog timeout %d ms)\n",
           (double)d / 1e6, in->timeout_ms);
  return report_of(in, bs_status_name(in->status), tail);
}

char *bs_world_report_now(const bs_world *w, const char *why) {
  bs_world *mw = (bs_world *)w; /* the lock is the one mutable part */
  pthread_mutex_lock(&mw->mu);
  bs_report_in in = {.cause = why,
                     .backend = w->be->name,
                     .size = w->o.size,
                     .first_rank = w->o.first_rank,
                     .world = w->o.global_size,
                     .pos = w->pos};
  char *text = report_of(&in, "hang", NULL);
  pthread_mutex_unlock(&mw->mu);
  return text;
}
