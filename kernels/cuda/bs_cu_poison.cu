/* CUDA mirror of kernels/bs_k_poison.c: one thread per 8-byte word. */
#include "bs_cu_grid.cuh"
#include "bs_kernel_elem.h"
#include "bs_kernels_cuda.h"

static __global__ void poison_kernel(uint8_t *buf, size_t nbytes, size_t words,
                                     uint64_t seed) {
  bool aligned = (uintptr_t)buf % 8 == 0;
  BS_CU_FOR_EACH(w, words) {
    size_t j0 = w * 8;
    if (aligned && j0 + 8 <= nbytes) {
      /* The device is little-endian: the word is bytes j0..j0+7. */
      *(uint64_t *)(buf + j0) = bs_ke_poison_word(seed, w);
      continue;
    }
    for (size_t j = j0; j < j0 + 8 && j < nbytes; j++)
      buf[j] = bs_ke_poison_byte(seed, j);
  }
}

extern "C" int bs_cu_poison(void *buf, size_t nbytes, uint64_t seed,
                            void *stream) {
  if (nbytes == 0)
    return cudaSuccess;
  size_t words = (nbytes + 7) / 8;
  poison_kernel<<<bs_cu_blocks(words), BS_CU_THREADS, 0,
                  BS_CU_STREAM(stream)>>>((uint8_t *)buf, nbytes, words, seed);
  return cudaGetLastError();
}
