/* The actor lifecycle (bs_actor.h, docs/behavior.md §5) with the fixed core of
 * §7: no local raise (each fallible phase ends in bs_comm_agree and a rank
 * that failed keeps following the collective schedule to it), the
 * param-buffer pause on every exit path of update_weights, frozen params as
 * MainCast extras and a uniform, fingerprinted tensor set for weight sync.
 * The mutant switches of §8 sit at their sites, each naming its origin. */
#include "bs_actor.h"

#include <stdlib.h>
#include <string.h>

#include "backup/bs_backuper.h"
#include "backup/bs_maincast_plan.h"
#include "backup/bs_restore_check.h"
#include "bs_actor_testing.h"
#include "bs_mutant.h"
#include "sync/bs_engine.h"
#include "sync/bs_weight_sync.h"
#include "train/bs_optimizer.h"
#include "train/bs_param_sync.h"

/* Keeps the ref/teacher/old_actor weights apart from the actor's. */
#define TAG_SEED_STRIDE 0x9E3779B97F4A7C15ull

struct bs_actor {
  bs_comm *comm;
  bs_dev *dev;
  bs_config cfg;
  const bs_model_spec *model;
  uint64_t seed;
  int rank, size;
  bs_memsaver *ms;
  bs_params *p;
  bs_optimizer *opt;
  bs_maincast_plan *mc; /* MainCast only */
  bs_backuper *bk;      /* NULL when weight backups are off */
  bs_engine *eng;
  bool own_engine;
  const bs_tensor **synced; /* spec order: the sync order */
  const char **names;
  size_t nsynced;
  bs_digest *step_dig; /* the synced weights at the last step end */
  bs_backup_tag active;
  bool asleep;
  int step;       /* optimizer steps taken */
  bool dead;      /* the memory saver ended the rank's process */
  bs_error death; /* what it said, with the library's words */
  /* A restore the check rejected (§7.2): miles raises, the job ends, and
   * nothing runs on this actor until one is initialised again. */
  bool failed;
  bs_error failure;
};

static void begin_phase(const char *phase) {
  bs_err_clear();
  bs_err_set_phase(phase);
}

/* A fatal error of the memory saver ends the rank's process, as
 * torch_memory_saver's exit(1) does (docs/behavior.md §2): the rank leaves the
 * world as a death, once, so its peers learn rank-dead at once instead of
 * waiting in their next collective, and every later phase of this rank
 * returns that error. Checked at every agreement point and phase end. */
static bool ended(bs_actor *a) {
  bs_error e;
  if (!a->dead && bs_memsaver_fatal(a->ms, &e)) {
    a->dead = true;
    a->death = e;
    bs_comm_die(a->comm, e.message);
  }
  if (a->dead)
    *bs_err() = a->death;
  return a->dead;
}

/* What every call answers first: a rank that has ended answers with its
 * death (docs/behavior.md §2), an actor a restore's check rejected with that
 * rejection (§7.2); nothing on either runs again. BS_OK otherwise. */
static bs_status refused(bs_actor *a) {
  if (ended(a))
    return BS_ERR_FATAL;
  if (!a->failed)
    return BS_OK;
  *bs_err() = a->failure;
  return (bs_status)a->failure.code;
}

/* A restore rejected by the check (a digest or the tensor set), agreed. */
static void fail_on_rejection(bs_actor *a, bs_status st) {
  if (st != BS_ERR_HASH_MISMATCH && st != BS_ERR_TENSOR_SET)
    return;
  a->failed = true;
  a->failure = *bs_err();
}

/* The agreement of a fallible phase; a dead rank joins no collective. */
static bs_status agree(bs_actor *a, bs_status mine) {
  if (ended(a))
    return BS_ERR_FATAL;
  return bs_comm_agree(a->comm, mine);
}

static bool colocated_lora(const bs_config *cfg) {
  return cfg->colocate && bs_config_is_lora(cfg);
}

/* Mutant lora-double-backup (before the colocated-LoRA fix): a pinned
 * Normal copy is kept although weight sync reads the memory saver's. */
static bool backups_wanted(const bs_config *cfg) {
  return bs_config_enable_weight_backup(cfg) ||
         (bs_config_sync_reads_ms_backup(cfg) &&
          bs_mutant_on(BS_MUT_LORA_DOUBLE_BACKUP));
}

/* ---- init ---- */

