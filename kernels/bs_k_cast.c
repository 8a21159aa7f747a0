/* fp32 -> bf16 cast on the host (the element function is shared with the
 * CUDA kernel through bs_kernel_elem.h). */
#include "bs_kernel_elem.h"

uint16_t bs_k_cast_f32_to_bf16(float x) {
  return bs_ke_f32_to_bf16(x);
}

float bs_k_cast_bf16_to_f32(uint16_t x) {
  return bs_ke_bf16_to_f32(x);
}

void bs_k_cast_f32_bf16(uint16_t *dst, const float *src, size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] = bs_ke_f32_to_bf16(src[i]);
}
