/* The poison fill: deterministic garbage that a resume without backup
 * leaves behind. */
#include "bs_kernel_elem.h"

BS_K_WIDE void bs_k_poison_from(void *buf, size_t nbytes, uint64_t seed,
                                uint64_t from) {
  uint8_t *p = buf;
  size_t i = 0;
  /* Bytes up to a word of the pattern, whole words little-endian (memcpy:
   * buf may be unaligned), then the tail; all give byte i =
   * bs_ke_poison_byte(seed, from + i). */
  for (; i < nbytes && (from + i) % 8 != 0; i++)
    p[i] = bs_ke_poison_byte(seed, from + i);
  for (; nbytes - i >= 8; i += 8) {
    uint64_t x = bs_ke_poison_word(seed, (from + i) / 8);
    uint8_t le[8];
    for (int k = 0; k < 8; k++)
      le[k] = (uint8_t)(x >> (8 * k));
    memcpy(p + i, le, 8);
  }
  for (; i < nbytes; i++)
    p[i] = bs_ke_poison_byte(seed, from + i);
}

void bs_k_poison(void *buf, size_t nbytes, uint64_t seed) {
  bs_k_poison_from(buf, nbytes, seed, 0);
}
