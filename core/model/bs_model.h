/* Model specs: a line-oriented text format and compiled-in presets.
 *
 *   # comment
 *   model NAME
 *   NAME DTYPE SHAPE [FLAG...]
 *
 * DTYPE: bf16 | fp32 | int32 | int64. SHAPE: dims joined by 'x' (4096x1024).
 * FLAGS: frozen (requires_grad=False), expert (expert-parallel param),
 * buffer (a module buffer, not a param), expert_bias (a buffer synced to the
 * engine), fp32 (an fp32 param: its master aliases it), lora (an adapter).
 * Tensor sizes are multiplied by the scale factor (first dim, rounded, at
 * least 1). A param of dtype fp32 gets the fp32 flag implicitly. Rejected:
 * expert_bias without buffer; buffer with expert, frozen, lora or fp32;
 * the fp32 flag on another dtype; lora on a frozen or non-bf16 tensor; a
 * trainable integer param; duplicate names or flags; no 'model NAME' line
 * before the tensors; an empty model. */
#ifndef BS_MODEL_H
#define BS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_dtype.h"
#include "bs_err.h"

enum {
  BS_TF_FROZEN = 1u << 0,
  BS_TF_EXPERT = 1u << 1,
  BS_TF_BUFFER = 1u << 2,
  BS_TF_EXPERT_BIAS = 1u << 3,
  BS_TF_FP32 = 1u << 4,
  BS_TF_LORA = 1u << 5,
};

#define BS_NAME_MAX 96
#define BS_MAX_DIMS 4

typedef struct bs_tensor_spec {
  char name[BS_NAME_MAX];
  bs_dtype dtype;
  int ndim;
  int64_t shape[BS_MAX_DIMS];
  size_t numel;
  unsigned flags;
} bs_tensor_spec;

typedef struct bs_model_spec {
  char name[64];
  bs_tensor_spec *t;
  size_t n;
} bs_model_spec;

void bs_model_free(bs_model_spec *m);
/* NULL-terminated list of preset names. */
const char *const *bs_model_preset_list(void);
/* A preset's text (bs_model_parse's format), NULL for no preset. */
const char *bs_model_preset_text(const char *name);

/* Classification used by the DDP layout and the backupers. */
bool bs_tensor_is_param(const bs_tensor_spec *t);  /* not a buffer */
bool bs_tensor_in_ddp(const bs_tensor_spec *t);    /* trainable bf16 param */
bool bs_tensor_is_synced(const bs_tensor_spec *t); /* sent to the engine */
size_t bs_tensor_bytes(const bs_tensor_spec *t);

#endif
