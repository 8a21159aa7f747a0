#include "driver/bs_driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_actor.h"
#include "bs_core_testing.h"
#include "bs_fault_control.h"
#include "bs_mutant.h"
#include "bs_span.h"
#include "catalog/bs_launcher.h"
#include "comm/bs_comm.h"
#include "comm/bs_meet.h"

/* Ring large enough that a scenario's whole schedule fits: the uniform
 * schedule oracle compares complete histories. */
#define FLIGHT_SLOTS 8192

typedef struct driver {
  const bs_run *run;
  bs_record *rec;
  char schedule[32]; /* the run's, as the world takes it */
} driver;

/* The process's hook for a scheduled world's deadline (one run at a time
 * per process). */
static struct {
  void (*past)(void *ctx);
  void *ctx;
} deadline;

void bs_driver_set_deadline(void (*past)(void *ctx), void *ctx) {
  deadline.past = past;
  deadline.ctx = ctx;
}

typedef struct rank_ctx {
  driver *d;
  bs_comm *comm;
  bs_dev *dev; /* the rank's device: its pinned counters */
  int rank;
  bs_actor *actor;
  bs_sync_result sync;
} rank_ctx;

bs_status bs_driver_arm(const bs_run *run) {
  bs_status st = BS_OK;
  bs_driver_disarm();
  for (size_t i = 0; i < run->nfaults; i++)
    BS_CHECK(bs_fault_arm(&run->faults[i].spec, run->seed));
  for (size_t i = 0; i < run->nmutants; i++)
    bs_mutant_set(run->mutants[i], true);
out:
  return st;
}

void bs_driver_disarm(void) {
  bs_fault_disarm_all();
  bs_fault_log_reset();
  bs_mutant_reset();
  bs_trap_reset();
}

bs_budget bs_driver_budget(const bs_config *c, const bs_model_spec *m) {
  bs_budget b = {.kind = BS_BUDGET_NORMAL, .tags = 1};
  if (bs_config_sync_reads_ms_backup(c))
    b.kind = BS_BUDGET_MEMSAVER;
  else if (!bs_config_enable_weight_backup(c))
    b.kind = BS_BUDGET_NONE;
  else if (c->rematerialize)
    b.kind = BS_BUDGET_MAINCAST;
  b.tags += c->with_ref + c->with_teacher + c->keep_old_actor;
  for (size_t i = 0; i < m->n; i++) {
    if (!bs_tensor_is_synced(&m->t[i]))
      continue;
    b.synced_bytes += bs_tensor_bytes(&m->t[i]);
    if (!bs_tensor_in_ddp(&m->t[i]))
      b.extras_bytes += bs_tensor_bytes(&m->t[i]);
  }
  return b;
}

bs_pause_rule bs_driver_pause_rule(const bs_config *c) {
  /* Colocated LoRA keeps param_buffer (the adapters) resident on sleep. */
  if (!c->offload_train || (c->colocate && bs_config_is_lora(c)))
    return BS_PAUSE_NONE;
  return c->rematerialize ? BS_PAUSE_AFTER_SYNC : BS_PAUSE_AT_SLEEP;
}

/* ---- one rank ---- */

/* The record's digests of the synced tensors, zero, with their names. */
static bs_status zero_digests(rank_ctx *x, size_t n, bs_digests *out) {
  bs_status st = BS_OK;
  const char **names = calloc(n ? n : 1, sizeof *names);
  if (!names)
    BS_FAIL(BS_ERR_NOMEM, NULL, "names of %zu tensors", n);
  for (size_t i = 0; i < n; i++)
    names[i] = bs_actor_synced_name(x->actor, i);
  st = bs_record_digests_set(out, NULL, names, n);
out:
  free(names);
  return st;
}

/* Staged now into the record's hasher and hashed there: the digests are
 * zero until it is drained (nothing taken where staging fails). False
 * where there is no hasher, or no room in it now. */