static bs_status make_optimizer(bs_actor *a) {
  bs_optimizer_cfg oc = bs_optimizer_cfg_of(&a->cfg);
  return bs_optimizer_create(a->dev, a->ms, &a->p->layout, a->rank, &oc,
                             a->p->param_buf, &a->opt);
}

static bs_status make_synced(bs_actor *a) {
  bs_status st = BS_OK;
  size_t n = bs_params_synced(a->p, NULL, 0);
  a->synced = calloc(n ? n : 1, sizeof *a->synced);
  a->names = calloc(n ? n : 1, sizeof *a->names);
  a->step_dig = calloc(n ? n : 1, sizeof *a->step_dig);
  if (!a->synced || !a->names || !a->step_dig)
    BS_FAIL(BS_ERR_NOMEM, NULL, "actor: %zu synced tensors", n);
  a->nsynced = bs_params_synced(a->p, a->synced, n);
  for (size_t i = 0; i < n; i++)
    a->names[i] = a->synced[i]->spec->name;
out:
  return st;
}

/* The digests the engine checks the next sync against. */
static bs_status hash_step_end(bs_actor *a) {
  return bs_restore_check_hash(a->dev, NULL, a->synced, a->nsynced, a->step_dig,
                               NULL);
}

static bs_status make_backuper(bs_actor *a) {
  bs_status st = BS_OK;
  if (a->cfg.rematerialize) {
    BS_CHECK(bs_maincast_plan_create(a->p, a->opt, a->comm, &a->mc));
    BS_CHECK(bs_maincast_plan_check_coverage(a->mc));
    BS_CHECK(
        bs_backuper_maincast_create(a->mc, a->cfg.check_rematerialize, &a->bk));
  } else if (backups_wanted(&a->cfg)) {
    BS_CHECK(bs_backuper_normal_create(a->p, &a->bk));
  }
out:
  return st;
}

/* backup("actor"), then each extra model: its own deterministic weights
 * loaded into the live params and backed up under its tag. init switches
 * back to the actor afterwards. */
static bs_status initial_backups(bs_actor *a) {
  bs_status st = BS_OK;
  const struct {
    bool on;
    bs_backup_tag tag;
  } extra[] = {{a->cfg.with_ref, BS_BT_REF},
               {a->cfg.with_teacher, BS_BT_TEACHER},
               {a->cfg.keep_old_actor, BS_BT_OLD_ACTOR}};
  if (!a->bk)
    goto out;
  BS_CHECK(bs_backuper_backup(a->bk, "actor"));
  for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) {
    if (!extra[i].on)
      continue;
    uint64_t seed = a->seed + TAG_SEED_STRIDE * (uint64_t)extra[i].tag;
    BS_CHECK(bs_params_fill(a->p, seed));
    BS_CHECK(bs_backuper_backup(a->bk, bs_backup_tag_name(extra[i].tag)));
  }
out:
  return st;
}

/* Everything local to the rank; *out is set as soon as it exists, so a
 * failure midway can still be cleaned up by the caller. */
static bs_status build(bs_comm *c, const bs_actor_opts *o, bs_actor **out) {
  bs_status st = BS_OK;
  bs_actor *a = calloc(1, sizeof *a);
  if (!(*out = a))
    BS_FAIL(BS_ERR_NOMEM, NULL, "actor: out of memory");
  a->comm = c;
  a->dev = bs_comm_dev(c);
  a->cfg = *o->cfg;
  a->model = o->model;
  a->seed = o->seed;
  a->rank = bs_comm_rank(c);
  a->size = bs_comm_size(c);
  a->active = BS_BT_ACTOR;
  if (!a->dev)
    BS_FAIL(BS_ERR_INVALID, NULL, "actor: rank %d has no device", a->rank);
  BS_CHECK(
      bs_memsaver_create(a->dev, o->seed ^ ((uint64_t)a->rank << 32), &a->ms));
  BS_CHECK(bs_params_create(a->dev, a->ms, o->model, a->size,
                            bs_actor_layout_bucket_numel(&a->cfg, a->size),
                            bs_config_param_buffers_cpu_backup(&a->cfg),
                            &a->p));
  BS_CHECK(bs_params_fill(a->p, o->seed));
  BS_CHECK(make_optimizer(a));
  BS_CHECK(make_synced(a));
  BS_CHECK(hash_step_end(a));
  BS_CHECK(make_backuper(a));
  a->eng = o->engine;
  a->own_engine = !o->engine && o->engine_exe;
  /* Every rank a thread here: a large world shares engine processes. */
  int world = bs_comm_local_size(c) == a->size ? a->size : 1;
  if (a->own_engine)
    BS_CHECK(bs_engine_start_world(o->engine_exe, o->engine_argv, a->rank,
                                   world, &a->eng));
  BS_CHECK(initial_backups(a));
out:
  return st;
}

