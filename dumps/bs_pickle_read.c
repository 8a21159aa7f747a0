/* The pickle reader: a stack machine over the opcodes of bs_pickle.h and no
 * other, making the document's values directly (bs_dval.h: one arena, the
 * strings interned, at most one value per opcode). The memo shares values
 * (APPENDs and SETITEMs after a BINPUT show through a later BINGET, as in
 * Python). bs_pickle_read copies the result out into a bs_json tree, which
 * bounds nesting (a cycle is refused, not followed) and the number of
 * values (sharing cannot blow up); the dump reader reads the document to
 * a fixed depth. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_pickle.h"
#include "bs_vec.h"

enum { MAX_MARKS = BS_JSON_MAX_DEPTH };

typedef struct reader {
  const unsigned char *p;
  size_t len, pos, at; /* at: the offset of the opcode being run */
  unsigned char opc;
  bs_strpool *pool;
  bs_dval_doc *doc;
  size_t nvals; /* values made */
  bs_dval **stack;
  size_t nstack, capstack;
  size_t marks[MAX_MARKS];
  int nmarks;
  bs_dval **memo;
  size_t nmemo, capmemo;
} reader;

/* The opcodes a reader may meet, named for the error message. */
static const char *op_name(unsigned char c) {
  static const struct {
    unsigned char c;
    const char *name;
  } names[] = {
      {'(', "MARK"},
      {'.', "STOP"},
      {'0', "POP"},
      {'1', "POP_MARK"},
      {'2', "DUP"},
      {'F', "FLOAT"},
      {'I', "INT"},
      {'J', "BININT"},
      {'K', "BININT1"},
      {'L', "LONG"},
      {'M', "BININT2"},
      {'N', "NONE"},
      {'P', "PERSID"},
      {'Q', "BINPERSID"},
      {'R', "REDUCE"},
      {'S', "STRING"},
      {'T', "BINSTRING"},
      {'U', "SHORT_BINSTRING"},
      {'V', "UNICODE"},
      {'X', "BINUNICODE"},
      {'a', "APPEND"},
      {'b', "BUILD"},
      {'c', "GLOBAL"},
      {'d', "DICT"},
      {'}', "EMPTY_DICT"},
      {'e', "APPENDS"},
      {'g', "GET"},
      {'h', "BINGET"},
      {'i', "INST"},
      {'j', "LONG_BINGET"},
      {'l', "LIST"},
      {']', "EMPTY_LIST"},
      {'o', "OBJ"},
      {'p', "PUT"},
      {'q', "BINPUT"},
      {'r', "LONG_BINPUT"},
      {'s', "SETITEM"},
      {'t', "TUPLE"},
      {')', "EMPTY_TUPLE"},
      {'u', "SETITEMS"},
      {'G', "BINFLOAT"},
      {0x80, "PROTO"},
      {0x81, "NEWOBJ"},
      {0x82, "EXT1"},
      {0x83, "EXT2"},
      {0x84, "EXT4"},
      {0x85, "TUPLE1"},
      {0x86, "TUPLE2"},
      {0x87, "TUPLE3"},
      {0x88, "NEWTRUE"},
      {0x89, "NEWFALSE"},
      {0x8a, "LONG1"},
      {0x8b, "LONG4"},
      {'B', "BINBYTES"},
      {'C', "SHORT_BINBYTES"},
      {0x8c, "SHORT_BINUNICODE"},
      {0x8d, "BINUNICODE8"},
      {0x8e, "BINBYTES8"},
      {0x8f, "EMPTY_SET"},
      {0x90, "ADDITEMS"},
      {0x91, "FROZENSET"},
      {0x92, "NEWOBJ_EX"},
      {0x93, "STACK_GLOBAL"},
      {0x94, "MEMOIZE"},
      {0x95, "FRAME"},
      {0x96, "BYTEARRAY8"},
      {0x97, "NEXT_BUFFER"},
      {0x98, "READONLY_BUFFER"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].c == c)
      return names[i].name;
  return "an unknown opcode";
}

static bs_status bad(const reader *r, const char *what) {
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "pickle: %s (0x%02x) at offset %zu: %s", op_name(r->opc),
                     r->opc, r->at, what);
}

static bs_status nomem(void) {
  return bs_err_fail(BS_ERR_NOMEM, NULL, "pickle: out of memory");
}

