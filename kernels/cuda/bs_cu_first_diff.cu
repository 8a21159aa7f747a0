/* CUDA mirror of kernels/bs_k_first_diff.c. Each thread reports the first
 * difference it sees with atomicMin, so the result is the global first
 * index whatever the schedule. */
#include "bs_cu_grid.cuh"
#include "bs_kernels_cuda.h"

typedef unsigned long long ull;

/* Whole 8-byte words when both sides are aligned (the little-endian byte
 * order makes the lowest set bit of a^b the first differing byte), then
 * the remaining bytes one by one. */
static __global__ void first_diff_kernel(const uint8_t *a, const uint8_t *b,
                                         size_t words, size_t n, ull *res) {
  const uint64_t *wa = (const uint64_t *)a, *wb = (const uint64_t *)b;
  BS_CU_FOR_EACH(w, words) {
    uint64_t x = wa[w] ^ wb[w];
    if (x) {
      atomicMin(res, (ull)(w * 8 + (size_t)(__ffsll((long long)x) - 1) / 8));
      return;
    }
  }
  size_t tail = n - words * 8;
  BS_CU_FOR_EACH(j, tail) {
    size_t i = words * 8 + j;
    if (a[i] != b[i]) {
      atomicMin(res, (ull)i);
      return;
    }
  }
}

extern "C" int bs_cu_first_diff(const void *a, const void *b, size_t n,
                                size_t *out, void *stream) {
  cudaStream_t s = BS_CU_STREAM(stream);
  ull *dres = NULL, hres = n;
  *out = n;
  if (n == 0)
    return cudaSuccess;
  bool aligned = ((uintptr_t)a % 8 == 0) && ((uintptr_t)b % 8 == 0);
  size_t words = aligned ? n / 8 : 0, tail = n - words * 8;
  unsigned blocks = bs_cu_blocks(words > tail ? words : tail);
  cudaError_t err = cudaMallocAsync((void **)&dres, sizeof *dres, s);
  if (err == cudaSuccess)
    err = cudaMemcpyAsync(dres, &hres, sizeof hres, cudaMemcpyHostToDevice, s);
  if (err == cudaSuccess) {
    first_diff_kernel<<<blocks, BS_CU_THREADS, 0, s>>>(
        (const uint8_t *)a, (const uint8_t *)b, words, n, dres);
    err = cudaGetLastError();
  }
  if (err == cudaSuccess)
    err = cudaMemcpyAsync(&hres, dres, sizeof hres, cudaMemcpyDeviceToHost, s);
  if (dres)
    cudaFreeAsync(dres, s);
  cudaError_t serr = cudaStreamSynchronize(s);
  if (err == cudaSuccess)
    err = serr;
  if (err == cudaSuccess)
    *out = (size_t)hres;
  return err;
}
