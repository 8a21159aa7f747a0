/* The hang/desync report: one block a user can read at a glance. Ranks that
 * are in the same place are grouped ("ranks 0-6: all_gather #12 ..."), the
 * ranks missing from the stuck collective are named, and the time from the
 * stall to its detection says whether the deadlock detector or the timeout
 * caught it. */
#include "comm/backend/bs_comm_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DESC_LEN = 200 };

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

static void describe(const bs_rank_pos *p, char *buf, size_t n) {
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

/* "rank 3" or "ranks 0-6,9": the ranks i with pick[i] set. */
static void put_ranks(FILE *o, const bool *pick, int n, int first) {
  int count = 0;
  for (int i = 0; i < n; i++)
    count += pick[i];
  fputs(count == 1 ? "rank " : "ranks ", o);
  bool comma = false;
  for (int i = 0; i < n; i++) {
    if (!pick[i])
      continue;
    int j = i;
    while (j + 1 < n && pick[j + 1])
      j++;
    fprintf(o, comma ? ",%d" : "%d", first + i);
    if (j > i)
      fprintf(o, "-%d", first + j);
    comma = true;
    i = j;
  }
}

/* The sequence number the world is stuck at: the lowest one a rank waits
 * in, else the one after the last completed. */
static unsigned long long stuck_seq(const bs_report_in *in) {
  uint64_t s = UINT64_MAX, done = 0;
  for (int i = 0; i < in->size; i++) {
    const bs_rank_pos *p = &in->pos[i];
    if (p->state == BS_RANK_IN_COLL && p->at.seq < s)
      s = p->at.seq;
    if (p->last_seq > done)
      done = p->last_seq;
  }
  return s == UINT64_MAX ? done + 1 : s;
}

static void put_groups(FILE *o, const bs_report_in *in, char (*desc)[DESC_LEN],
                       bool *done, bool *pick) {
  for (int i = 0; i < in->size; i++) {
    if (done[i])
      continue;
    for (int j = 0; j < in->size; j++) {
      pick[j] = !done[j] && strcmp(desc[i], desc[j]) == 0;
      done[j] = done[j] || pick[j];
    }
    fputs("  ", o);
    put_ranks(o, pick, in->size, in->first_rank);
    fprintf(o, ": %s\n", desc[i]);
  }
}

static void put_missing(FILE *o, const bs_report_in *in, unsigned long long seq,
                        bool *pick) {
  bool any = false;
  for (int i = 0; i < in->size; i++) {
    const bs_rank_pos *p = &in->pos[i];
    pick[i] = !(p->state == BS_RANK_IN_COLL && p->at.seq == seq);
    any = any || pick[i];
  }
  fprintf(o, "  missing from #%llu: ", seq);
  if (any)
    put_ranks(o, pick, in->size, in->first_rank);
  else
    fputs("none (every rank is there, in a different collective)", o);
  fputc('\n', o);
}

char *bs_comm_report(const bs_report_in *in) {
  char *buf = NULL;
  size_t len = 0;
  size_t n = in->size > 0 ? (size_t)in->size : 1;
  char(*desc)[DESC_LEN] = calloc(n, sizeof *desc);
  bool *done = calloc(n, sizeof *done);
  bool *pick = calloc(n, sizeof *pick);
  FILE *o = desc && done && pick ? open_memstream(&buf, &len) : NULL;
  if (!o)
    goto out;
  for (int i = 0; i < in->size; i++)
    describe(&in->pos[i], desc[i], DESC_LEN);
  unsigned long long seq = stuck_seq(in);
  fprintf(o, "backstop: %s at collective #%llu (%d ranks, %s backend)\n",
          bs_status_name(in->status), seq, in->size, in->backend);
  fprintf(o, "  cause: %s\n", in->cause);
  put_groups(o, in, desc, done, pick);
  put_missing(o, in, seq, pick);
  uint64_t d = in->detect_ns > in->stall_ns ? in->detect_ns - in->stall_ns : 0;
  fprintf(o, "  stall -> detection: %.3f ms (watchdog timeout %d ms)\n",
          (double)d / 1e6, in->timeout_ms);
  if (fclose(o) != 0) {
    free(buf);
    buf = NULL;
  }
out:
  free(desc);
  free(done);
  free(pick);
  return buf;
}
