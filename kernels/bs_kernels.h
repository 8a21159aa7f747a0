/* Element kernels. Host versions live in kernels/ (.c); the CUDA versions in
 * kernels/cuda/ (.cu) mirror them one for one and must agree bit for bit, so
 * every kernel is written as a pure per-element function of its inputs
 * (no reductions whose order could differ, no fused multiply-add). */
#ifndef BS_KERNELS_H
#define BS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* fp32 -> bf16, round to nearest even on the upper 16 bits, identical to
 * c10::detail::round_to_nearest_even (PyTorch's scalar cast): every NaN,
 * either sign, signalling or quiet, becomes the quiet NaN 0x7FC0. */
uint16_t bs_k_cast_f32_to_bf16(float x);
float bs_k_cast_bf16_to_f32(uint16_t x);
void bs_k_cast_f32_bf16(uint16_t *dst, const float *src, size_t n);

/* Adam hyper-parameters; bias corrections are computed once per step on the
 * host (in double) so the device kernel needs no powf. The update is AdamW
 * (decoupled weight decay) as apex FusedAdam computes it for Megatron:
 * p -= lr * ((m/bc1) / (sqrt(v/bc2) + eps) + wd * p). step < 1 counts as 1. */
typedef struct bs_adam_hp {
  float lr, beta1, beta2, eps, weight_decay;
  float bias_corr1; /* 1 - beta1^step */
  float bias_corr2; /* 1 - beta2^step */
} bs_adam_hp;
bs_adam_hp bs_k_adam_hp_make(float lr, float beta1, float beta2, float eps,
                             float weight_decay, int step);
void bs_k_adam(float *param, float *m, float *v, const float *grad, size_t n,
               const bs_adam_hp *hp);

/* Deterministic gradient of a quadratic loss toward a seeded target plus
 * seeded noise: grad[i] = (bf16(param[i]) - target(seed, base+i))
 *                          + noise(seed, rank, step, base+i).
 * base is the global element index of param[0], so any slice of a buffer
 * gives the same values as the whole. */
void bs_k_grad(float *grad, const uint16_t *param, size_t n, uint64_t base,
               uint64_t seed, int rank, int step);
/* The same target/noise as floats in [-1, 1): used for initial weights too. */
float bs_k_grad_hash_unit(uint64_t seed, uint64_t a, uint64_t b);
/* out[j] = bs_k_grad_hash_unit(seed, a, b + j) for j < n, in one loop (a
 * model's initial values: a call an element was 3% of a large world). */
void bs_k_grad_hash_units(float *out, size_t n, uint64_t seed, uint64_t a,
                          uint64_t b);

/* Flips bit `bit` (counted from bit 0 of byte 0) of the buffer; `bit` is
 * taken modulo nbytes*8 so any value flips a bit inside it (nbytes == 0:
 * nothing). */
void bs_k_bitflip(void *buf, size_t nbytes, uint64_t bit);

/* Index of the first differing byte, or n when equal. */
size_t bs_k_first_diff(const void *a, const void *b, size_t n);

/* Fills with a deterministic garbage pattern (what a resume without backup
 * leaves behind: not zeroes, and different for each seed). */
void bs_k_poison(void *buf, size_t nbytes, uint64_t seed);
/* The same pattern from its byte `from` on: buf[i] is the byte from + i of
 * bs_k_poison's fill, so a part of a buffer gets the bytes a whole fill
 * would leave there. */
void bs_k_poison_from(void *buf, size_t nbytes, uint64_t seed, uint64_t from);

#endif
