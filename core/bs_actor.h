/* The actor: one rank's trainer through the colocated RL lifecycle
 * (docs/behavior.md §5), with the fixes of §7 and the mutant switches of §8.
 *
 * Every fallible phase ends in bs_comm_agree(): it returns the status all
 * ranks agreed on, and bs_err() then holds the same record on every rank.
 * A rank that failed locally keeps following the collective schedule up to
 * that agreement point. A fatal error of the memory saver (docs/behavior.md §2)
 * is the exception: the real library ends the process, so the rank leaves
 * the world as a death (bs_comm_die) and returns BS_ERR_FATAL with the
 * library's message from then on; its peers return BS_ERR_RANK_DEAD.
 * A restore the check rejects (hash mismatch, changed tensor set) is an
 * exception in miles that ends the job: the actor is failed, and every
 * later call answers with that agreed record until an actor is
 * initialised again. */
#ifndef BS_ACTOR_H
#define BS_ACTOR_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_digest.h"
#include "comm/bs_comm.h"
#include "model/bs_config.h"
#include "model/bs_model.h"
#include "sync/bs_sync_result.h"

typedef struct bs_actor bs_actor;
/* Opaque here: the actor's parts are the core's own (white-box tests see
 * them through bs_actor_testing.h). */
typedef struct bs_engine bs_engine;
typedef struct bs_tensor_map bs_tensor_map;

typedef struct bs_actor_opts {
  const bs_config *cfg; /* validated by the caller */
  const bs_model_spec *model;
  uint64_t seed;                  /* initial weights, gradients */
  const char *engine_exe;         /* binary executed in engine mode */
  const char *const *engine_argv; /* arguments before "engine"; may be NULL */
  /* An engine to use instead of starting one (borrowed: the caller stops
   * it), so that consecutive actors of a rank can share one process. */
  bs_engine *engine;
} bs_actor_opts;

/* init (§5): model, optimizer, MainCast context + coverage check, backuper,
 * backups of actor (and ref/teacher/old_actor), switch_model("actor"), and
 * sleep() when offloading. Starts this rank's engine process. */
bs_status bs_actor_init(bs_comm *c, const bs_actor_opts *o, bs_actor **out);
/* The end of the job: frees everything as the trainer is (asleep, its
 * allocations are PAUSED). BS_ERR_FATAL with the library's message when
 * the memory saver ended the process on the way (a free that released
 * memory twice: mutant free-paused-double-release), else BS_OK. */
bs_status bs_actor_end(bs_actor *a);
/* bs_actor_end without its verdict; the error record is left alone. */
void bs_actor_destroy(bs_actor *a);

/* One training step: gradients from the params it sees, reduce-scatter,
 * Adam, cast, all-gather; then backup("actor") when backups are enabled. */
bs_status bs_actor_train_step(bs_actor *a);
/* Agreed across ranks, like every fallible phase. */
bs_status bs_actor_sleep(bs_actor *a);
bs_status bs_actor_wake_up(bs_actor *a);
/* Reads the weights (get_actor_weights), checks the tensor set is uniform
 * across ranks, streams them in buckets (each gathered across ranks first),
 * then, for MainCast, pauses param_buffer — on every exit path. */
bs_status bs_actor_update_weights(bs_actor *a, bs_sync_result *res);
bs_status bs_actor_switch_model(bs_actor *a, const char *tag);
/* The restore at the start of a step (compute_advantages_and_returns):
 * switch_model(ref), switch_model(teacher) when present, then actor. */
bs_status bs_actor_restore_for_step(bs_actor *a);
bs_status bs_actor_get_weights(bs_actor *a, bs_tensor_map *out);
/* A fresh engine process after an engine death (what the real job does). */
bs_status bs_actor_restart_engine(bs_actor *a);

/* For oracles: SHA256 of every synced tensor as it is on the device now
 * (sync order), read without touching paused memory (a paused tensor gets
 * an all-zero digest and *npaused counts it) and past the fault points. */
bs_status bs_actor_live_digests(bs_actor *a, bs_digest *out, size_t n,
                                size_t *npaused);
/* What it hashes, staged for an observer that hashes elsewhere: every
 * synced tensor's live bytes one after the other in host (room for the
 * bs_actor_synced_bytes of all), skipped[i] a paused one, not staged. */
bs_status bs_actor_live_stage(bs_actor *a, void *host, bool *skipped);
size_t bs_actor_synced_count(const bs_actor *a);
size_t bs_actor_synced_bytes(const bs_actor *a, size_t i);
const char *bs_actor_synced_name(const bs_actor *a, size_t i);

/* The DDP bucket target of a world of ranks: --set bucket_numel raised to
 * the DP size (bs_ddp_bucket_numel), unless the dense buffer is split into
 * model chunks, each of which needs buckets of its own. */
size_t bs_actor_layout_bucket_numel(const bs_config *cfg, int ranks);

/* What init would build, asked before any rank runs (planning): whether
 * the model lays out on `ranks` (the DDP buffers and the optimizer's chain
 * over them; the error says why not), and the elements of those buffers
 * then (buckets padded). */
bs_status bs_actor_layout_check(const bs_model_spec *m, int ranks,
                                const bs_config *cfg);
bs_status bs_actor_layout_numel(const bs_model_spec *m, int ranks,
                                const bs_config *cfg, double *out);

#endif