static bool live_digests_later(rank_ctx *x, bs_digests *out) {
  bs_hasher *h = x->d->rec->hasher;
  size_t n = bs_actor_synced_count(x->actor), total = 0, npaused = 0;
  for (size_t i = 0; i < n; i++)
    total += bs_actor_synced_bytes(x->actor, i);
  void *room = h ? bs_hasher_room(h, total, n) : NULL;
  if (!room)
    return false;
  bool *skipped = NULL;
  if (zero_digests(x, n, out) != BS_OK ||
      !(skipped = calloc(n ? n : 1, sizeof *skipped)) ||
      bs_actor_live_stage(x->actor, room, skipped) != BS_OK) {
    bs_record_digests_free(out);
    goto out;
  }
  for (size_t i = 0; i < n; i++) {
    npaused += skipped[i];
    if (!skipped[i]) /* staged one after the other, as put */
      bs_hasher_put(h, bs_actor_synced_bytes(x->actor, i), &out->d[i]);
  }
  out->npaused = npaused;
out:
  free(skipped);
  return true;
}

/* Live digests of every synced tensor, with their names. */
static void live_digests(rank_ctx *x, bs_digests *out) {
  if (live_digests_later(x, out))
    return;
  size_t n = bs_actor_synced_count(x->actor), npaused = 0;
  if (zero_digests(x, n, out) != BS_OK)
    return;
  if (bs_actor_live_digests(x->actor, out->d, n, &npaused) == BS_OK)
    out->npaused = npaused;
  else
    bs_record_digests_free(out); /* nothing taken */
}

/* Digests of what the engine received, with their names. */
static void received_digests(rank_ctx *x, bs_digests *out) {
  size_t n = x->sync.ntensors;
  const char **names = calloc(n, sizeof *names);
  for (size_t i = 0; names && i < n; i++)
    names[i] = x->sync.names[i];
  if (names)
    bs_record_digests_set(out, x->sync.received, names, n);
  free(names);
}

/* The state at the end of a phase: memory, param_buffer, digests. */
static void take_state(rank_ctx *x, bs_event *e) {
  for (int w = 0; w < BS_PIN_OWNER_COUNT; w++) {
    e->pinned[w] = bs_dev_pinned(x->dev, (bs_pin_owner)w);
    e->pinned_peak[w] = bs_dev_pinned_peak(x->dev, (bs_pin_owner)w);
  }
  if (!x->actor)
    return;
  e->resident = bs_actor_observe_resident(x->actor);
  e->resident_peak = bs_actor_observe_resident_peak(x->actor);
  e->resident_params = bs_actor_observe_resident_params(x->actor);
  e->param_paused = bs_actor_observe_params_paused(x->actor);
  bool ok = e->status == BS_OK;
  if (ok && (!strcmp(e->phase, "init") || !strcmp(e->phase, "restore") ||
             !strcmp(e->phase, "train_step")))
    live_digests(x, &e->live);
  if (!strcmp(e->phase, "update_weights") && x->sync.ntensors)
    received_digests(x, &e->recv);
}

/* Taking the state must not disturb the phase's error record: the rank
 * returns it to the world. */
static void snapshot(rank_ctx *x, bs_event *e) {
  bs_error saved = *bs_err();
  bs_err_clear();
  take_state(x, e);
  bs_sync_result_free(&x->sync);
  *bs_err() = saved;
}

typedef bs_status (*phase_fn)(rank_ctx *x);

static bs_status run_phase(rank_ctx *x, const char *name, int cycle,
                           phase_fn fn) {
  bs_record *rec = x->d->rec;
  bs_err_clear();
  bs_err_set_phase(name);
  bs_event *e = bs_record_begin(rec, x->rank, name, cycle);
  if (!e)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "run record of rank %d", x->rank);
  uint64_t t0 = bs_span_now();
  bs_comm_times waited = bs_comm_times_now(x->comm);
  bs_status st = fn(x);
  bs_span_since(bs_span_named(name), t0);
  bs_record_end(rec, x->rank, st);
  e->cpu_wait_ms = bs_comm_cpu_wait_ms_since(x->comm, &waited);
  snapshot(x, e);
  return st;
}

