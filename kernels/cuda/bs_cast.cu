/* CUDA mirror of kernels/bs_cast.c. */
#include "bs_cu_grid.cuh"
#include "bs_kernel_elem.h"
#include "bs_kernels_cuda.h"

static __global__ void cast_kernel(uint16_t *dst, const float *src, size_t n) {
  BS_CU_FOR_EACH(i, n) dst[i] = bs_ke_f32_to_bf16(src[i]);
}

extern "C" int bs_cu_cast_f32_bf16(uint16_t *dst, const float *src, size_t n,
                                   void *stream) {
  if (n == 0)
    return cudaSuccess;
  cast_kernel<<<bs_cu_blocks(n), BS_CU_THREADS, 0, BS_CU_STREAM(stream)>>>(
      dst, src, n);
  return cudaGetLastError();
}
