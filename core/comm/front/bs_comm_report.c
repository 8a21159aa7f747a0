/* The world's hang/desync report: its ranks' block (bs_report_block.c),
 * over the stuck process group's members where one is (bs_comm_report_pg.c),
 * and the time from the stall to its detection, which says whether the
 * deadlock detector or the timeout caught it. */
#include "comm/front/bs_comm_report.h"

#include "comm/front/bs_comm_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    bs_report_block_describe(&in->pos[i], &ranks[i]);
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
  text = bs_report_block_format(&b);
  free(ranks);
  return text;
}

char *bs_comm_report(const bs_report_in *in) {
  char tail[128];
  uint64_t d = in->detect_ns > in->stall_ns ? in->detect_ns - in->stall_ns : 0;
  snprintf(tail, sizeof tail,
           "  stall -> detection: %.3f ms (watchdog timeout %d ms)\n",
           (double)d / 1e6, in->timeout_ms);
  if (bs_comm_report_pg_applies(in))
    return bs_comm_report_pg(in, bs_status_name(in->status), tail);
  return report_of(in, bs_status_name(in->status), tail);
}

char *bs_comm_report_now(const bs_world *w, const char *why) {
  bs_world *mw = (bs_world *)w; /* the lock is the one mutable part */
  pthread_mutex_lock(&mw->mu);
  bs_report_in in = {.cause = why,
                     .backend = w->be->name,
                     .size = w->o.size,
                     .first_rank = w->o.first_rank,
                     .world = w->o.global_size,
                     .pos = w->pos,
                     .pgs = w->pgs,
                     .npgs = w->npgs};
  char *text = bs_comm_report_pg_applies(&in)
                   ? bs_comm_report_pg(&in, "hang", NULL)
                   : report_of(&in, "hang", NULL);
  pthread_mutex_unlock(&mw->mu);
  return text;
}

bs_world_waits bs_comm_report_waits(const bs_world *w) {
  bs_world *mw = (bs_world *)w; /* the lock is the one mutable part */
  bs_world_waits out = {.longest_ms = -1.0,
                        .timeout_ms = w->o.timeout_ms,
                        .failed = atomic_load(&mw->abort_st) != BS_OK};
  uint64_t now = bs_world_sched_now(w); /* virtual where scheduled */
  pthread_mutex_lock(&mw->mu);
  for (int i = 0; i < w->o.size; i++) {
    const bs_rank_pos *p = &w->pos[i];
    /* A rank's virtual reads run a tick ahead of the world's clock each
     * (bs_clock.h): a wait begun "after" now has lasted nothing. */
    double ms = p->since_ns < now ? (double)(now - p->since_ns) / 1e6 : 0.0;
    if (p->state == BS_RANK_IN_COLL && ms > out.longest_ms)
      out.longest_ms = ms;
  }
  pthread_mutex_unlock(&mw->mu);
  return out;
}
