/* Dump values (bs_dval.h): a bump arena of blocks kept between documents,
 * the look-ups the model makes, and the ways to and from bs_json. */
#include "bs_dval.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_vec.h"

enum { BLOCK = 1 << 16, ALIGN = 16 };

/* n bytes of the arena (aligned), NULL when out of memory. */
static void *take(bs_dval_doc *doc, size_t n) {
  n = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
  while (doc->cur < doc->nblocks && doc->used + n > doc->sizes[doc->cur]) {
    doc->cur++;
    doc->used = 0;
  }
  if (doc->cur == doc->nblocks) {
    size_t size = n > BLOCK ? n : BLOCK;
    size_t need = doc->nblocks + 1;
    char *block = NULL;
    if (!bs_vec_grow(&doc->blocks, NULL, need, sizeof *doc->blocks) ||
        !bs_vec_grow(&doc->sizes, NULL, need, sizeof *doc->sizes) ||
        !(block = malloc(size)))
      return NULL;
    doc->blocks[doc->nblocks] = block;
    doc->sizes[doc->nblocks++] = size;
    doc->used = 0;
  }
  void *p = doc->blocks[doc->cur] + doc->used;
  doc->used += n;
  return p;
}

bs_dval *bs_dval_new(bs_dval_doc *doc, bs_dval_kind k) {
  bs_dval *v = take(doc, sizeof *v);
  if (v) {
    memset(v, 0, sizeof *v);
    v->kind = k;
  }
  return v;
}

/* Not bs_vec: the kids live in the arena, which frees nothing before
 * bs_dval_reset, so they are copied into a larger piece of it. */
bool bs_dval_reserve(bs_dval_doc *doc, bs_dval *c, size_t need) {
  if (need <= c->cap)
    return true;
  size_t cap = c->cap ? 2 * c->cap : 4;
  while (cap < need)
    cap *= 2;
  bs_dval **kids = take(doc, cap * sizeof *kids);
  if (!kids)
    return false;
  if (c->n)
    memcpy(kids, c->kids, c->n * sizeof *kids);
  c->kids = kids;
  c->cap = cap;
  return true;
}

void bs_dval_reset(bs_dval_doc *doc) {
  doc->cur = 0;
  doc->used = 0;
}

void bs_dval_doc_free(bs_dval_doc *doc) {
  for (size_t i = 0; i < doc->nblocks; i++)
    free(doc->blocks[i]);
  free(doc->blocks);
  free(doc->sizes);
  memset(doc, 0, sizeof *doc);
}

/* ---- reading ---- */

static bool array(const bs_dval *v) {
  return v && (v->kind == BS_DV_LIST || v->kind == BS_DV_TUPLE);
}

size_t bs_dval_len(const bs_dval *v) {
  if (v && v->kind == BS_DV_DICT)
    return v->n / 2;
  return array(v) ? v->n : 0;
}

const bs_dval *bs_dval_item(const bs_dval *v, size_t i) {
  return array(v) && i < v->n ? v->kids[i] : NULL;
}

const bs_dval *bs_dval_find(const bs_dval *v, const char *key) {
  for (size_t i = 0; v && v->kind == BS_DV_DICT && i + 1 < v->n; i += 2)
    if (v->kids[i]->kind == BS_DV_STR && v->kids[i]->s == key)
      return v->kids[i + 1];
  return NULL;
}

const bs_dval *bs_dval_get(const bs_dval *v, const char *key) {
  for (size_t i = 0; v && v->kind == BS_DV_DICT && i + 1 < v->n; i += 2)
    if (v->kids[i]->kind == BS_DV_STR && !strcmp(v->kids[i]->s, key))
      return v->kids[i + 1];
  return NULL;
}

const char *bs_dval_str(const bs_dval *v, const char *dflt) {
  return v && v->kind == BS_DV_STR ? v->s : dflt;
}

int64_t bs_dval_int(const bs_dval *v, int64_t dflt) {
  return v && v->kind == BS_DV_INT ? v->i : dflt;
}

bool bs_dval_num(const bs_dval *v, double *out) {
  if (v && v->kind == BS_DV_INT)
    *out = (double)v->i;
  else if (v && v->kind == BS_DV_FLOAT)
    *out = v->f;
  else
    return false;
  return true;
}

bool bs_dval_bool(const bs_dval *v, bool dflt) {
  return v && v->kind == BS_DV_BOOL ? v->b : dflt;
}

const char *bs_dval_key(const bs_dval *k, char *buf, size_t n) {
  if (k && k->kind == BS_DV_STR)
    return k->s;
  if (!k || k->kind != BS_DV_INT)
    return NULL;
  snprintf(buf, n, "%lld", (long long)k->i);
  return buf;
}

/* ---- from and to bs_json ---- */

