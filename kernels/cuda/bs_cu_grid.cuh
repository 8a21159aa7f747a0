/* Launch geometry shared by the element kernels: grid-stride loops over
 * size_t indices, so any n fits in a bounded grid. */
#ifndef BS_CU_GRID_CUH
#define BS_CU_GRID_CUH

#include <cuda_runtime.h>
#include <stddef.h>

#define BS_CU_THREADS 256
#define BS_CU_MAX_BLOCKS 65535u

static inline unsigned bs_cu_blocks(size_t n) {
  size_t b = (n + BS_CU_THREADS - 1) / BS_CU_THREADS;
  return b > BS_CU_MAX_BLOCKS ? BS_CU_MAX_BLOCKS : (unsigned)b;
}

#define BS_CU_FOR_EACH(i, n)                                                   \
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);      \
       i += (size_t)gridDim.x * blockDim.x)

#define BS_CU_STREAM(s) ((cudaStream_t)(s))

#endif
