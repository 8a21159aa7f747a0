/* What a tensor of a model spec is: param or buffer, in a DDP buffer,
 * synced to the engine, its size. */
#include "model/bs_model.h"

bool bs_tensor_is_param(const bs_tensor_spec *t) {
  return !(t->flags & BS_TF_BUFFER);
}

bool bs_tensor_in_ddp(const bs_tensor_spec *t) {
  return bs_tensor_is_param(t) && !(t->flags & BS_TF_FROZEN) &&
         t->dtype == BS_BF16;
}

bool bs_tensor_is_synced(const bs_tensor_spec *t) {
  return bs_tensor_is_param(t) || (t->flags & BS_TF_EXPERT_BIAS);
}

size_t bs_tensor_bytes(const bs_tensor_spec *t) {
  return t->numel * bs_dtype_size(t->dtype);
}