/* Rank 0's optimizer chain as built, for expectations about its shape
 * (only rank 0's thread writes it; rank 0 lives in process 0, whose
 * record is the merged one). */
static void record_chain(rank_ctx *x) {
  bs_record *rec = x->d->rec;
  if (x->rank == 0)
    bs_actor_observe_chain(x->actor, &rec->opt0.inner, &rec->opt0.hdo,
                           rec->opt0.desc, sizeof rec->opt0.desc);
}

static bs_status do_init(rank_ctx *x) {
  bs_actor_opts o = {.cfg = &x->d->run->config,
                     .model = x->d->run->model,
                     .seed = x->d->run->seed,
                     .engine_exe = x->d->run->exe};
  bs_status st = bs_actor_init(x->comm, &o, &x->actor);
  if (st == BS_OK)
    record_chain(x);
  return st;
}

static bs_status do_update(rank_ctx *x) {
  return bs_actor_update_weights(x->actor, &x->sync);
}

static bs_status do_wake(rank_ctx *x) {
  return bs_actor_wake_up(x->actor);
}

static bs_status do_restore(rank_ctx *x) {
  return bs_actor_restore_for_step(x->actor);
}

static bs_status do_step(rank_ctx *x) {
  return bs_actor_train_step(x->actor);
}

static bs_status do_sleep(rank_ctx *x) {
  return bs_actor_sleep(x->actor);
}

static bs_status do_restart(rank_ctx *x) {
  return bs_actor_restart_engine(x->actor);
}

/* The real job restarts a dead engine and carries on with the cycle (wake
 * up, restore, step), so the next sync checks the recovery; any other
 * failure stops it. */
static bs_status one_cycle(rank_ctx *x, int c) {
  bs_status st = run_phase(x, "update_weights", c, do_update);
  if (st == BS_ERR_ENGINE_DEAD)
    st = run_phase(x, "restart_engine", c, do_restart);
  BS_CHECK(st);
  BS_CHECK(run_phase(x, "wake_up", c, do_wake));
  BS_CHECK(run_phase(x, "restore", c, do_restore));
  BS_CHECK(run_phase(x, "train_step", c, do_step));
  /* The real job offloads (sleeps) only under offload_train: a trainer
   * that neither offloads nor colocates keeps no backup to sync from. */
  if (x->d->run->config.offload_train)
    BS_CHECK(run_phase(x, "sleep", c, do_sleep));
out:
  return st;
}

static bs_status lifecycle(void *arg) {
  rank_ctx *x = arg;
  bs_status st = BS_OK;
  bs_fault_set_cycle(0);
  BS_CHECK(run_phase(x, "init", 0, do_init));
  for (int c = 0; c < x->d->run->cycles; c++) {
    bs_fault_set_cycle(c);
    BS_CHECK(one_cycle(x, c));
  }
out:
  return st;
}

static bs_status rank_main(bs_comm *c, void *arg) {
  rank_ctx *x = arg;
  bs_rank_rec *rr = &x->d->rec->rank[x->rank];
  x->comm = c;
  bs_err_set_rank(x->rank);
  uint64_t t0 = bs_span_now();
  bs_status st = bs_trap_run(lifecycle, x);
  bs_span_since(BS_SPAN_LIFECYCLE, t0);
  bs_event *e = bs_record_last(x->d->rec, x->rank);
  /* A phase left open was unwound by a paused read: its state is
   * undefined, so the actor is left alone (the process ends soon). */
  rr->unwound = e && e->t1_ms < 0;
  if (rr->unwound)
    bs_record_end(x->d->rec, x->rank, st);
  bs_error err = *bs_err();
  /* The job's end frees the trainer as it is (asleep: PAUSED memory); a
   * free the library exits on ends the rank there, unless it ended before. */
  if (!rr->unwound) {
    bs_status es = bs_actor_end(x->actor);
    if (st == BS_OK && es != BS_OK) {
      st = es;
      err = *bs_err();
    }
  }
  rr->end = st;
  rr->end_err = err;
  rr->exit_status = st == BS_ERR_FATAL ? 1 : 0;
  rr->returned = true;
  bs_sync_result_free(&x->sync);
  return st;
}

