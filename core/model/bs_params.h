/* The rank's live model on the device, every byte inside memory-saver
 * allocations (docs/behavior.md §2-3):
 *   - trainable bf16 params: views into the DDP param buffers (one
 *     allocation per non-empty buffer, tag "param_buffer"), with fp32 grad
 *     buffers of the same layout (tag "grad_buffer"); both with or without
 *     a cpu backup (without under --offload-train);
 *   - every other tensor (frozen, fp32 params, buffers): its own allocation
 *     in "default" with a cpu backup.
 * Device memory is only touched through the bs_dev seam. */
#ifndef BS_PARAMS_H
#define BS_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dev/bs_dev.h"
#include "memsaver/bs_memsaver.h"
#include "model/bs_ddp.h"

typedef struct bs_tensor {
  const bs_tensor_spec *spec;
  void *ptr;     /* device memory */
  size_t bytes;  /* numel * dtype size */
  int buffer;    /* BS_BUF_DENSE/EXPERT, -1 outside the DDP buffers */
  size_t offset; /* element offset in its buffer */
} bs_tensor;

typedef struct bs_params {
  bs_dev *dev;
  bs_memsaver *ms;
  const bs_model_spec *model; /* borrowed: must outlive the params */
  bs_ddp_layout layout;
  uint16_t *param_buf[BS_BUF_COUNT]; /* NULL for an empty buffer */
  float *grad_buf[BS_BUF_COUNT];
  bs_tensor *t; /* one per model tensor, spec order */
  size_t n;
} bs_params;

/* Allocates (contents undefined until bs_params_fill). */
bs_status bs_params_create(bs_dev *dev, bs_memsaver *ms, const bs_model_spec *m,
                           int dp, size_t bucket_numel, bool buffers_cpu_backup,
                           bs_params **out);
void bs_params_destroy(bs_params *p);

/* Deterministic initial values, the same on every rank for a seed: floats
 * are 0.5 * bs_k_grad_hash_unit(seed, stream + tensor index, element) (bf16:
 * rounded), integer tables small ints in [0, 8); buffer padding and grads
 * zero. */
bs_status bs_params_fill(bs_params *p, uint64_t seed);
/* The same for an observer (the driver's reference weights): the uploads
 * bypass the fault point copy/fail, so building the reference never fires
 * an armed fault nor counts towards its nth. */
bs_status bs_params_fill_observe(bs_params *p, uint64_t seed);

/* NULL when the model has no tensor of that name. */
const bs_tensor *bs_params_find(const bs_params *p, const char *name);

/* The synced tensors (every param and the expert_bias buffers), spec order:
 * the backupers' source. Writes up to max pointers, returns how many there
 * are. */
size_t bs_params_synced(const bs_params *p, const bs_tensor **out, size_t max);
/* Sum of their bytes: a Normal backup's pinned bytes per tag. */
size_t bs_params_synced_bytes(const bs_params *p);

#endif
