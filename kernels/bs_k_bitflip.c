/* Single-bit corruption: what the restore/bitflip, backup/corrupt and
 * master/corrupt fault points inject. */
#include "bs_kernels.h"

void bs_k_bitflip(void *buf, size_t nbytes, uint64_t bit) {
  if (nbytes == 0)
    return;
  uint64_t at = bit % ((uint64_t)nbytes * 8);
  ((uint8_t *)buf)[at >> 3] ^= (uint8_t)(1u << (at & 7));
}
