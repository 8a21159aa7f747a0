#include "bs_pack.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void bs_pack_put(bs_buf *b, const void *p, size_t n) {
  if (n)
    bs_buf_append(b, p, n);
}

void bs_pack_put_size(bs_buf *b, size_t v) {
  uint64_t u = v;
  bs_pack_put(b, &u, sizeof u);
}

void bs_pack_put_array(bs_buf *b, const void *p, size_t n, size_t each) {
  bs_pack_put_size(b, n);
  bs_pack_put(b, p, n * each);
}

void bs_pack_put_str(bs_buf *b, const char *s) {
  bs_pack_put_array(b, s, s ? strlen(s) + 1 : 0, 1);
}

void bs_pack_put_strs(bs_buf *b, char *const *s, size_t n) {
  bs_pack_put_size(b, n);
  for (size_t i = 0; i < n; i++)
    bs_pack_put_str(b, s[i]);
}

bs_status bs_pack_take(bs_pack_cursor *c, void *dst, size_t n) {
  if ((size_t)(c->end - c->p) < n)
    return bs_err_fail(BS_ERR_INVALID, NULL, "%s: truncated", c->what);
  if (n)
    memcpy(dst, c->p, n);
  c->p += n;
  return BS_OK;
}

bs_status bs_pack_take_count(bs_pack_cursor *c, size_t each, size_t *out) {
  uint64_t v = 0;
  bs_status st = bs_pack_take(c, &v, sizeof v);
  if (st == BS_OK && each && v > (uint64_t)(c->end - c->p) / each)
    st = bs_err_fail(BS_ERR_INVALID, NULL, "%s: count %llu past its end",
                     c->what, (unsigned long long)v);
  *out = (size_t)v;
  return st;
}

bs_status bs_pack_take_array(bs_pack_cursor *c, size_t each, void **out,
                             size_t *n) {
  bs_status st = BS_OK;
  *out = NULL;
  BS_CHECK(bs_pack_take_count(c, each, n));
  if (*n && !(*out = malloc(*n * each)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: %zu items", c->what, *n);
  BS_CHECK(bs_pack_take(c, *out, *n * each));
out:
  return st;
}

bs_status bs_pack_take_str(bs_pack_cursor *c, char **out) {
  bs_status st = BS_OK;
  size_t n = 0;
  BS_CHECK(bs_pack_take_array(c, 1, (void **)out, &n));
  if (n && (*out)[n - 1] != '\0')
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: unterminated string", c->what);
out:
  return st;
}

bs_status bs_pack_take_strs(bs_pack_cursor *c, char ***out, size_t *n) {
  bs_status st = BS_OK;
  size_t m = 0;
  *out = NULL;
  /* Each string takes its count at least. */
  BS_CHECK(bs_pack_take_count(c, sizeof(uint64_t), &m));
  if (m && !(*out = calloc(m, sizeof **out)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: %zu strings", c->what, m);
  *n = m; /* the ones not read are NULL: the array frees whole */
  for (size_t i = 0; i < m; i++)
    BS_CHECK(bs_pack_take_str(c, &(*out)[i]));
out:
  return st;
}

bs_status bs_pack_end(const bs_pack_cursor *c) {
  if (c->p == c->end)
    return BS_OK;
  return bs_err_fail(BS_ERR_INVALID, NULL, "%s: %zu bytes past its end",
                     c->what, (size_t)(c->end - c->p));
}
