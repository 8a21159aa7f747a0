/* The replay (bs_replay.h): the plans (bs_replay_plan), a world that runs
 * them (bs_replay_rank: in threads here, or a process per rank), and the
 * text: what was replayed, then the world's report. */
#include "bs_replay.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bs_buf.h"
#include "bs_dumps_report.h"
#include "bs_replay_int.h"
#include "bs_replay_procs.h"
#include "bs_replay_read.h"
#include "bs_stop.h"
#include "comm/bs_comm.h"
#include "comm/front/bs_comm_report.h"
#include "dev/bs_dev.h"

/* ---- the world ---- */

static bs_status make_devs(bs_replay_state *r, const bs_replay_opts *o) {
  bs_status st = BS_OK;
  const char *kind = o->device ? o->device : "host";
  if (strcmp(kind, "host") == 0)
    return BS_OK; /* plain host memory: no bs_dev at all */
  if (!(r->devs = calloc((size_t)r->n, sizeof *r->devs)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %d devices", r->n);
  for (int i = 0; i < r->n; i++)
    BS_CHECK(bs_dev_create_for_rank(kind, i, &r->devs[i]));
out:
  return st;
}

static bs_world_opts world_opts(const bs_replay_state *r,
                                const bs_replay_opts *o) {
  size_t slots = r->longest + 8;
  return (bs_world_opts){.backend = o->backend,
                         .size = r->n,
                         .timeout_ms = r->timeout_ms,
                         .fingerprint = true,
                         .flight_slots = (int)slots};
}

/* Every rank's argument: ra[i] for rank i, args[i] pointing to it. */
static bs_status rank_args(bs_replay_state *r, bs_replay_rank_arg **ra,
                           void ***args) {
  size_t n = r->n > 0 ? (size_t)r->n : 1;
  *ra = calloc(n, sizeof **ra);
  *args = calloc(n, sizeof **args);
  if (!*ra || !*args)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %d ranks", r->n);
  for (int i = 0; i < r->n; i++) {
    (*ra)[i] = (bs_replay_rank_arg){.r = r, .i = i};
    (*args)[i] = &(*ra)[i];
  }
  return BS_OK;
}

/* The lowest rank that left no dump, -1 when every one did. */
static int no_dump(const bs_replay_state *r) {
  for (int i = 0; i < r->n; i++)
    if (!bs_dumps_rank(r->d, i))
      return i;
  return -1;
}

/* The first op a dump shows not done, NULL when every one is. */
static const bs_dump_coll *not_done(const bs_dumps *d, const bs_dump **who,
                                    const bs_dump_pg **in) {
  for (size_t i = 0; i < d->n; i++)
    for (size_t k = 0; k < d->d[i].npg; k++)
      for (size_t j = 0; j < d->d[i].pg[k].n; j++)
        if (d->d[i].pg[k].c[j].state != BS_DUMP_COMPLETED) {
          *who = &d->d[i];
          *in = &d->d[i].pg[k];
          return &d->d[i].pg[k].c[j];
        }
  return NULL;
}

/* The threads of one process: the world's own report, then its flight
 * recorders as analyze reads them. */
static bs_status run_world(bs_replay_state *r, const bs_replay_opts *o,
                           bs_buf *text, bs_status *status) {
  bs_status st = BS_OK;
  bs_world *w = NULL;
  bs_replay_rank_arg *ra = NULL;
  void **args = NULL;
  bs_world_opts wo = world_opts(r, o);
  BS_CHECK(rank_args(r, &ra, &args));
  BS_CHECK(make_devs(r, o));
  BS_CHECK(bs_world_create(&wo, &w));
  pthread_t watch;
  BS_CHECK(bs_replay_stop_start(r, &watch));
  *status = bs_world_run(w, r->devs, bs_replay_rank_run, args);
  bs_replay_stop_end(r, watch);
  const char *report = bs_world_report(w);
  if (*status != BS_OK && !report[0]) { /* no world ran: its error stands */
    st = *status;
    goto out;
  }
  bs_err_clear();
  const bs_dump *who;
  const bs_dump_pg *in;
  if (report[0])
    bs_buf_printf(text, "%s", report);
  else if (!not_done(r->d, &who, &in) &&
           no_dump(r) < 0) /* else unreproduced() says */
    bs_buf_printf(text, "backstop: no hang and no desync: every replayed "
                        "collective completed on every rank\n");
  if (*status != BS_OK && !r->stopped) /* interrupted: no more work */
    BS_CHECK(bs_replay_read_world(w, r->n, text));
out:
  bs_world_destroy(w);
  for (int i = 0; r->devs && i < r->n; i++)
    bs_dev_destroy(r->devs[i]);
  free(r->devs);
  r->devs = NULL;
  free(ra);
  free(args);
  return st;
}

/* A process per rank: every wait in them is bounded by the watchdog, so
 * the deadline is generous (start-up, NCCL's init grace, every step). */
static bs_status run_procs(bs_replay_state *r, const bs_replay_opts *o,
                           bs_buf *text, bs_status *status) {
  bs_status st = BS_OK;
  bs_replay_rank_arg *ra = NULL;
  void **args = NULL;
  bs_world_opts wo = world_opts(r, o);
  BS_CHECK(rank_args(r, &ra, &args));
  r->meet_procs = bs_replay_procs_ready;
  bs_replay_procs p = {.wo = &wo,
                       .device = o->device ? o->device : "host",
                       .fn = bs_replay_rank_run,
                       .args = args,
                       .deadline_s = 60 + (double)(r->longest + 4) *
                                              wo.timeout_ms / 1000.0};
  BS_CHECK(bs_replay_procs_run(&p, status, text));
out:
  free(ra);
  free(args);
  return st;
}

/* ---- the text ---- */

/* The ranks that left no dump, a line for each number of ops they
 * replay ("ranks 4791-16383: no dump: ..."): thousands of them in a run
 * killed while it dumped. */
static void dumpless_lines(const bs_replay_state *r, bs_buf *b) {
  bool *pick = calloc((size_t)r->n, sizeof *pick);
  bool *said = calloc((size_t)r->n, sizeof *said);
  for (int i = 0; pick && said && i < r->n; i++) {
    if (bs_dumps_rank(r->d, i) || said[i])
      continue;
    size_t ops = r->plan[i].n;
    int count = 0;
    for (int j = 0; j < r->n; j++) {
      pick[j] =
          j >= i && !said[j] && !bs_dumps_rank(r->d, j) && r->plan[j].n == ops;
      said[j] = said[j] || pick[j];
      count += pick[j];
    }
    char *who = bs_report_block_ranks(pick, r->n);
    bool one = count == 1;
    bs_buf_printf(b,
                  "  %s: no dump: replay%s the %zu ops the dumps show "
                  "completed with %s, then stay%s out of every op\n",
                  who ? who : "?", one ? "s" : "", ops, one ? "it" : "them",
                  one ? "s" : "");
    free(who);
  }
  free(pick);
  free(said);
}

static void head(const bs_replay_state *r, const bs_replay_opts *o, bs_buf *b,
                 const bs_replay_count_key *distinct, size_t nd) {
  size_t ops = 0;
  for (int i = 0; i < r->n; i++)
    ops += r->plan[i].n;
  bs_buf_printf(b,
                "backstop replay: %d ranks from %zu dump%s, %zu process "
                "group%s, %zu ops, %s backend%s, watchdog timeout %d ms\n",
                r->n, r->d->n, r->d->n == 1 ? "" : "s", r->d->ngroups,
                r->d->ngroups == 1 ? "" : "s", ops,
                o->backend ? o->backend : "sim",
                o->procs ? ", one process per rank" : "", r->timeout_ms);
  dumpless_lines(r, b);
  bs_replay_ops_said(r, b);
  for (size_t k = 0; k < nd && k < 16; k++)
    bs_buf_printf(b, "%s%zu%s%s%s -> %zu",
                  k ? ", " : "  counts replaced: ", distinct[k].orig,
                  distinct[k].shape ? " (" : "",
                  distinct[k].shape ? distinct[k].shape : "",
                  distinct[k].shape ? ")" : "", k + 1);
  if (nd)
    bs_buf_printf(b, "%s\n", nd > 16 ? ", ..." : "");
}

/* A replay that completed every op of a rank that left no dump is no
 * all-clear either: what it did after what its peers' dumps show is not
 * known (gloo's peers retire their op once it is gone), and the job hung;
 * that rank is the culprit, as analyze's missing-rank rule has it. */
static bool dumpless_done(const bs_replay_state *r, bs_buf *text) {
  int k = no_dump(r), count = 0;
  bool *pick = k >= 0 ? calloc((size_t)r->n, sizeof *pick) : NULL;
  for (int i = 0; pick && i < r->n; i++)
    count += pick[i] = !bs_dumps_rank(r->d, i);
  char *who = pick ? bs_report_block_ranks(pick, r->n) : NULL;
  free(pick);
  if (k < 0)
    return false;
  if (count > 1)
    bs_buf_printf(text,
                  "backstop: not reproduced: every replayed op completed, "
                  "but %s left no dump: what they did after the ops their "
                  "peers' dumps show completed with them is not known\n"
                  "  culprit: %s (left no dump)\n",
                  who ? who : "ranks", who ? who : "ranks");
  else
    bs_buf_printf(text,
                  "backstop: not reproduced: every replayed op completed, "
                  "but rank %d left no dump: what it did after the %zu ops "
                  "its peers' dumps show completed with it is not known\n"
                  "  culprit: rank %d (left no dump)\n",
                  k, r->plan[k].n, k);
  free(who);
  return true;
}

/* A replay that completed what the dumps show stuck is no all-clear: the
 * job's hang is in what they do not hold (a rank past those they name). */
static void unreproduced(const bs_replay_state *r, bs_buf *text,
                         bs_status *status) {
  const bs_dump *who = NULL;
  const bs_dump_pg *in = NULL;
  const bs_dump_coll *c = *status == BS_OK ? not_done(r->d, &who, &in) : NULL;
  if (*status == BS_OK && !c && dumpless_done(r, text))
    *status = BS_ERR_STATE;
  if (!c)
    return;
  *status = BS_ERR_STATE;
  bs_buf_printf(text,
                "backstop: not reproduced: every replayed op completed, but "
                "rank %d's dump shows %s #%llu of group %s not done: what "
                "held it is not in the dumps (they name %d rank%s; a rank "
                "past them that left no dump?)\n",
                who->rank, c->op, (unsigned long long)c->seq,
                r->d->groups[in->group].name, r->n, r->n == 1 ? "" : "s");
}

bs_status bs_replay_run(const bs_dumps *d, const bs_replay_opts *o,
                        bs_replay_result *out) {
  bs_status st = BS_OK;
  bs_replay_state r = {.d = d,
                       .n = d->ranks,
                       .local = o->procs ? 1 : d->ranks,
                       .timeout_ms = o->timeout_ms ? o->timeout_ms
                                                   : BS_REPLAY_TIMEOUT_MS};
  pthread_condattr_t ca;
  bs_replay_count_key *distinct = NULL;
  size_t nd = 0, budget = o->max_bytes ? o->max_bytes : BS_REPLAY_MAX_BYTES;
  bs_buf b = {0};
  memset(out, 0, sizeof *out);
  pthread_mutex_init(&r.mu, NULL);
  pthread_condattr_init(&ca); /* the waits' bounds: never the wall clock */
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&r.cv, &ca);
  pthread_condattr_destroy(&ca);
  if (r.n < 1 || !(r.plan = calloc((size_t)r.n, sizeof *r.plan)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %d ranks", r.n);
  BS_CHECK(bs_replay_plan_groups(&r));
  for (int i = 0; i < r.n; i++)
    BS_CHECK(bs_replay_plan_rank(&r, i));
  BS_CHECK(bs_replay_scale_keys(&r, &distinct, &nd));
  if (bs_replay_plan_bytes(&r) <= budget &&
      !bs_replay_scale_collide(distinct, nd))
    nd = 0; /* as recorded */
  if (nd) {
    bs_replay_scale_apply(&r, distinct, nd);
    size_t need = bs_replay_plan_bytes(&r);
    size_t limit = o->room_bytes > budget ? o->room_bytes : budget;
    if (need > limit)
      BS_FAIL(BS_ERR_INVALID, NULL,
              "replay: %d ranks need %zu bytes of buffers even with their "
              "counts replaced, more than the %zu allowed",
              r.n, need, limit);
  }
  for (int i = 0; i < r.n; i++) {
    out->collectives += r.plan[i].n;
    r.longest = r.plan[i].n > r.longest ? r.plan[i].n : r.longest;
  }
  head(&r, o, &b, distinct, nd);
  if (o->procs)
    BS_CHECK(run_procs(&r, o, &b, &out->status));
  else
    BS_CHECK(run_world(&r, o, &b, &out->status));
  unreproduced(&r, &b, &out->status);
  out->scaled = nd > 0;
  out->ranks = r.n;
  if (!(out->text = bs_buf_take(&b)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: report");
out:
  for (int i = 0; r.plan && i < r.n; i++)
    free(r.plan[i].s);
  free(r.plan);
  bs_replay_plan_free(&r);
  for (size_t i = 0; r.g && i < d->ngroups; i++)
    free(r.g[i].members);
  free(r.g);
  free(r.start);
  free(distinct);
  bs_buf_free(&b);
  pthread_cond_destroy(&r.cv);
  pthread_mutex_destroy(&r.mu);
  if (st != BS_OK)
    bs_replay_result_free(out);
  return st;
}

void bs_replay_result_free(bs_replay_result *r) {
  free(r->text);
  memset(r, 0, sizeof *r);
}
