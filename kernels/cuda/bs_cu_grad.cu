/* CUDA mirror of kernels/bs_k_grad.c. */
#include "bs_cu_grid.cuh"
#include "bs_kernel_elem.h"
#include "bs_kernels_cuda.h"

static __global__ void grad_kernel(float *g, const uint16_t *p, size_t n,
                                   uint64_t base, uint64_t seed, int rank,
                                   int step) {
  BS_CU_FOR_EACH(i, n) g[i] = bs_ke_grad(p[i], base + i, seed, rank, step);
}

extern "C" int bs_cu_grad(float *grad, const uint16_t *param, size_t n,
                          uint64_t base, uint64_t seed, int rank, int step,
                          void *stream) {
  if (n == 0)
    return cudaSuccess;
  grad_kernel<<<bs_cu_blocks(n), BS_CU_THREADS, 0, BS_CU_STREAM(stream)>>>(
      grad, param, n, base, seed, rank, step);
  return cudaGetLastError();
}
