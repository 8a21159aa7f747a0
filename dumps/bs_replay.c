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
#include "bs_dumps_match.h"
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

static bs_world_opts world_opts(bs_replay_state *r, const bs_replay_opts *o) {
  size_t slots = r->longest + 8;
  return (bs_world_opts){.backend = o->backend,
                         .size = r->n,
                         .timeout_ms = r->timeout_ms,
                         .fingerprint = true,
                         .flight_slots = (int)slots,
                         .schedule = o->schedule,
                         .schedule_seed = o->schedule_seed,
                         .quiet = bs_replay_stop_quiet,
                         .quiet_ctx = r};
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

/* The threads of one process: the world's own report, then its flight
 * recorders as analyze reads them (their verdict in back). */
static bs_status run_world(bs_replay_state *r, const bs_replay_opts *o,
                           bs_buf *text, bs_status *status,
                           bs_dumps_verdict *back) {
  bs_status st = BS_OK;
  bs_world *w = NULL;
  bs_replay_rank_arg *ra = NULL;
  void **args = NULL;
  bs_world_opts wo = world_opts(r, o);
  BS_CHECK(rank_args(r, &ra, &args));
  BS_CHECK(make_devs(r, o));
  BS_CHECK(bs_world_create(&wo, &w));
  bs_replay_stop_sched(r, w);
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
  if (r->settled)
    bs_buf_printf(text, "backstop replay: settled: every rank through its "
                        "ops or in its last, none could move\n");
  else if (report[0])
    bs_buf_printf(text, "%s", report);
  else
    bs_buf_printf(text, "backstop replay: every replayed op completed on "
                        "every rank\n");
  if (!r->stopped) /* interrupted: no more work */
    BS_CHECK(bs_replay_read_world(w, r->n, text, back));
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
                           bs_buf *text, bs_status *status,
                           bs_dumps_verdict *back) {
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
  BS_CHECK(bs_replay_procs_run(&p, status, text, back));
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
  if (o->backend && strcmp(o->backend, "nccl") == 0)
    bs_replay_calls_said(r, b); /* the sim needs no pairs */
  for (size_t k = 0; k < nd && k < 16; k++)
    bs_buf_printf(b, "%s%zu%s%s%s -> %zu",
                  k ? ", " : "  counts replaced: ", distinct[k].orig,
                  distinct[k].shape ? " (" : "",
                  distinct[k].shape ? distinct[k].shape : "",
                  distinct[k].shape ? ")" : "", k + 1);
  if (nd)
    bs_buf_printf(b, "%s\n", nd > 16 ? ", ..." : "");
}

/* The verdict: the read-back's where it names the roots the dumps' own
 * analysis names (reproduced), else the dumps' (never an all-clear they do
 * not support); text and JSON. */
static bs_status conclude(const bs_dumps_verdict *dumps,
                          const bs_dumps_verdict *back, bs_buf *text,
                          bs_replay_result *out) {
  char why[256] = "its flight recorders did not read";
  bool same = back->json && bs_dumps_match_json(dumps->json, back->json, true,
                                                why, sizeof why);
  const bs_dumps_verdict *v = same ? back : dumps;
  out->reproduced = same;
  if (back->json && !(out->back_json = strdup(back->json)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: verdict");
  if (same)
    bs_buf_printf(text, "backstop replay: reproduced: the replay names the "
                        "roots the dumps name\n");
  else
    bs_buf_printf(text,
                  "backstop replay: not reproduced (%s): the dumps' own "
                  "verdict:\n%s",
                  why, dumps->text);
  if (asprintf(&out->json, "{\"reproduced\": %s, %s", same ? "true" : "false",
               v->json + 1) < 0)
    out->json = NULL;
  if (!out->json || text->oom)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: verdict");
  if (out->status == BS_OK && v->finding != BS_DUMPS_CLEAN)
    out->status = BS_ERR_STATE;
  if (dumps->finding != BS_DUMPS_CLEAN && out->status == BS_OK)
    out->status = BS_ERR_STATE;
  return BS_OK;
}

/* Every rank's plan, its counts replaced by distinct smaller ones (*nd of
 * them; 0: as recorded) where the buffers would pass the budget or two
 * counts would collide. */
static bs_status plan_all(bs_replay_state *r, const bs_replay_opts *o,
                          bs_replay_count_key **distinct, size_t *nd) {
  bs_status st = BS_OK;
  size_t budget = o->max_bytes ? o->max_bytes : BS_REPLAY_MAX_BYTES;
  if (r->n < 1 || !(r->plan = calloc((size_t)r->n, sizeof *r->plan)) ||
      !(r->last_step = calloc((size_t)r->n, sizeof *r->last_step)) ||
      !(r->last_len = calloc((size_t)r->n, sizeof *r->last_len)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %d ranks", r->n);
  BS_CHECK(bs_replay_plan_groups(r));
  for (int i = 0; i < r->n; i++)
    BS_CHECK(bs_replay_plan_rank(r, i));
  BS_CHECK(bs_replay_calls_pairs(r, &r->pairs, &r->npairs));
  BS_CHECK(bs_replay_scale_keys(r, distinct, nd));
  if (bs_replay_plan_bytes(r) <= budget &&
      !bs_replay_scale_collide(*distinct, *nd))
    *nd = 0; /* as recorded */
  if (*nd) {
    bs_replay_scale_apply(r, *distinct, *nd);
    size_t need = bs_replay_plan_bytes(r);
    size_t limit = o->room_bytes > budget ? o->room_bytes : budget;
    if (need > limit)
      BS_FAIL(BS_ERR_INVALID, NULL,
              "replay: %d ranks need %zu bytes of buffers even with their "
              "counts replaced, more than the %zu allowed",
              r->n, need, limit);
  }
out:
  return st;
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
  size_t nd = 0;
  bs_buf b = {0};
  bs_dumps_verdict dumps = {0}, back = {0};
  memset(out, 0, sizeof *out);
  pthread_mutex_init(&r.mu, NULL);
  pthread_condattr_init(&ca); /* the waits' bounds: never the wall clock */
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&r.cv, &ca);
  pthread_condattr_destroy(&ca);
  BS_CHECK(bs_dumps_report(d, &dumps));
  BS_CHECK(plan_all(&r, o, &distinct, &nd));
  for (int i = 0; i < r.n; i++) {
    out->collectives += r.plan[i].n;
    r.longest = r.plan[i].n > r.longest ? r.plan[i].n : r.longest;
  }
  head(&r, o, &b, distinct, nd);
  r.settle_ms = o->procs ? 0 : o->settle_ms;
  if (o->procs)
    BS_CHECK(run_procs(&r, o, &b, &out->status, &back));
  else
    BS_CHECK(run_world(&r, o, &b, &out->status, &back));
  if (r.settled && out->status == BS_ERR_ABORTED)
    out->status = BS_OK; /* ended by the settle, not by a failure */
  BS_CHECK(conclude(&dumps, &back, &b, out));
  out->scaled = nd > 0;
  out->ranks = r.n;
  if (!(out->text = bs_buf_take(&b)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: report");
out:
  for (int i = 0; r.plan && i < r.n; i++)
    free(r.plan[i].s);
  free(r.plan);
  free(r.pairs);
  free(r.last_step);
  free(r.last_len);
  bs_replay_plan_free(&r);
  for (size_t i = 0; r.g && i < d->ngroups; i++)
    free(r.g[i].members);
  free(r.g);
  free(r.start);
  free(r.unpaired);
  free(r.skips);
  free(distinct);
  bs_buf_free(&b);
  bs_dumps_report_verdict_free(&dumps);
  bs_dumps_report_verdict_free(&back);
  pthread_cond_destroy(&r.cv);
  pthread_mutex_destroy(&r.mu);
  if (st != BS_OK)
    bs_replay_result_free(out);
  return st;
}

void bs_replay_result_free(bs_replay_result *r) {
  free(r->text);
  free(r->json);
  free(r->back_json);
  memset(r, 0, sizeof *r);
}