static bs_status switch_to(bs_actor *a, const char *tag);
static bs_status sleep_now(bs_actor *a);

bs_status bs_actor_init(bs_comm *c, const bs_actor_opts *o, bs_actor **out) {
  bs_status st = BS_OK;
  bs_actor *a = NULL;
  begin_phase("init");
  if (!c || !o || !o->cfg || !o->model || !out)
    BS_FAIL(BS_ERR_INVALID, NULL, "actor init: NULL argument");
  *out = NULL;
  /* A trainer creates its process groups (a previous one on this rank may
   * have gone to sleep with them destroyed). */
  if (!bs_comm_ready(c))
    BS_CHECK(bs_comm_init(c, "init"));
  BS_CHECK(bs_comm_agree(c, build(c, o, &a)));
  BS_CHECK(switch_to(a, "actor"));
  if (a->cfg.offload_train)
    BS_CHECK(agree(a, sleep_now(a)));
  if (a->asleep)
    BS_CHECK(bs_comm_destroy(c));
  *out = a;
  a = NULL;
out:
  bs_actor_destroy(a);
  return st;
}

bs_status bs_actor_end(bs_actor *a) {
  bs_status st = BS_OK;
  bs_error e;
  if (!a)
    return BS_OK;
  if (a->own_engine)
    bs_engine_stop(a->eng);
  bs_backuper_destroy(a->bk);
  bs_maincast_plan_destroy(a->mc);
  bs_optimizer_destroy(a->opt);
  bs_params_destroy(a->p);
  /* A fatal error on the way out ends the process with exit status 1
   * there; one the rank already died of was reported by its phase. */
  if (!a->dead && bs_memsaver_fatal(a->ms, &e)) {
    *bs_err() = e;
    st = BS_ERR_FATAL;
  }
  bs_memsaver_destroy(a->ms);
  free(a->synced);
  free(a->names);
  free(a->step_dig);
  free(a);
  return st;
}

void bs_actor_destroy(bs_actor *a) {
  bs_error keep = *bs_err();
  (void)bs_actor_end(a);
  *bs_err() = keep;
}

/* ---- train step ---- */

/* The rank's gradient of one bucket from the bf16 params it sees, made as
 * the bucket's reduce-scatter begins (bs_param_sync_grads); the element
 * index runs on across the buffers so dense and expert draw apart. Only
 * where elements live: padding grads stay zero (as Megatron's zeroed grad
 * buffer's), so a world-padded buffer's padding is never written. */
typedef struct grads_at {
  bs_actor *a;
  int step;
} grads_at;

static void make_grads(void *ctx, int k, size_t i) {
  const grads_at *g = ctx;
  const bs_params *p = g->a->p;
  uint64_t base = 0;
  for (int j = 0; j < k; j++)
    base += p->layout.buf[j].numel;
  size_t at = p->layout.buf[k].buckets[i].offset;
  bs_dev_grad(g->a->dev, p->grad_buf[k] + at, p->param_buf[k] + at,
              p->layout.buf[k].buckets[i].used, base + at, g->a->seed,
              g->a->rank, g->step);
}

static bs_status step_state(const bs_actor *a) {
  if (a->asleep)
    return bs_err_fail(BS_ERR_STATE, NULL,
                       "train step while asleep: wake_up first");
  if (a->active != BS_BT_ACTOR)
    return bs_err_fail(
        BS_ERR_STATE, NULL,
        "train step with model '%s' active: switch_model('actor') "
        "first",
        bs_backup_tag_name(a->active));
  return BS_OK;
}

static bs_status step(bs_actor *a) {
  bs_status st = BS_OK;
  /* The same on every rank, so skipping the collectives is uniform. */
  BS_CHECK(step_state(a));
  grads_at g = {a, a->step + 1};
  BS_CHECK(bs_param_sync_grads(a->comm, a->p, make_grads, &g));
  bs_status local = bs_optimizer_step(a->opt, a->p->grad_buf, a->step + 1);
  /* Always: a rank whose Adam failed still joins the all-gathers. */
  BS_CHECK(bs_param_sync_params(a->comm, a->p));
  BS_CHECK(local);
  a->step++;
  BS_CHECK(hash_step_end(a));
out:
  return st;
}

