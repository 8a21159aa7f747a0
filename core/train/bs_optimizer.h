/* The distributed optimizer (docs/behavior.md §3, §4 MainCast restore step 1).
 *
 * A chained optimizer, like Megatron's ChainedOptimizer: any number of inner
 * Adams, each owning the rank's shard of a contiguous run of buckets of one
 * DDP buffer. The expert buffer has one; the dense buffer one per model
 * chunk (cfg.chunks, its buckets split evenly, as Megatron builds one
 * distributed optimizer per model chunk), so moe with 2 chunks chains 3.
 * The shard of an inner optimizer is the concatenation of the rank's shard
 * ranges over its buckets; "shard element i" below counts in that
 * concatenation.
 *
 * Master weights and Adam state are fp32 and live in the memory saver's
 * "default" region with a cpu backup, so they survive pause/resume.
 *
 * Precision-aware + CPU offload (HybridDeviceOptimizer, "HDO"): each inner
 * optimizer's master shard is split between two maps, as Megatron's
 * HybridDeviceOptimizer leaves them:
 *   - host masters, shard elements [0, h): pinned host fp32 (owner
 *     BS_PIN_OTHER, not a backuper's budget), updated by a CPU Adam; the
 *     step-end hook copies them back (gpu_params_map_cpu_copy);
 *   - device fp32 masters, shard elements [d0, n) with d0 < h: the
 *     precision-aware optimizer's fp32 params (param_to_fp32_param). The
 *     overlap [d0, h) models params that got a device fp32 param before HDO
 *     moved them to the CPU: it is never updated, so it goes stale.
 * The copy-back writes the host map first, then the device map only for
 * elements not already written ([max(d0, h), n)): on overlap the host copy
 * wins. A replay in the other order, or one letting the device win, writes
 * the stale bytes. h = round(n * offload_fraction), d0 = h / 2.
 *
 * Precision-aware WITHOUT CPU offload: the real optimizer keeps the master as
 * the bf16 param plus an int16 remainder, so the master's high half IS the
 * param buffer and nothing can be rebuilt once that buffer is lost. It is
 * modelled with fp32 masters (the remainder scheme is lossless, so steps are
 * the same): precision-aware, only an inner HDO can be rebuilt from
 * (bs_optimizer_check_rebuildable).
 * CPU offload without precision-aware is rejected (BS_ERR_CONFIG), as
 * Megatron's argument check does. */
#ifndef BS_OPTIMIZER_H
#define BS_OPTIMIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_err.h"
#include "dev/bs_dev.h"
#include "memsaver/bs_memsaver.h"
#include "model/bs_config.h"
#include "model/bs_ddp.h"

typedef struct bs_optimizer_cfg {
  float lr, beta1, beta2, eps, weight_decay;
  bool precision_aware;    /* precision-aware optimizer */
  bool cpu_offload;        /* optimizer CPU offload (HybridDeviceOptimizer) */
  double offload_fraction; /* share of each inner master shard on the host */
  size_t chunks; /* dense model chunks, one inner optimizer each (0, 1: one) */
} bs_optimizer_cfg;

#define BS_OPT_CHUNKS_MAX 64

/* The optimizer a job configuration asks for (Adam knobs, precision-aware,
 * CPU offload, model chunks). */
bs_optimizer_cfg bs_optimizer_cfg_of(const bs_config *c);

typedef struct bs_optimizer bs_optimizer;

/* Whether the layout has a bucket for each model chunk (what create
 * checks first): BS_ERR_CONFIG naming the numbers when it has not. */
bs_status bs_optimizer_layout_check(const bs_optimizer_cfg *cfg,
                                    const bs_ddp_layout *l);

/* param_buf[k]: the rank's bf16 param buffer k (device memory), NULL only
 * for a buffer without elements. Masters start as the current params cast
 * up to fp32; Adam m and v start at zero. */
bs_status bs_optimizer_create(bs_dev *dev, bs_memsaver *ms,
                              const bs_ddp_layout *l, int rank,
                              const bs_optimizer_cfg *cfg,
                              uint16_t *const param_buf[BS_BUF_COUNT],
                              bs_optimizer **out);
void bs_optimizer_destroy(bs_optimizer *o);

/* One step (step counts from 1, for the bias corrections): Adam on the
 * master shard with the reduce-scattered gradient read from the rank's shard
 * range of every bucket of grad_buf (fp32, device memory), then the step-end
 * cast fp32 -> bf16 into the rank's slice of the param buffer. The caller
 * all-gathers afterwards. */
bs_status bs_optimizer_step(bs_optimizer *o,
                            float *const grad_buf[BS_BUF_COUNT], int step);

/* MainCast restore step 1: the step-end copy-back again, through every
 * inner optimizer once (HDO: host map first, then the device map where not
 * written). Bit-identical to what the last step wrote. Writes only the
 * rank's shard ranges of the param buffers. Refused (nothing written) where
 * bs_optimizer_check_rebuildable refuses. */
bs_status bs_optimizer_cast_to_params(bs_optimizer *o);
/* Whether the masters can rebuild the params: under the precision-aware
 * optimizer every inner optimizer must be a HybridDeviceOptimizer, else
 * BS_ERR_UNSUPPORTED naming the first that is not. */
bs_status bs_optimizer_check_rebuildable(const bs_optimizer *o);

size_t bs_optimizer_num_inner(const bs_optimizer *o);

/* The live device fp32 master of inner optimizer `inner`: the elements the
 * device Adam updates (all n without HDO; [h, n) with HDO, *n = n - h).
 * Device memory: touch it only through the bs_dev functions. For the
 * master/corrupt fault and tests. */
bs_status bs_optimizer_master_ptr(bs_optimizer *o, int inner, float **master,
                                  size_t *n);

/* Every map of one inner optimizer, for tests and fault injection. */
typedef struct bs_optimizer_view {
  int buf;             /* BS_BUF_DENSE or BS_BUF_EXPERT */
  size_t first_bucket; /* the buckets of buf it owns */
  size_t nbuckets;
  bool hdo;         /* a HybridDeviceOptimizer */
  size_t n;         /* shard elements */
  float *host;      /* host master of [0, host_n): pinned host, or NULL */
  size_t host_n;    /* h */
  float *dev;       /* device master of [dev_first, n): device memory */
  size_t dev_first; /* d0 */
} bs_optimizer_view;
bs_status bs_optimizer_view_get(const bs_optimizer *o, int inner,
                                bs_optimizer_view *out);

#endif
