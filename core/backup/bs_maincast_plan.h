/* MainCast (docs/behavior.md §4, --rematerialize-param-from-master-weight): the
 * context that decides which synced tensors are rebuilt from the master
 * weights and which need a pinned copy, the init-time coverage check, and
 * the MainCast backuper built on it.
 *
 * Extras (pinned backup for "actor"): expert_bias buffers, fp32 params and
 * frozen params (this project's fix, later adopted upstream). Every other
 * synced tensor must live in a DDP param buffer (rematerializable). */
#ifndef BS_MAINCAST_PLAN_H
#define BS_MAINCAST_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "backup/bs_backuper.h"
#include "backup/bs_restore_check.h"
#include "backup/bs_source.h"
#include "comm/bs_comm.h"
#include "model/bs_params.h"
#include "train/bs_optimizer.h"

typedef struct bs_maincast_plan {
  bs_params *p;      /* borrowed */
  bs_optimizer *opt; /* borrowed: the masters restore casts from */
  bs_comm *comm;     /* borrowed: restore all-gathers the param buffers */
  bs_source *src;    /* the sync source, read afresh at every call */
  /* The synced tensors with a pinned backup, classified at create. */
  const bs_tensor **extras;
  size_t nextras;
  size_t extras_bytes;
} bs_maincast_plan;

/* Whether a tensor is an extra. Mutant frozen-not-extras leaves frozen
 * params out. */
bool bs_maincast_plan_is_extra(const bs_tensor_spec *t);
/* In a DDP param buffer: rebuilt by the cast and the all-gather. */
bool bs_maincast_plan_rematerializable(const bs_tensor *t);

/* Classifies the synced tensors of the source as it is at create; no
 * coverage check (see bs_maincast_plan_check_coverage). Under the
 * precision-aware optimizer an inner optimizer that is not a
 * HybridDeviceOptimizer fails it at once (BS_ERR_UNSUPPORTED naming it). */
bs_status bs_maincast_plan_create(bs_params *p, bs_optimizer *opt, bs_comm *c,
                                  bs_maincast_plan **out);
void bs_maincast_plan_destroy(bs_maincast_plan *mc);
/* Every param is rematerializable or an extra, else BS_ERR_COVERAGE naming
 * the uncovered params. Model structure decides, not configuration. */
bs_status bs_maincast_plan_check_coverage(const bs_maincast_plan *mc);

/* The MainCast backuper over mc (which must outlive it).
 *   backup("actor"):  pinned copy of the extras (owner BS_PIN_BACKUPER);
 *                     when check_armed, the SHA256 check of the first
 *                     BS_RCHECK_CYCLES backups. Fault backup/corrupt.
 *   restore("actor"): (1) cast every inner optimizer's master shard into
 *                     the rank's slice (HDO replay), (2) all-gather every
 *                     param buffer, (3) copy the extras back, (4) sync,
 *                     (5) verify when a check is pending. Faults
 *                     master/corrupt before (1), restore/bitflip before (5).
 *                     A local failure still runs the all-gathers (2), so
 *                     peers are never left waiting; the caller agrees.
 *   get("actor"):     the source now: live tensors for the buffer params,
 *                     the pinned copies for the extras; BS_ERR_COVERAGE
 *                     naming any tensor that is neither ("... is neither in
 *                     the DDP param buffers nor in the extras backup").
 *   other tags:       a Normal backuper with full copies (no masters).
 *   copy:             among other tags only ("actor" has no full copy). */
bs_status bs_backuper_maincast_create(bs_maincast_plan *mc, bool check_armed,
                                      bs_backuper **out);

#endif
