/* CUDA mirror of kernels/bs_cast.c. The cast is memory-bound (4 B read, 2 B
 * written per element), so aligned buffers take 16-byte loads and 8-byte
 * stores, four elements a thread; the per-element rounding is the shared
 * bs_ke_f32_to_bf16, so the bits are the host's. */
#include <stdint.h>

#include "bs_cu_grid.cuh"
#include "bs_kernel_elem.h"
#include "bs_kernels_cuda.h"

static __global__ void cast_kernel(uint16_t *dst, const float *src, size_t n) {
  BS_CU_FOR_EACH(i, n) dst[i] = bs_ke_f32_to_bf16(src[i]);
}

static __global__ void cast_kernel_vec4(uint2 *dst, const float4 *src,
                                        size_t n4) {
  BS_CU_FOR_EACH(i, n4) {
    float4 f = src[i];
    uint2 o;
    o.x = (uint32_t)bs_ke_f32_to_bf16(f.x) |
          ((uint32_t)bs_ke_f32_to_bf16(f.y) << 16);
    o.y = (uint32_t)bs_ke_f32_to_bf16(f.z) |
          ((uint32_t)bs_ke_f32_to_bf16(f.w) << 16);
    dst[i] = o;
  }
}

extern "C" int bs_cu_cast_f32_bf16(uint16_t *dst, const float *src, size_t n,
                                   void *stream) {
  if (n == 0)
    return cudaSuccess;
  cudaStream_t s = BS_CU_STREAM(stream);
  size_t n4 = 0;
  if ((uintptr_t)src % 16 == 0 && (uintptr_t)dst % 8 == 0) {
    n4 = n / 4;
    if (n4)
      cast_kernel_vec4<<<bs_cu_blocks(n4), BS_CU_THREADS, 0, s>>>(
          (uint2 *)dst, (const float4 *)src, n4);
  }
  if (n - 4 * n4)
    cast_kernel<<<bs_cu_blocks(n - 4 * n4), BS_CU_THREADS, 0, s>>>(
        dst + 4 * n4, src + 4 * n4, n - 4 * n4);
  return cudaGetLastError();
}