/* The step is agreed before it is backed up, so no rank keeps a backup of
 * a step that another rank failed; the backup is agreed in turn. */
bs_status bs_actor_train_step(bs_actor *a) {
  bs_status st = BS_OK;
  begin_phase("train_step");
  if (!a)
    return bs_err_fail(BS_ERR_INVALID, NULL, "train step: no actor");
  BS_CHECK(refused(a));
  BS_CHECK(agree(a, step(a)));
  if (a->bk) {
    bs_err_set_phase("backup");
    BS_CHECK(agree(a, bs_backuper_backup(a->bk, "actor")));
  }
out:
  return st;
}

/* ---- sleep / wake_up ---- */

/* MainCast keeps the param buffer resident for update_weights (which
 * pauses it); colocated LoRA keeps its trainable adapters readable. */
static bool keeps_param_buffer(const bs_actor *a) {
  return a->mc || colocated_lora(&a->cfg);
}

static bs_status sleep_now(bs_actor *a) {
  bs_status st = BS_OK;
  if (a->asleep)
    goto out;
  if (keeps_param_buffer(a)) {
    BS_CHECK(bs_memsaver_pause(a->ms, BS_TAG_GRAD));
    BS_CHECK(bs_memsaver_pause(a->ms, BS_TAG_DEFAULT));
  } else {
    BS_CHECK(bs_memsaver_pause(a->ms, NULL));
  }
  a->asleep = true;
out:
  return st;
}

/* Agreed: a pause copies the cpu-backed regions to the host, and a copy
 * that fails on one rank must fail the phase on every rank (§7.2). Then
 * the process groups go with the memory (§5): their buffers are GPU
 * memory the engine needs. */
bs_status bs_actor_sleep(bs_actor *a) {
  begin_phase("sleep");
  if (!a)
    return bs_err_fail(BS_ERR_INVALID, NULL, "sleep: no actor");
  bs_status no = refused(a);
  if (no != BS_OK)
    return no;
  /* Idempotent: asleep, with no memory to pause and no groups to agree
   * over, there is nothing to do. */
  if (a->asleep && !bs_comm_ready(a->comm))
    return BS_OK;
  bs_status st = agree(a, sleep_now(a));
  if (st == BS_OK && a->asleep)
    st = bs_comm_destroy(a->comm);
  return st;
}

static bs_status wake_now(bs_actor *a) {
  bs_status st = BS_OK;
  if (!a->asleep)
    goto out;
  if (colocated_lora(&a->cfg)) {
    BS_CHECK(bs_memsaver_resume(a->ms, BS_TAG_DEFAULT));
    BS_CHECK(bs_memsaver_resume(a->ms, BS_TAG_GRAD));
  } else {
    BS_CHECK(bs_memsaver_resume(a->ms, NULL));
  }
  a->asleep = false;
out:
  return st;
}

/* reload_process_groups: a fresh communicator on every rank, after the
 * memory is back (a resident trainer only reloads the groups). The init
 * is a collective: a rank that fails it, or never joins, fails every rank
 * alike, and so does a failed resume through the agreement after it. */
bs_status bs_actor_wake_up(bs_actor *a) {
  bs_status st = BS_OK;
  begin_phase("wake_up");
  if (!a)
    return bs_err_fail(BS_ERR_INVALID, NULL, "wake_up: no actor");
  BS_CHECK(refused(a));
  bs_status mine = wake_now(a);
  /* A resume the library exits on: no process is left to join the init. */
  if (ended(a))
    return BS_ERR_FATAL;
  bs_error rec = *bs_err();
  bs_err_clear();
  BS_CHECK(bs_comm_destroy(a->comm));
  BS_CHECK(bs_comm_init(a->comm, "wake_up"));
  *bs_err() = rec; /* the agreement is about this rank's own wake */
  st = bs_comm_agree(a->comm, mine);
out:
  return st;
}

/* ---- switch_model ---- */

