#include "bs_vec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define VEC_FIRST 4

bool bs_vec_grow(void *items, size_t *cap, size_t need, size_t each) {
  size_t have = cap ? *cap : 0;
  if (cap && need <= have)
    return true;
  size_t want = have > SIZE_MAX / 2 ? need : 2 * have;
  want = !cap || want < need ? need : want;
  if (cap && want < VEC_FIRST)
    want = VEC_FIRST;
  if (each && want > SIZE_MAX / each)
    return false;
  void *p;
  memcpy(&p, items, sizeof p);
  size_t bytes = want * each;
  void *grown = realloc(p, bytes > 0 ? bytes : 1);
  if (!grown)
    return false;
  memcpy(items, &grown, sizeof grown);
  if (cap)
    *cap = want;
  return true;
}

bs_status bs_vec_reserve(void *items, size_t *cap, size_t need, size_t each,
                         const char *what) {
  if (bs_vec_grow(items, cap, need, each))
    return BS_OK;
  return bs_err_fail(BS_ERR_NOMEM, NULL, "%s: out of memory (%zu items)", what,
                     need);
}

bs_status bs_vec_append(void *items, size_t *n, size_t *cap, const void *src,
                        size_t m, size_t each, const char *what) {
  bs_status st = BS_OK;
  char *p;
  if (m == 0)
    return BS_OK;
  BS_CHECK(bs_vec_reserve(items, cap, *n + m, each, what));
  memcpy(&p, items, sizeof p);
  memcpy(p + *n * each, src, m * each);
  *n += m;
out:
  return st;
}

bs_status bs_vec_push(void *items, size_t *n, size_t *cap, const void *item,
                      size_t each, const char *what) {
  return bs_vec_append(items, n, cap, item, 1, each, what);
}
