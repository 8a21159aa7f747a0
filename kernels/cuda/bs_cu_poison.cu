/* CUDA mirror of kernels/bs_k_poison.c: one thread per 8-byte word of the
 * pattern; buf[i] is the pattern's byte from + i. */
#include "bs_cu_grid.cuh"
#include "bs_kernel_elem.h"
#include "bs_kernels_cuda.h"

static __global__ void poison_kernel(uint8_t *buf, size_t nbytes, size_t words,
                                     uint64_t seed, uint64_t from) {
  uint64_t w0 = from / 8;
  BS_CU_FOR_EACH(w, words) {
    uint64_t p0 = (w0 + w) * 8; /* the word's first byte in the pattern */
    uint8_t *at = buf + (p0 - from);
    if (p0 >= from && p0 + 8 <= from + nbytes && (uintptr_t)at % 8 == 0) {
      /* The device is little-endian: the word is bytes p0..p0+7. */
      *(uint64_t *)at = bs_ke_poison_word(seed, w0 + w);
      continue;
    }
    for (uint64_t j = p0 < from ? from : p0; j < p0 + 8 && j < from + nbytes;
         j++)
      buf[j - from] = bs_ke_poison_byte(seed, j);
  }
}

extern "C" int bs_cu_poison(void *buf, size_t nbytes, uint64_t seed,
                            uint64_t from, void *stream) {
  if (nbytes == 0)
    return cudaSuccess;
  size_t words = (from + nbytes + 7) / 8 - from / 8;
  poison_kernel<<<bs_cu_blocks(words), BS_CU_THREADS, 0,
                  BS_CU_STREAM(stream)>>>((uint8_t *)buf, nbytes, words, seed,
                                          from);
  return cudaGetLastError();
}
