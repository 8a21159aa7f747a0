/* CUDA mirror of kernels/bs_cast.c. The cast is memory-bound (4 B read, 2 B
 * written per element), so aligned buffers move eight elements a thread:
 * two 16-byte loads and one 16-byte store (four elements and an 8-byte store
 * where the destination is only 8-byte aligned). The per-element rounding
 * is the shared bs_ke_f32_to_bf16, so the bits are the host's. */
#include <stdint.h>

#include "bs_cu_grid.cuh"
#include "bs_kernel_elem.h"
#include "bs_kernels_cuda.h"

static __device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  return (uint32_t)bs_ke_f32_to_bf16(lo) |
         ((uint32_t)bs_ke_f32_to_bf16(hi) << 16);
}

static __global__ void cast_kernel(uint16_t *dst, const float *src, size_t n) {
  BS_CU_FOR_EACH(i, n) dst[i] = bs_ke_f32_to_bf16(src[i]);
}

static __global__ void cast_kernel_vec4(uint2 *dst, const float4 *src,
                                        size_t n4) {
  BS_CU_FOR_EACH(i, n4) {
    float4 f = src[i];
    dst[i] = make_uint2(pack2(f.x, f.y), pack2(f.z, f.w));
  }
}

static __global__ void cast_kernel_vec8(uint4 *dst, const float4 *src,
                                        size_t n8) {
  BS_CU_FOR_EACH(i, n8) {
    float4 a = src[2 * i], b = src[2 * i + 1];
    dst[i] = make_uint4(pack2(a.x, a.y), pack2(a.z, a.w), pack2(b.x, b.y),
                        pack2(b.z, b.w));
  }
}

extern "C" int bs_cu_cast_f32_bf16(uint16_t *dst, const float *src, size_t n,
                                   void *stream) {
  if (n == 0)
    return cudaSuccess;
  cudaStream_t s = BS_CU_STREAM(stream);
  size_t done = 0;
  if ((uintptr_t)src % 16 == 0 && (uintptr_t)dst % 16 == 0 && n / 8) {
    done = n / 8 * 8;
    cast_kernel_vec8<<<bs_cu_blocks(n / 8), BS_CU_THREADS, 0, s>>>(
        (uint4 *)dst, (const float4 *)src, n / 8);
  } else if ((uintptr_t)src % 16 == 0 && (uintptr_t)dst % 8 == 0 && n / 4) {
    done = n / 4 * 4;
    cast_kernel_vec4<<<bs_cu_blocks(n / 4), BS_CU_THREADS, 0, s>>>(
        (uint2 *)dst, (const float4 *)src, n / 4);
  }
  if (n > done)
    cast_kernel<<<bs_cu_blocks(n - done), BS_CU_THREADS, 0, s>>>(
        dst + done, src + done, n - done);
  return cudaGetLastError();
}