static bs_status restore_tag(bs_actor *a, bs_backup_tag t) {
  if (a->bk)
    return bs_backuper_restore(a->bk, bs_backup_tag_name(t));
  if (t == BS_BT_ACTOR) /* no backups: the live weights are the only copy */
    return BS_OK;
  return bs_err_fail(BS_ERR_MISSING_BACKUP, NULL,
                     "switch_model('%s'): weight backups are off",
                     bs_backup_tag_name(t));
}

/* miles checks the backuper's backup_tags, not the tag names: a tag that
 * holds no snapshot is as unknown as a misspelt one (a misspelt one is bad
 * input, a known one without a snapshot a missing backup). */
static bs_status check_tag(const bs_actor *a, const char *tag, int t) {
  if (t >= 0 && (!a->bk || bs_backuper_has_tag(a->bk, tag)))
    return BS_OK;
  return bs_err_fail(t < 0 ? BS_ERR_INVALID : BS_ERR_MISSING_BACKUP, NULL,
                     "Cannot switch to unknown model tag: %.64s",
                     tag ? tag : "(null)");
}

static bs_status restore_local(bs_actor *a, const char *tag) {
  int t = bs_backup_tag_parse(tag);
  bs_status st = check_tag(a, tag, t);
  if (st != BS_OK)
    return st;
  /* A restore writes the live params: paused memory would fault. */
  if (a->asleep)
    return bs_err_fail(BS_ERR_STATE, NULL,
                       "switch_model('%s') while asleep: wake_up first", tag);
  /* Mutant same-tag-skip (review diff of miles #3128): the active tag is
   * not restored, so MainCast weights stay garbage after a wake-up. */
  if (bs_mutant_on(BS_MUT_SAME_TAG_SKIP) && (bs_backup_tag)t == a->active)
    return BS_OK;
  return restore_tag(a, (bs_backup_tag)t);
}

/* restore(tag), always, even when tag is active: under offload the param
 * buffer has no host backup and MainCast must rebuild it. */
static bs_status switch_to(bs_actor *a, const char *tag) {
  bs_status st = BS_OK;
  bs_status local = restore_local(a, tag);
  /* Mutant local-hash-raise (miles #1572): the mismatch is raised on the
   * rank that found it; its peers enter the agreement alone and hang. */
  if (local == BS_ERR_HASH_MISMATCH && bs_mutant_on(BS_MUT_LOCAL_HASH_RAISE))
    BS_CHECK(local);
  /* Asleep there are no groups to agree over, and every rank refuses alike
   * (restore_local). */
  if (!bs_comm_ready(a->comm))
    BS_CHECK(local);
  BS_CHECK(agree(a, local));
  a->active = (bs_backup_tag)bs_backup_tag_parse(tag);
out:
  fail_on_rejection(a, st);
  return st;
}

bs_status bs_actor_switch_model(bs_actor *a, const char *tag) {
  begin_phase("restore");
  if (!a)
    return bs_err_fail(BS_ERR_INVALID, NULL, "switch_model: no actor");
  bs_status no = refused(a);
  if (no != BS_OK)
    return no;
  return switch_to(a, tag);
}

bs_status bs_actor_restore_for_step(bs_actor *a) {
  bs_status st = BS_OK;
  begin_phase("restore");
  if (!a)
    BS_FAIL(BS_ERR_INVALID, NULL, "restore: no actor");
  BS_CHECK(refused(a));
  if (a->cfg.with_ref)
    BS_CHECK(switch_to(a, "ref"));
  if (a->cfg.with_teacher)
    BS_CHECK(switch_to(a, "teacher"));
  BS_CHECK(switch_to(a, "actor"));
out:
  return st;
}

/* ---- get_actor_weights ---- */

static bs_named live_entry(const bs_tensor *t) {
  return (bs_named){.name = t->spec->name,
                    .dtype = t->spec->dtype,
                    .bytes = t->bytes,
                    .ptr = t->ptr,
                    .on_host = false};
}

static bs_status live_weights(bs_actor *a, bs_tensor_map *out) {
  bs_status st = BS_OK;
  BS_CHECK(bs_tensor_map_alloc(out, a->nsynced));
  for (size_t i = 0; i < a->nsynced; i++)
    out->e[i] = live_entry(a->synced[i]);
out:
  return st;
}

/* Colocated LoRA: each tensor from the memory saver's host copy when it
 * has one (the frozen base in "default"), else the live tensor, which must
 * then be resident (the adapters in "param_buffer"). */
