/* CUDA mirror of kernels/bs_k_adam.c. */
#include "bs_cu_grid.cuh"
#include "bs_kernel_elem.h"
#include "bs_kernels_cuda.h"

/* hp by value: kernel parameters live in constant memory, no copy needed. */
static __global__ void adam_kernel(float *p, float *m, float *v, const float *g,
                                   size_t n, bs_adam_hp hp) {
  BS_CU_FOR_EACH(i, n) bs_ke_adam(&p[i], &m[i], &v[i], g[i], &hp);
}

extern "C" int bs_cu_adam(float *param, float *m, float *v, const float *grad,
                          size_t n, const bs_adam_hp *hp, void *stream) {
  if (n == 0)
    return cudaSuccess;
  adam_kernel<<<bs_cu_blocks(n), BS_CU_THREADS, 0, BS_CU_STREAM(stream)>>>(
      param, m, v, grad, n, *hp);
  return cudaGetLastError();
}
