/* CUDA mirror of kernels/bs_k_bitflip.c: one thread flips one bit. */
#include "bs_cu_grid.cuh"
#include "bs_kernels_cuda.h"

static __global__ void bitflip_kernel(uint8_t *buf, uint64_t at) {
  buf[at >> 3] ^= (uint8_t)(1u << (at & 7));
}

extern "C" int bs_cu_bitflip(void *buf, size_t nbytes, uint64_t bit,
                             void *stream) {
  if (nbytes == 0)
    return cudaSuccess;
  uint64_t at = bit % ((uint64_t)nbytes * 8);
  bitflip_kernel<<<1, 1, 0, BS_CU_STREAM(stream)>>>((uint8_t *)buf, at);
  return cudaGetLastError();
}
