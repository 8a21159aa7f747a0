/* The poison fill: deterministic garbage that a resume without backup
 * leaves behind. */
#include "bs_kernel_elem.h"

void bs_k_poison(void *buf, size_t nbytes, uint64_t seed) {
  uint8_t *p = buf;
  size_t words = nbytes / 8;
  /* Whole words little-endian (memcpy: buf may be unaligned), then the
   * tail byte by byte; both give byte j = bs_ke_poison_byte(seed, j). */
  for (size_t w = 0; w < words; w++) {
    uint64_t x = bs_ke_poison_word(seed, w);
    uint8_t le[8];
    for (int k = 0; k < 8; k++)
      le[k] = (uint8_t)(x >> (8 * k));
    memcpy(p + 8 * w, le, 8);
  }
  for (size_t j = words * 8; j < nbytes; j++)
    p[j] = bs_ke_poison_byte(seed, j);
}