static bs_dval *make(reader *r, bs_dval_kind k) {
  bs_dval *v = bs_dval_new(r->doc, k);
  r->nvals += v != NULL;
  return v;
}

static bs_status push(reader *r, bs_dval *v) {
  if (!v)
    return nomem();
  if (!bs_vec_grow(&r->stack, &r->capstack, r->nstack + 1, sizeof *r->stack))
    return nomem();
  r->stack[r->nstack++] = v;
  return BS_OK;
}

/* The n bytes of the opcode's argument. */
static const unsigned char *arg(reader *r, size_t n) {
  if (r->len - r->pos < n)
    return NULL;
  const unsigned char *a = r->p + r->pos;
  r->pos += n;
  return a;
}

static uint64_t le(const unsigned char *a, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++)
    v |= (uint64_t)a[i] << (8 * i);
  return v;
}

/* An unsigned little-endian argument of n bytes. */
static bs_status uarg(reader *r, size_t n, uint64_t *out) {
  const unsigned char *a = arg(r, n);
  *out = 0;
  if (!a)
    return bad(r, "truncated");
  *out = le(a, n);
  return BS_OK;
}

/* A width-byte length, then that many bytes (at most max: over it, what
 * says why). */
static const unsigned char *sized(reader *r, size_t width, uint64_t max,
                                  const char *over, uint64_t *n,
                                  bs_status *st) {
  const unsigned char *a = NULL;
  *st = uarg(r, width, n);
  if (*st == BS_OK && *n > max)
    *st = bad(r, over);
  if (*st == BS_OK && !(a = arg(r, (size_t)*n)))
    *st = bad(r, "truncated");
  return a;
}

static bs_status push_int(reader *r, int64_t i) {
  bs_dval *v = make(r, BS_DV_INT);
  if (v)
    v->i = i;
  return push(r, v);
}

/* LONG1/LONG4: two's complement, little-endian, at most 64 bits here. */
static bs_status long_int(reader *r, size_t width) {
  uint64_t n = 0;
  bs_status st = BS_OK;
  const unsigned char *a =
      sized(r, width, 8, "an integer wider than 64 bits", &n, &st);
  if (!a)
    return st;
  uint64_t u = le(a, (size_t)n);
  if (n > 0 && n < 8 && (a[n - 1] & 0x80))
    u |= ~(uint64_t)0 << (8 * n); /* sign-extend */
  return push_int(r, (int64_t)u);
}

static bs_status push_float(reader *r) {
  const unsigned char *a = arg(r, 8);
  if (!a)
    return bad(r, "truncated");
  uint64_t u = 0;
  for (int i = 0; i < 8; i++)
    u = u << 8 | a[i]; /* big-endian */
  bs_dval *v = make(r, BS_DV_FLOAT);
  if (v)
    memcpy(&v->f, &u, sizeof v->f);
  return push(r, v);
}

static bs_status push_str(reader *r, size_t width) {
  uint64_t n = 0;
  bs_status st = BS_OK;
  const unsigned char *a =
      sized(r, width, r->len, "a length past the end", &n, &st);
  if (!a)
    return st;
  if (memchr(a, 0, (size_t)n))
    return bad(r, "a string with a NUL byte");
  bs_dval *v = make(r, BS_DV_STR);
  if (v && !(v->s = bs_strpool_getn(r->pool, (const char *)a, (size_t)n)))
    v = NULL;
  return push(r, v);
}

static bs_dval *top(reader *r, size_t k) {
  size_t base = r->nmarks ? r->marks[r->nmarks - 1] : 0;
  return r->nstack - base > k ? r->stack[r->nstack - 1 - k] : NULL;
}

/* Appends the n values above index from to container c. */
static bs_status add_kids(reader *r, bs_dval *c, size_t from) {
  size_t n = r->nstack - from;
  if (!bs_dval_reserve(r->doc, c, c->n + n))
    return nomem();
  if (n) /* an empty list has no kids to copy to (NULL: no memcpy) */
    memcpy(c->kids + c->n, r->stack + from, n * sizeof *c->kids);
  c->n += n;
  r->nstack = from;
  return BS_OK;
}

/* The stack index of the innermost mark, which is popped. */
static bs_status pop_mark(reader *r, size_t *from) {
  if (r->nmarks == 0)
    return bad(r, "no MARK before it");
  *from = r->marks[--r->nmarks];
  return BS_OK;
}

