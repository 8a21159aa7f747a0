/* Deterministic gradients and the counter-based hash behind them. */
#include "bs_kernel_elem.h"

float bs_k_grad_hash_unit(uint64_t seed, uint64_t a, uint64_t b) {
  return bs_ke_hash_unit(seed, a, b);
}

BS_K_WIDE void bs_k_grad_hash_units(float *out, size_t n, uint64_t seed,
                                    uint64_t a, uint64_t b) {
  for (size_t j = 0; j < n; j++)
    out[j] = bs_ke_hash_unit(seed, a, b + j);
}

BS_K_WIDE void bs_k_grad(float *grad, const uint16_t *param, size_t n,
                         uint64_t base, uint64_t seed, int rank, int step) {
  for (size_t i = 0; i < n; i++)
    grad[i] = bs_ke_grad(param[i], base + i, seed, rank, step);
}
