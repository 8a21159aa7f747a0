/* C-callable launchers of the CUDA kernels, one per host kernel of
 * bs_kernels.h (and the SM-driven copy, whose host mirror is memcpy), each
 * enqueued on `stream` (a cudaStream_t; NULL: the default stream). They
 * return a cudaError_t as int: 0 is success. Only first_diff waits for its
 * result; the others are asynchronous. */
#ifndef BS_KERNELS_CUDA_H
#define BS_KERNELS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "bs_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

int bs_cu_cast_f32_bf16(uint16_t *dst, const float *src, size_t n,
                        void *stream);
int bs_cu_adam(float *param, float *m, float *v, const float *grad, size_t n,
               const bs_adam_hp *hp, void *stream);
int bs_cu_grad(float *grad, const uint16_t *param, size_t n, uint64_t base,
               uint64_t seed, int rank, int step, void *stream);
int bs_cu_bitflip(void *buf, size_t nbytes, uint64_t bit, void *stream);
/* Synchronous: waits for the stream and stores the index in *out. */
int bs_cu_first_diff(const void *a, const void *b, size_t n, size_t *out,
                     void *stream);
int bs_cu_poison(void *buf, size_t nbytes, uint64_t seed, uint64_t from,
                 void *stream);
/* n bytes from src to dst through SM loads and stores (not the copy
 * engine): any alignment, any n; the ranges must not overlap. */
int bs_cu_copy(void *dst, const void *src, size_t n, void *stream);

#ifdef __cplusplus
}
#endif

#endif