/* APPEND(S), SETITEM(S): into the container under the values. */
static bs_status fill(reader *r, bool marked, size_t nvals, bs_dval_kind want) {
  bs_status st = BS_OK;
  size_t from = r->nstack >= nvals ? r->nstack - nvals : 0;
  if (marked && (st = pop_mark(r, &from)) != BS_OK)
    return st;
  size_t floor = r->nmarks ? r->marks[r->nmarks - 1] : 0;
  if (from <= floor || (!marked && r->nstack < floor + nvals + 1))
    return bad(r, "no container under the values");
  bs_dval *c = r->stack[from - 1];
  if (c->kind != want)
    return bad(r, want == BS_DV_DICT ? "the container is not a dict"
                                     : "the container is not a list");
  if (want == BS_DV_DICT && (r->nstack - from) % 2)
    return bad(r, "a key without a value");
  return add_kids(r, c, from);
}

/* TUPLE, LIST, DICT (from the mark) and TUPLE1..3 (the top n). */
static bs_status build(reader *r, bs_dval_kind k, bool marked, size_t n) {
  bs_status st = BS_OK;
  size_t from = r->nstack - n;
  if (marked && (st = pop_mark(r, &from)) != BS_OK)
    return st;
  if (!marked && !top(r, n - 1))
    return bad(r, "too few values on the stack");
  if (k == BS_DV_DICT && (r->nstack - from) % 2)
    return bad(r, "a key without a value");
  bs_dval *c = make(r, k);
  if (!c)
    return push(r, NULL);
  if ((st = add_kids(r, c, from)) != BS_OK)
    return st;
  return push(r, c);
}

static bs_status put_memo(reader *r, uint64_t idx) {
  bs_dval *v = top(r, 0);
  if (!v)
    return bad(r, "nothing to memoize");
  if (idx > r->nvals)
    return bad(r, "a memo index beyond the values read");
  if (idx >= r->nmemo) {
    if (!bs_vec_grow(&r->memo, &r->capmemo, (size_t)idx + 1, sizeof *r->memo))
      return nomem();
    memset(r->memo + r->nmemo, 0,
           ((size_t)idx + 1 - r->nmemo) * sizeof *r->memo);
    r->nmemo = (size_t)idx + 1;
  }
  r->memo[idx] = v;
  return BS_OK;
}

static bs_status get_memo(reader *r, uint64_t idx) {
  if (idx >= r->nmemo || !r->memo[idx])
    return bad(r, "a memo index that was never put");
  return push(r, r->memo[idx]);
}

static bs_status memo_op(reader *r, size_t width, bool put) {
  uint64_t idx = 0;
  bs_status st = uarg(r, width, &idx);
  if (st != BS_OK)
    return st;
  return put ? put_memo(r, idx) : get_memo(r, idx);
}

static bs_status proto(reader *r) {
  uint64_t v = 0;
  bs_status st = uarg(r, 1, &v);
  if (st == BS_OK && (r->at != 0 || v < 2 || v > 5))
    st = bad(r, r->at ? "PROTO after the start" : "a protocol other than 2-5");
  return st;
}

/* FRAME: the whole pickle is in memory; its length only has to fit. */
static bs_status frame(reader *r) {
  uint64_t n = 0;
  bs_status st = uarg(r, 8, &n);
  if (st == BS_OK && n > r->len - r->pos)
    st = bad(r, "a frame longer than the rest of the pickle");
  return st;
}

static bs_status mark(reader *r) {
  if (r->nmarks == MAX_MARKS)
    return bad(r, "more than 64 nested MARKs");
  r->marks[r->nmarks++] = r->nstack;
  return BS_OK;
}

static bs_status simple(reader *r, bs_dval_kind k, bool b) {
  bs_dval *v = make(r, k);
  if (v)
    v->b = b;
  return push(r, v);
}