/* ---- the world ---- */

static bs_status collect(driver *d, bs_world *w) {
  bs_status st = BS_OK;
  bs_record *rec = d->rec;
  size_t n = bs_fault_log_count();
  if (n && !(rec->fired = calloc(n, sizeof *rec->fired)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "fault log of %zu firings", n);
  for (size_t i = 0; i < n; i++)
    rec->nfired += bs_fault_log_get(i, &rec->fired[rec->nfired]);
  n = bs_fault_count_reaches(NULL, 0);
  if (n && !(rec->reaches = calloc(n, sizeof *rec->reaches)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "reach counts of %zu points", n);
  rec->nreaches = bs_fault_count_reaches(rec->reaches, n);
  n = bs_trap_count();
  if (n && !(rec->reads = calloc(n, sizeof *rec->reads)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "%zu paused reads", n);
  for (size_t i = 0; i < n; i++)
    rec->nreads += bs_trap_get(i, &rec->reads[rec->nreads]);
  int first = bs_launcher_first_rank(d->run);
  int local = bs_launcher_local_ranks(d->run);
  for (int k = 0; k < local; k++) {
    bs_rank_rec *rr = &rec->rank[first + k];
    rr->flight = bs_world_flight_json_marked(w, k);
    /* Without them (no memory) the oracles read the dump back. */
    if (rr->flight &&
        bs_world_flight_colls(w, k, &rr->colls, &rr->ncolls) != BS_OK)
      bs_err_clear();
  }
  const char *report = bs_world_report(w);
  rec->world_report = strdup(report ? report : "");
  rec->detect_ms = bs_world_detect_ms(w);
out:
  return st;
}

/* A process-per-rank run's processes meet in the run's folder. The run
 * names its schedule (its repro line does), so BS_SCHEDULE changes none. */
static void world_opts(driver *d, bs_meet *m, bs_world_opts *wo) {
  const bs_run *run = d->run;
  bs_sched_spec_format(&run->schedule, d->schedule, sizeof d->schedule);
  *wo = (bs_world_opts){.backend = run->backend,
                        .size = bs_launcher_local_ranks(run),
                        .timeout_ms = run->timeout_ms,
                        .fingerprint = true,
                        .flight_slots = FLIGHT_SLOTS,
                        .schedule = d->schedule,
                        .schedule_seed = run->schedule.seed,
                        .deadline_ms = run->deadline_s * 1e3,
                        .past = deadline.past,
                        .past_ctx = deadline.ctx};
  if (!run->rendezvous)
    return;
  char dir[sizeof m->dir];
  bs_launcher_run_dir(run, dir, sizeof dir);
  bs_meet_world(m, dir, run->ranks, bs_launcher_first_rank(run),
                run->nprocs > 1, wo);
}

/* Whether a rank of w failed: a world whose run failed with every rank
 * well failed before they ran. */
static bool ranks_failed(const bs_world *w, int n) {
  for (int i = 0; i < n; i++)
    if (bs_world_rank_status(w, i, NULL) != BS_OK)
      return true;
  return false;
}

static bs_status run_world(driver *d, bs_dev **devs, rank_ctx *ctx) {
  bs_status st = BS_OK;
  bs_world *w = NULL;
  bs_world_opts wo;
  bs_meet meet;
  world_opts(d, &meet, &wo);
  int n = wo.size;
  void **args = calloc((size_t)n, sizeof *args);
  if (!args)
    BS_FAIL(BS_ERR_NOMEM, NULL, "world of %d ranks", n);
  for (int i = 0; i < n; i++) {
    int k = wo.first_rank + i;
    BS_CHECK(bs_dev_create_for_rank(d->run->device, k, &devs[i]));
    ctx[i] = (rank_ctx){.d = d, .rank = k, .dev = devs[i]};
    args[i] = &ctx[i];
  }
  BS_CHECK(bs_world_create(&wo, &w));
  /* The ranks' own failures are in the record; only setup errors count:
   * the world's own, before any rank ran (its stacks, its watchdog). */
  st = bs_world_run(w, devs, rank_main, args);
  if (st != BS_OK && !ranks_failed(w, n))
    goto out;
  st = BS_OK;
  bs_err_clear();
  BS_CHECK(collect(d, w));
out:
  bs_world_destroy(w);
  free(args);
  return st;
}

/* The initial weights as a fresh parameter store on the host device holds
 * them: the same model and seed, none of the ranks' code paths. */
static bs_status initial_digests(const driver *d, bs_digests *out) {
  bs_status st = BS_OK;
  bs_digest *dig = NULL;
  const char **of = NULL;
  size_t n = 0;
  BS_CHECK(bs_actor_observe_initial(d->run->model, &d->run->config,
                                    d->run->seed, &dig, &of, &n));
  BS_CHECK(bs_record_digests_set(out, dig, of, n));
out:
  free(of);
  free(dig);
  return st;
}

bs_status bs_driver_lifecycle(const bs_run *run, bs_record *rec) {
  bs_status st = BS_OK;
  driver d = {.run = run, .rec = rec};
  int n = bs_launcher_local_ranks(run), first = bs_launcher_first_rank(run);
  bs_dev **devs = calloc((size_t)n, sizeof *devs);
  rank_ctx *ctx = calloc((size_t)n, sizeof *ctx);
  if (!devs || !ctx)
    BS_FAIL(BS_ERR_NOMEM, NULL, "world of %d ranks", n);
  /* The configuration and the model are the planner's (bs_run.h). */
  rec->budget = bs_driver_budget(&run->config, run->model);
  rec->pause_rule = bs_driver_pause_rule(&run->config);
  BS_CHECK(initial_digests(&d, &rec->init_ref));
  BS_CHECK(run_world(&d, devs, ctx));
out:
  /* An unwound rank's actor still holds its device's memory: leave both. */
  for (int i = 0; devs && i < n; i++)
    if (!rec->rank || !rec->rank[first + i].unwound)
      bs_dev_destroy(devs[i]);
  free(devs);
  free(ctx);
  return st;
}

bs_status bs_driver_run(const bs_run *run, bs_record *rec) {
  bs_status st = BS_OK;
  const bs_scenario *s = run->scn;
  snprintf(rec->backend, sizeof rec->backend, "%s", run->backend);
  rec->nprocs = run->nprocs > 1 ? run->nprocs : 1;
  BS_CHECK(bs_driver_arm(run));
  BS_CHECK(s->drive ? s->drive(run, rec) : bs_driver_lifecycle(run, rec));
out:
  bs_driver_disarm();
  return st;
}

bool bs_driver_user_faults(const bs_run *run, const bs_record *rec) {
  if (run->nfaults > run->nown || bs_fault_external_list(NULL, 0))
    return true;
  for (size_t i = 0; i < rec->nfired; i++)
    if (rec->fired[i].spec < 0)
      return true;
  return false;
}

bs_status bs_driver_inspect(const bs_run *run, bs_record *rec) {
  /* Part of the expectation, so skipped where it is: the user's faults are
   * not the ones the scenario's expectation describes. */
  if (!run->scn->inspect || bs_driver_user_faults(run, rec))
    return BS_OK;
  return run->scn->inspect(run, rec);
}
