/* A bs_json tree as a protocol-2 pickle: the opcodes Python's own pickler
 * uses for these types, no memo (nothing is shared). Bounded by the tree,
 * whose nesting bs_json already limits. */
#include <stdint.h>
#include <string.h>

#include "bs_pickle.h"

static void op(bs_buf *b, unsigned char c) {
  bs_buf_append(b, (const char *)&c, 1);
}

/* n bytes of v, little-endian. */
static void le(bs_buf *b, uint64_t v, int n) {
  for (int i = 0; i < n; i++)
    op(b, (unsigned char)(v >> (8 * i)));
}

static void put_int(bs_buf *b, int64_t v) {
  if (v >= 0 && v < 256) {
    op(b, 'K'); /* BININT1 */
    le(b, (uint64_t)v, 1);
  } else if (v >= 0 && v < 65536) {
    op(b, 'M'); /* BININT2 */
    le(b, (uint64_t)v, 2);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    op(b, 'J'); /* BININT, signed */
    le(b, (uint64_t)v, 4);
  } else {
    /* LONG1: the shortest two's complement that keeps the sign. */
    int n = 8;
    while (n > 1 &&
           ((v >> (8 * (n - 1) - 1)) == 0 || (v >> (8 * (n - 1) - 1)) == -1))
      n--;
    op(b, 0x8a);
    le(b, (uint64_t)n, 1);
    le(b, (uint64_t)v, n);
  }
}

static void put_float(bs_buf *b, double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  op(b, 'G'); /* BINFLOAT: big-endian */
  for (int i = 7; i >= 0; i--)
    op(b, (unsigned char)(u >> (8 * i)));
}

static void put_str(bs_buf *b, const char *s) {
  size_t n = strlen(s);
  op(b, 'X'); /* BINUNICODE: 4-byte length, UTF-8 */
  le(b, (uint64_t)n, 4);
  bs_buf_append(b, s, n);
}

static bool listed(const char *key, const char *const *keys) {
  for (; key && keys && *keys; keys++)
    if (strcmp(*keys, key) == 0)
      return true;
  return false;
}

static void put_value(bs_buf *b, const bs_json *v, const char *key,
                      const char *const *tuple_keys);

static void put_array(bs_buf *b, const bs_json *v, bool tuple,
                      const char *const *tuple_keys) {
  if (tuple && v->n == 0) {
    op(b, ')'); /* EMPTY_TUPLE */
    return;
  }
  if (tuple && v->n <= 3) {
    for (size_t i = 0; i < v->n; i++)
      put_value(b, &v->items[i], NULL, tuple_keys);
    op(b, (unsigned char)(0x84 + v->n)); /* TUPLE1..3 */
    return;
  }
  if (!tuple)
    op(b, ']'); /* EMPTY_LIST */
  if (v->n == 0)
    return;
  op(b, '('); /* MARK */
  for (size_t i = 0; i < v->n; i++)
    put_value(b, &v->items[i], NULL, tuple_keys);
  op(b, tuple ? 't' : 'e'); /* TUPLE, APPENDS */
}

static void put_value(bs_buf *b, const bs_json *v, const char *key,
                      const char *const *tuple_keys) {
  switch (v->type) {
  case BS_JNULL:
    op(b, 'N');
    break;
  case BS_JBOOL:
    op(b, v->b ? 0x88 : 0x89); /* NEWTRUE, NEWFALSE */
    break;
  case BS_JNUM:
    if (v->integral)
      put_int(b, v->i);
    else
      put_float(b, v->num);
    break;
  case BS_JSTR:
    put_str(b, v->str);
    break;
  case BS_JARR:
    put_array(b, v, listed(key, tuple_keys), tuple_keys);
    break;
  case BS_JOBJ:
    op(b, '}'); /* EMPTY_DICT */
    if (v->n == 0)
      break;
    op(b, '(');
    for (size_t i = 0; i < v->n; i++) {
      put_str(b, v->keys[i]);
      put_value(b, &v->items[i], v->keys[i], tuple_keys);
    }
    op(b, 'u'); /* SETITEMS */
    break;
  }
}

void bs_pickle_write(bs_buf *b, const bs_json *v,
                     const char *const *tuple_keys) {
  op(b, 0x80); /* PROTO 2 */
  op(b, 2);
  put_value(b, v, NULL, tuple_keys);
  op(b, '.'); /* STOP */
}
