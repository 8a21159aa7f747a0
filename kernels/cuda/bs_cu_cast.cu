/* CUDA mirror of kernels/bs_k_cast.c. The cast is memory-bound (4 B read, 2 B
 * written per element), so it moves E elements a thread: 16-byte loads of
 * the fp32 source, one 16-byte (E = 8) or 8-byte (E = 4) store of the bf16
 * result. A bucket's slice starts wherever the bucket does, so the first
 * elements up to dst's vector boundary (the head) and the last ones (the
 * tail) go one a thread in the same launch, and the middle is vectorised
 * whenever the source is then 16-byte aligned too. The per-element rounding
 * is the shared bs_ke_f32_to_bf16, so the bits are the host's. */
#include <stdint.h>

#include "bs_cu_grid.cuh"
#include "bs_kernel_elem.h"
#include "bs_kernels_cuda.h"

static __device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  return (uint32_t)bs_ke_f32_to_bf16(lo) |
         ((uint32_t)bs_ke_f32_to_bf16(hi) << 16);
}

/* E elements at vector-aligned dst and 16-byte aligned src. */
template <int E>
static __device__ __forceinline__ void cast_vec(uint16_t *dst,
                                                const float *src);

template <>
__device__ __forceinline__ void cast_vec<8>(uint16_t *dst, const float *src) {
  float4 a = ((const float4 *)src)[0], b = ((const float4 *)src)[1];
  *(uint4 *)dst = make_uint4(pack2(a.x, a.y), pack2(a.z, a.w), pack2(b.x, b.y),
                             pack2(b.z, b.w));
}

template <>
__device__ __forceinline__ void cast_vec<4>(uint16_t *dst, const float *src) {
  float4 f = *(const float4 *)src;
  *(uint2 *)dst = make_uint2(pack2(f.x, f.y), pack2(f.z, f.w));
}

template <>
__device__ __forceinline__ void cast_vec<1>(uint16_t *dst, const float *src) {
  *dst = bs_ke_f32_to_bf16(*src);
}

/* Elements [0, head) and [head + E * nvec, head + E * nvec + tail) are the
 * edges: thread t casts edge element t. */
template <int E>
static __global__ void cast_kernel(uint16_t *dst, const float *src, size_t head,
                                   size_t nvec, size_t tail) {
  BS_CU_FOR_EACH(i, nvec)
  cast_vec<E>(dst + head + E * i, src + head + E * i);
  size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t < head + tail) {
    size_t j = t < head ? t : head + E * nvec + (t - head);
    dst[j] = bs_ke_f32_to_bf16(src[j]);
  }
}

/* Launches the E-wide kernel when the source is 16-byte aligned once dst
 * is at its vector boundary; false when it is not. E = 1: one element a
 * thread, no edges (they are at most E - 1 elements each). */
template <int E>
static bool launch(uint16_t *dst, const float *src, size_t n, cudaStream_t s) {
  const uintptr_t w = 2 * E; /* bytes of one bf16 vector */
  size_t head = (size_t)((w - (uintptr_t)dst % w) % w) / 2;
  head = head < n ? head : n;
  if (E > 1 && ((uintptr_t)dst % 2 || (uintptr_t)(src + head) % 16))
    return false;
  size_t nvec = (n - head) / E;
  size_t tail = n - head - E * nvec;
  size_t threads = nvec > head + tail ? nvec : head + tail;
  cast_kernel<E><<<bs_cu_blocks(threads), BS_CU_THREADS, 0, s>>>(dst, src, head,
                                                                 nvec, tail);
  return true;
}

extern "C" int bs_cu_cast_f32_bf16(uint16_t *dst, const float *src, size_t n,
                                   void *stream) {
  if (n == 0)
    return cudaSuccess;
  cudaStream_t s = BS_CU_STREAM(stream);
  if (!launch<8>(dst, src, n, s) && !launch<4>(dst, src, n, s))
    launch<1>(dst, src, n, s);
  return cudaGetLastError();
}
