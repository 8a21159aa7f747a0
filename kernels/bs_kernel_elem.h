/* The per-element math of every kernel, shared verbatim by the host loops
 * (kernels/, .c) and the CUDA kernels (kernels/cuda/, .cu). One definition
 * compiled twice is what makes host and device agree bit for bit: both
 * sides build with no FMA contraction and IEEE-rounded division and sqrt,
 * and every function here is a pure function of its arguments.
 * Valid C11 and CUDA C++; not part of the public API. */
#ifndef BS_KERNEL_ELEM_H
#define BS_KERNEL_ELEM_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "bs_kernels.h"

#ifdef __CUDACC__
#define BS_HD static __host__ __device__ __forceinline__
#else
#define BS_HD static inline
#endif

/* A host loop of 64-bit multiplies built twice, picked at load time: SSE2
 * has no 64-bit vector multiply, AVX-512 does (the splitmix64 of the
 * gradients and the poison: 5% of a large world). The same integer math
 * either way, so the same bits. gcc only: under TSan the runtime is not
 * up when the loader resolves the choice, and clang 14 leaves the chooser
 * unnamed for other files. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) &&         \
    !defined(__CUDACC__) && !defined(__SANITIZE_THREAD__)
#define BS_K_WIDE __attribute__((target_clones("default", "arch=x86-64-v4")))
#else
#define BS_K_WIDE
#endif

BS_HD uint32_t bs_ke_f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

BS_HD float bs_ke_bits_f32(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* c10::detail::round_to_nearest_even: every NaN becomes 0x7FC0, the
 * positive quiet NaN, whatever its sign and payload. The NaN test comes
 * first because the rounding bias would carry a small-payload NaN into
 * the exponent and return an infinity. */
BS_HD uint16_t bs_ke_f32_to_bf16(float x) {
  if (x != x)
    return 0x7FC0u;
  uint32_t u = bs_ke_f32_bits(x);
  uint32_t bias = ((u >> 16) & 1u) + 0x7FFFu;
  return (uint16_t)((u + bias) >> 16);
}

BS_HD float bs_ke_bf16_to_f32(uint16_t b) {
  return bs_ke_bits_f32((uint32_t)b << 16);
}

/* x86 propagates an input NaN's payload through arithmetic, CUDA returns its
 * canonical NaN: results that may be NaN are canonicalised so both agree. */
BS_HD float bs_ke_canon(float x) {
  return x != x ? bs_ke_bits_f32(0x7FC00000u) : x;
}

/* AdamW with decoupled weight decay, in the form of apex FusedAdam
 * (adam_w_mode), which Megatron's distributed optimizer runs:
 *   m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g
 *   update = (m/bc1) / (sqrt(v/bc2) + eps) + wd*p;  p -= lr*update
 * One statement per rounding so both compilers see the same order. */
BS_HD void bs_ke_adam(float *p, float *m, float *v, float g,
                      const bs_adam_hp *hp) {
  float m1 = hp->beta1 * *m;
  float m2 = (1.0f - hp->beta1) * g;
  float mn = m1 + m2;
  float v1 = hp->beta2 * *v;
  float gg = g * g;
  float v2 = (1.0f - hp->beta2) * gg;
  float vn = v1 + v2;
  float mhat = mn / hp->bias_corr1;
  float vhat = vn / hp->bias_corr2;
  float denom = sqrtf(vhat) + hp->eps;
  float step = mhat / denom;
  float decay = hp->weight_decay * *p;
  float update = step + decay;
  float delta = hp->lr * update;
  *p = bs_ke_canon(*p - delta);
  *m = bs_ke_canon(mn);
  *v = bs_ke_canon(vn);
}

BS_HD uint64_t bs_ke_splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* Counter-based: a pure function of (seed, a, b), so any element can be
 * computed alone, in any order, on either side. The top 24 bits become
 * k/2^23 - 1 exactly (every such value is a float), in [-1, 1). */
BS_HD float bs_ke_hash_unit(uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t h = bs_ke_splitmix64(seed);
  h = bs_ke_splitmix64(h ^ a);
  h = bs_ke_splitmix64(h ^ b);
  int32_t k = (int32_t)(h >> 40) - (1 << 23);
  return (float)k * (1.0f / 8388608.0f);
}

/* Domain keys keep the target and the noise streams apart for one seed. */
#define BS_KE_TARGET_KEY 0x7461726765747631ull /* "targetv1" */
#define BS_KE_NOISE_KEY 0x6E6F697365763121ull  /* "noisev1!" */
/* Noise amplitude: a power of two, so the scaling is exact. */
#define BS_KE_NOISE_SCALE 0.0625f

BS_HD float bs_ke_grad(uint16_t param, uint64_t idx, uint64_t seed, int rank,
                       int step) {
  uint64_t rs = ((uint64_t)(uint32_t)rank << 32) | (uint32_t)step;
  float target = bs_ke_hash_unit(seed, BS_KE_TARGET_KEY, idx);
  float noise = bs_ke_hash_unit(seed ^ BS_KE_NOISE_KEY, rs, idx);
  float diff = bs_ke_bf16_to_f32(param) - target;
  float scaled = noise * BS_KE_NOISE_SCALE;
  return bs_ke_canon(diff + scaled);
}

/* The poison pattern: byte j of a buffer is byte j%8 (little-endian) of
 * word j/8, so the pattern depends only on the seed and the offset. */
BS_HD uint64_t bs_ke_poison_word(uint64_t seed, uint64_t word) {
  return bs_ke_splitmix64(bs_ke_splitmix64(seed ^ 0x706F69736F6E2121ull) ^
                          word);
}

BS_HD uint8_t bs_ke_poison_byte(uint64_t seed, uint64_t j) {
  return (uint8_t)(bs_ke_poison_word(seed, j >> 3) >> (8 * (j & 7)));
}

#endif
