/* An SM-driven device copy: every byte goes through SM loads and stores, as
 * the cast's do, where cudaMemcpy D2D takes the copy path the driver tunes
 * for it. It is the like-for-like ceiling of the cast (docs/performance.md).
 *
 * The widest vector that both pointers can be aligned to together (16 bytes
 * when they agree modulo 16) moves the middle in a grid-stride loop; the
 * bytes before dst's first vector boundary and after its last one go one
 * byte a thread, in the same launch. */
#include <stdint.h>

#include "bs_cu_grid.cuh"
#include "bs_kernels_cuda.h"

/* Bytes [0, head) and [head + nvec * sizeof(V), n) are the edges: thread t
 * takes edge byte t, so the tail needs no launch of its own. */
template <typename V>
static __global__ void copy_kernel(uint8_t *dst, const uint8_t *src,
                                   size_t head, size_t nvec, size_t tail) {
  V *dv = (V *)(dst + head);
  const V *sv = (const V *)(src + head);
  BS_CU_FOR_EACH(i, nvec) dv[i] = sv[i];
  size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t < head + tail) {
    size_t j = t < head ? t : head + nvec * sizeof(V) + (t - head);
    dst[j] = src[j];
  }
}

template <typename V>
static int launch(uint8_t *dst, const uint8_t *src, size_t n, cudaStream_t s) {
  const size_t w = sizeof(V);
  size_t head = (w - (uintptr_t)dst % w) % w;
  head = head < n ? head : n;
  size_t nvec = (n - head) / w;
  size_t tail = n - head - nvec * w;
  size_t threads = nvec > head + tail ? nvec : head + tail;
  copy_kernel<V><<<bs_cu_blocks(threads), BS_CU_THREADS, 0, s>>>(dst, src, head,
                                                                 nvec, tail);
  return cudaGetLastError();
}

extern "C" int bs_cu_copy(void *dst, const void *src, size_t n, void *stream) {
  if (n == 0)
    return cudaSuccess;
  uint8_t *d = (uint8_t *)dst;
  const uint8_t *s = (const uint8_t *)src;
  cudaStream_t st = BS_CU_STREAM(stream);
  /* The low bits where the two addresses differ: a vector of w bytes can
   * be aligned for both only when they agree modulo w. */
  uintptr_t skew = (uintptr_t)dst ^ (uintptr_t)src;
  if (skew % 16 == 0)
    return launch<uint4>(d, s, n, st);
  if (skew % 8 == 0)
    return launch<uint2>(d, s, n, st);
  if (skew % 4 == 0)
    return launch<uint32_t>(d, s, n, st);
  if (skew % 2 == 0)
    return launch<uint16_t>(d, s, n, st);
  return launch<uint8_t>(d, s, n, st);
}