static bs_status nomem(void) {
  return bs_err_fail(BS_ERR_NOMEM, NULL, "dump values: out of memory");
}

static bs_dval *str_of(const char *s, bs_strpool *pool, bs_dval_doc *doc) {
  bs_dval *v = bs_dval_new(doc, BS_DV_STR);
  if (v && !(v->s = bs_strpool_get(pool, s)))
    v = NULL;
  return v;
}

/* j's kids (an object's keys and values) into v. */
static bs_status kids_from_json(const bs_json *j, bs_strpool *pool,
                                bs_dval_doc *doc, bs_dval *v) {
  bs_status st = BS_OK;
  size_t per = j->type == BS_JOBJ ? 2 : 1;
  if (!bs_dval_reserve(doc, v, j->n * per))
    return nomem();
  for (size_t i = 0; i < j->n; i++) {
    if (per == 2 && !(v->kids[v->n++] = str_of(j->keys[i], pool, doc)))
      return nomem();
    BS_CHECK(bs_dval_from_json(&j->items[i], pool, doc, &v->kids[v->n]));
    v->n++;
  }
out:
  return st;
}

bs_status bs_dval_from_json(const bs_json *j, bs_strpool *pool,
                            bs_dval_doc *doc, bs_dval **out) {
  static const bs_dval_kind kinds[] = {
      [BS_JNULL] = BS_DV_NONE, [BS_JBOOL] = BS_DV_BOOL, [BS_JNUM] = BS_DV_INT,
      [BS_JSTR] = BS_DV_STR,   [BS_JARR] = BS_DV_LIST,  [BS_JOBJ] = BS_DV_DICT};
  bs_dval_kind k = kinds[j->type];
  if (j->type == BS_JNUM && !j->integral)
    k = BS_DV_FLOAT;
  bs_dval *v = k == BS_DV_STR ? str_of(j->str, pool, doc) : bs_dval_new(doc, k);
  if (!(*out = v))
    return nomem();
  v->b = j->b;
  v->i = j->i;
  v->f = j->num;
  return k == BS_DV_LIST || k == BS_DV_DICT ? kids_from_json(j, pool, doc, v)
                                            : BS_OK;
}

typedef struct copy {
  size_t copied, budget;
} copy;

static bs_status to_json(copy *c, const bs_dval *v, int depth, bs_json *out);

static bs_status kids_to_json(copy *c, const bs_dval *v, int depth,
                              bs_json *out) {
  bs_status st = BS_OK;
  bool dict = v->kind == BS_DV_DICT;
  size_t n = bs_dval_len(v);
  out->type = dict ? BS_JOBJ : BS_JARR;
  if (n == 0)
    return BS_OK;
  if (!(out->items = calloc(n, sizeof *out->items)) ||
      (dict && !(out->keys = calloc(n, sizeof *out->keys))))
    return nomem();
  for (size_t i = 0; i < n; i++) {
    char buf[24];
    const char *key = dict ? bs_dval_key(v->kids[2 * i], buf, sizeof buf) : "";
    if (!key)
      return bs_err_fail(BS_ERR_INVALID, NULL,
                         "pickle: a dict key that is not a string");
    if (dict && !(out->keys[i] = strdup(key)))
      return nomem();
    out->n = i + 1; /* what bs_json_free must free */
    BS_CHECK(to_json(c, dict ? v->kids[2 * i + 1] : v->kids[i], depth + 1,
                     &out->items[i]));
  }
out:
  return st;
}

static bs_status to_json(copy *c, const bs_dval *v, int depth, bs_json *out) {
  memset(out, 0, sizeof *out);
  if (depth > BS_JSON_MAX_DEPTH)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "pickle: nested deeper than %d (or a cycle)",
                       BS_JSON_MAX_DEPTH);
  if (++c->copied > c->budget)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "pickle: more than %zu values once shared ones are "
                       "counted each time (twice its bytes)",
                       c->budget);
  switch (v->kind) {
  case BS_DV_NONE:
    return BS_OK;
  case BS_DV_BOOL:
    out->type = BS_JBOOL;
    out->b = v->b;
    return BS_OK;
  case BS_DV_INT:
    out->type = BS_JNUM;
    out->integral = true;
    out->i = v->i;
    out->num = (double)v->i;
    return BS_OK;
  case BS_DV_FLOAT:
    out->type = BS_JNUM;
    out->num = v->f;
    return BS_OK;
  case BS_DV_STR:
    out->type = BS_JSTR;
    return (out->str = strdup(v->s)) ? BS_OK : nomem();
  default:
    return kids_to_json(c, v, depth, out);
  }
}

bs_status bs_dval_to_json(const bs_dval *v, size_t budget, bs_json *out) {
  copy c = {.budget = budget};
  bs_status st = to_json(&c, v, 0, out);
  if (st != BS_OK)
    bs_json_free(out);
  return st;
}
