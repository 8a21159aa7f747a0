/* First differing byte: memcmp finds the differing chunk fast, a byte scan
 * then pins it down. */
#include "bs_kernels.h"

#include <string.h>

enum { CHUNK = 4096 };

size_t bs_k_first_diff(const void *a, const void *b, size_t n) {
  const uint8_t *x = a, *y = b;
  for (size_t off = 0; off < n; off += CHUNK) {
    size_t len = n - off < CHUNK ? n - off : CHUNK;
    if (memcmp(x + off, y + off, len) == 0)
      continue;
    for (size_t i = off; i < off + len; i++)
      if (x[i] != y[i])
        return i;
  }
  return n;
}