static bs_status memsaver_weights(bs_actor *a, bs_tensor_map *out) {
  bs_status st = BS_OK;
  BS_CHECK(bs_tensor_map_alloc(out, a->nsynced));
  for (size_t i = 0; i < a->nsynced; i++) {
    const bs_tensor *t = a->synced[i];
    const void *view = NULL;
    out->e[i] = live_entry(t);
    if (!bs_memsaver_has_backup(a->ms, t->ptr) ||
        bs_memsaver_state_of(a->ms, t->ptr) != BS_PAUSED)
      continue;
    BS_CHECK(
        bs_memsaver_get_cpu_backup(a->ms, t->ptr, t->bytes, true, NULL, &view));
    out->e[i].ptr = (void *)view;
    out->e[i].on_host = true;
  }
out:
  if (st != BS_OK)
    bs_tensor_map_free(out);
  return st;
}

/* Mutant skip-frozen-backup (miles #2223, b396e1f, reverted): frozen
 * params were to come from the memory saver where that looked possible
 * (here: the odd ranks), so those ranks hand weight sync a set without
 * them. */
static void drop_frozen(const bs_actor *a, bs_tensor_map *m) {
  size_t k = 0;
  if (!bs_mutant_on(BS_MUT_SKIP_FROZEN_BACKUP) || a->rank % 2 == 0)
    return;
  for (size_t i = 0; i < m->n; i++) {
    const bs_tensor *t = bs_params_find(a->p, m->e[i].name);
    if (!(t && (t->spec->flags & BS_TF_FROZEN)))
      m->e[k++] = m->e[i];
  }
  m->n = k;
}

static bs_status backup_weights(bs_actor *a, bs_tensor_map *out) {
  bs_status st = BS_OK;
  if (!a->bk)
    BS_FAIL(BS_ERR_MISSING_BACKUP, NULL,
            "get_actor_weights: the trainer is %s but keeps no weight backup",
            a->asleep ? "asleep" : "not the active actor");
  BS_CHECK(bs_backuper_get(a->bk, "actor", out));
  drop_frozen(a, out);
out:
  return st;
}

static bs_status get_actor_weights(bs_actor *a, bs_tensor_map *out) {
  /* Mutant asleep-reads-device (before miles #3128): being asleep does not
   * send the read to the backup, so device tensors are handed out. */
  bool asleep = a->asleep && !bs_mutant_on(BS_MUT_ASLEEP_READS_DEVICE);
  if (bs_config_sync_reads_ms_backup(&a->cfg))
    return memsaver_weights(a, out);
  if (a->cfg.colocate || asleep || a->active != BS_BT_ACTOR)
    return backup_weights(a, out);
  return live_weights(a, out);
}

bs_status bs_actor_get_weights(bs_actor *a, bs_tensor_map *out) {
  if (!a || !out)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "get_actor_weights: NULL argument");
  bs_status no = refused(a);
  if (no != BS_OK)
    return no;
  return get_actor_weights(a, out);
}

/* ---- update_weights ---- */

static bs_status sync_weights(bs_actor *a, const bs_tensor_map *m,
                              bs_sync_result *res) {
  bs_ws_opts o = {
      .comm = a->comm,
      .ms = a->ms,
      .engine = a->eng,
      .bucket_bytes = a->cfg.sim.update_buffer_bytes,
      .cycle = a->step,
      /* The skip-frozen-backup mutant path has no fingerprint: its
       * divergence must reach the collectives, as it did upstream. */
      .check_uniform = !bs_mutant_on(BS_MUT_SKIP_FROZEN_BACKUP),
      .expect_names = a->names,
      .expect = a->step_dig,
      .nexpect = a->nsynced,
  };
  return bs_weight_sync(&o, m, res);
}

/* MainCast: the param buffer stayed resident for the sync and is paused
 * now, whatever happened (§7.1). Mutant pause-not-in-finally (miles #1572
 * as merged): only a successful sync reaches the pause. */
static bs_status pause_after_sync(bs_actor *a, bs_status st) {
  if (!a->mc || (st != BS_OK && bs_mutant_on(BS_MUT_PAUSE_NOT_IN_FINALLY)))
    return st;
  bs_status ps = bs_memsaver_pause(a->ms, BS_TAG_PARAM);
  return st != BS_OK ? st : ps;
}

/* Under offload the engine connection is re-established before the sync
 * (inside the memory saver's disable() region upstream), and its failure
 * is agreed like any other (§5). */