/* One opcode; *stop once STOP was read. */
static bs_status step(reader *r, bool *stop) {
  uint64_t u = 0;
  bs_status st = BS_OK;
  switch (r->opc) {
  case 0x80:
    return proto(r);
  case 0x95:
    return frame(r);
  case '(':
    return mark(r);
  case '.':
    *stop = true;
    return BS_OK;
  case 'N':
    return simple(r, BS_DV_NONE, false);
  case 0x88:
    return simple(r, BS_DV_BOOL, true);
  case 0x89:
    return simple(r, BS_DV_BOOL, false);
  case 'K':
    if ((st = uarg(r, 1, &u)) == BS_OK)
      st = push_int(r, (int64_t)u);
    return st;
  case 'M':
    if ((st = uarg(r, 2, &u)) == BS_OK)
      st = push_int(r, (int64_t)u);
    return st;
  case 'J':
    if ((st = uarg(r, 4, &u)) == BS_OK)
      st = push_int(r, (int64_t)(int32_t)(uint32_t)u);
    return st;
  case 0x8a:
    return long_int(r, 1);
  case 0x8b:
    return long_int(r, 4);
  case 'G':
    return push_float(r);
  case 0x8c:
    return push_str(r, 1);
  case 'X':
    return push_str(r, 4);
  case 0x8d:
    return push_str(r, 8);
  case '}':
    return simple(r, BS_DV_DICT, false);
  case ']':
    return simple(r, BS_DV_LIST, false);
  case ')':
    return simple(r, BS_DV_TUPLE, false);
  case 'd':
    return build(r, BS_DV_DICT, true, 0);
  case 'l':
    return build(r, BS_DV_LIST, true, 0);
  case 't':
    return build(r, BS_DV_TUPLE, true, 0);
  case 0x85:
  case 0x86:
  case 0x87:
    return build(r, BS_DV_TUPLE, false, (size_t)(r->opc - 0x84));
  case 'a':
    return fill(r, false, 1, BS_DV_LIST);
  case 'e':
    return fill(r, true, 0, BS_DV_LIST);
  case 's':
    return fill(r, false, 2, BS_DV_DICT);
  case 'u':
    return fill(r, true, 0, BS_DV_DICT);
  case 'q':
    return memo_op(r, 1, true);
  case 'r':
    return memo_op(r, 4, true);
  case 0x94:
    return put_memo(r, r->nmemo);
  case 'h':
    return memo_op(r, 1, false);
  case 'j':
    return memo_op(r, 4, false);
  default:
    return bad(r, "not an opcode of a dump (only dicts, lists, tuples, "
                  "strings, numbers, None and bools)");
  }
}

static void reader_free(reader *r) {
  free(r->stack);
  free(r->memo);
}

static bs_status run(reader *r) {
  bs_status st = BS_OK;
  bool stop = false;
  while (!stop) {
    if (r->pos >= r->len)
      return bs_err_fail(BS_ERR_INVALID, NULL,
                         "pickle: no STOP before the end (offset %zu)", r->pos);
    r->at = r->pos;
    r->opc = r->p[r->pos++];
    if (r->at == 0 && r->opc != 0x80)
      return bad(r, "not a pickle of protocol 2 or later (no PROTO first)");
    BS_CHECK(step(r, &stop));
  }
  if (r->nstack != 1 || r->nmarks)
    return bad(r, "the stack does not hold exactly one value");
  if (r->pos != r->len)
    return bad(r, "bytes after it");
out:
  return st;
}

bs_status bs_pickle_read_doc(const void *data, size_t n, bs_strpool *pool,
                             bs_dval_doc *doc, bs_dval **root) {
  bs_status st = BS_OK;
  reader r = {.p = data, .len = n, .pool = pool, .doc = doc};
  *root = NULL;
  if (n > BS_PICKLE_MAX_BYTES)
    BS_FAIL(BS_ERR_INVALID, NULL, "pickle: %zu bytes, more than %zu", n,
            BS_PICKLE_MAX_BYTES);
  BS_CHECK(run(&r));
  *root = r.stack[0];
out:
  reader_free(&r);
  return st;
}

bs_status bs_pickle_read(const void *data, size_t n, bs_json *out) {
  bs_status st = BS_OK;
  bs_dval_doc doc = {0};
  bs_dval *root = NULL;
  bs_strpool *pool = bs_strpool_create();
  memset(out, 0, sizeof *out);
  if (!pool)
    BS_FAIL(BS_ERR_NOMEM, NULL, "pickle: out of memory");
  BS_CHECK(bs_pickle_read_doc(data, n, pool, &doc, &root));
  st = bs_dval_to_json(root, 2 * n + 1024, out);
out:
  bs_dval_doc_free(&doc);
  bs_strpool_destroy(pool);
  return st;
}