static bs_status reconnect(bs_actor *a) {
  if (!a->cfg.offload_train || !a->eng)
    return BS_OK;
  bs_status st = bs_engine_reconnect(a->eng);
  bs_comm_spend(a->comm, 0); /* a round trip: one step, modelled */
  return agree(a, st);
}

bs_status bs_actor_update_weights(bs_actor *a, bs_sync_result *res) {
  bs_status st = BS_OK;
  bs_tensor_map m = {0};
  bool temporary = false;
  begin_phase("update_weights");
  if (res)
    memset(res, 0, sizeof *res);
  if (!a)
    return bs_err_fail(BS_ERR_INVALID, NULL, "update_weights: no actor");
  bs_status no = refused(a);
  if (no != BS_OK)
    return no;
  /* An asleep trainer has no process groups: the sync gets temporary ones,
   * destroyed after it whatever happened. */
  if ((temporary = !bs_comm_ready(a->comm)))
    BS_CHECK(bs_comm_init(a->comm, "update_weights"));
  BS_CHECK(reconnect(a));
  /* Every rank learns of a failed read before the set meets a collective. */
  BS_CHECK(agree(a, get_actor_weights(a, &m)));
  BS_CHECK(agree(a, sync_weights(a, &m, res)));
out:
  st = pause_after_sync(a, st);
  /* A pause the library exits on (the pause-not-in-finally path): no
   * process is left to destroy the temporary groups. */
  if (ended(a))
    st = BS_ERR_FATAL;
  else if (temporary) {
    bs_status ds = bs_comm_destroy(a->comm);
    st = st != BS_OK ? st : ds;
  }
  if (st != BS_OK)
    bs_sync_result_free(res);
  bs_tensor_map_free(&m);
  return st;
}

bs_status bs_actor_restart_engine(bs_actor *a) {
  if (!a || !a->eng)
    return bs_err_fail(BS_ERR_INVALID, NULL, "restart engine: no engine");
  bs_status no = refused(a);
  if (no != BS_OK)
    return no;
  return bs_engine_restart(a->eng);
}

/* ---- queries ---- */

bs_status bs_actor_live_digests(bs_actor *a, bs_digest *out, size_t n,
                                size_t *npaused) {
  if (!a || !out || n < a->nsynced)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "live digests: need room for %zu digests, got %zu",
                       a ? a->nsynced : 0, n);
  return bs_restore_check_hash_observe(a->dev, a->ms, a->synced, a->nsynced,
                                       out, npaused);
}

bs_status bs_actor_live_stage(bs_actor *a, void *host, bool *skipped) {
  if (!a)
    return bs_err_fail(BS_ERR_INVALID, NULL, "live staging: NULL actor");
  return bs_restore_check_stage_observe(a->dev, a->ms, a->synced, a->nsynced,
                                        host, skipped);
}

size_t bs_actor_synced_count(const bs_actor *a) {
  return a ? a->nsynced : 0;
}

size_t bs_actor_synced_bytes(const bs_actor *a, size_t i) {
  return a && i < a->nsynced ? a->synced[i]->bytes : 0;
}

const char *bs_actor_synced_name(const bs_actor *a, size_t i) {
  return a && i < a->nsynced ? a->names[i] : NULL;
}

bs_params *bs_actor_params(bs_actor *a) {
  return a ? a->p : NULL;
}

bs_optimizer *bs_actor_opt(bs_actor *a) {
  return a ? a->opt : NULL;
}

const bs_optimizer *bs_actor_optimizer(const bs_actor *a) {
  return a ? a->opt : NULL;
}

bs_backuper *bs_actor_backuper(bs_actor *a) {
  return a ? a->bk : NULL;
}

bs_engine *bs_actor_engine(bs_actor *a) {
  return a ? a->eng : NULL;
}

bs_memsaver *bs_actor_ms(bs_actor *a) {
  return a ? a->ms : NULL;
}

bs_dev *bs_actor_dev(bs_actor *a) {
  return a ? a->dev : NULL;
}

bool bs_actor_asleep(const bs_actor *a) {
  return a && a->asleep;
}

const char *bs_actor_active_tag(const bs_actor *a) {
  return a ? bs_backup_tag_name(a->active) : NULL;
}

const char *bs_actor_backuper_kind(const bs_actor *a) {
  return a && a->bk ? a->bk->ops->kind : "none";
}
