/* A dump's values as the readers make them, for the model to read in one
 * pass: no tree of mallocs. Every value lives in its document's arena
 * (reset, not freed, between dumps, so a folder of thousands reuses one),
 * every string in the folder's string pool (equal strings are one pointer:
 * a key is looked up by pointer). Pickles are read into it directly
 * (bs_pickle_read_doc); JSON through bs_json (bs_dval_from_json). */
#ifndef BS_DVAL_H
#define BS_DVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_err.h"
#include "bs_json.h"
#include "bs_strpool.h"

typedef enum bs_dval_kind {
  BS_DV_NONE = 0,
  BS_DV_BOOL,
  BS_DV_INT,
  BS_DV_FLOAT,
  BS_DV_STR,
  BS_DV_LIST,
  BS_DV_TUPLE,
  BS_DV_DICT
} bs_dval_kind;

typedef struct bs_dval {
  bs_dval_kind kind;
  bool b;
  int64_t i;
  double f;
  const char *s; /* interned */
  /* LIST, TUPLE: n items; DICT: n keys and values, key first. */
  struct bs_dval **kids;
  size_t n, cap;
} bs_dval;

/* The arena values of one document are made in. */
typedef struct bs_dval_doc {
  char **blocks;
  size_t nblocks, cur, used; /* the block being filled, its bytes used */
  size_t *sizes;
} bs_dval_doc;

/* A value of kind k (zeroed otherwise), NULL when out of memory. */
bs_dval *bs_dval_new(bs_dval_doc *doc, bs_dval_kind k);
/* Room for c's kids to grow to need (doubling); false: out of memory. */
bool bs_dval_reserve(bs_dval_doc *doc, bs_dval *c, size_t need);
/* Every value made is gone; the arena is kept for the next document. */
void bs_dval_reset(bs_dval_doc *doc);
void bs_dval_doc_free(bs_dval_doc *doc);

/* Items of a list or tuple (0 for anything else); a dict's pairs. */
size_t bs_dval_len(const bs_dval *v);
const bs_dval *bs_dval_item(const bs_dval *v, size_t i);
/* The value under key (an interned string: compared by pointer), NULL
 * when v is not a dict or has none. */
const bs_dval *bs_dval_find(const bs_dval *v, const char *key);
/* The same for any string (compared by content). */
const bs_dval *bs_dval_get(const bs_dval *v, const char *key);
/* Typed reads with a fallback when v is NULL or of another kind; an
 * integer is exact (a float is not one), a number either. */
const char *bs_dval_str(const bs_dval *v, const char *dflt);
int64_t bs_dval_int(const bs_dval *v, int64_t dflt);
bool bs_dval_num(const bs_dval *v, double *out);
bool bs_dval_bool(const bs_dval *v, bool dflt);
/* A dict key as text: a string's, an integer's digits (buf); NULL else. */
const char *bs_dval_key(const bs_dval *k, char *buf, size_t n);

/* j as a document's value (its strings interned in pool). */
bs_status bs_dval_from_json(const bs_json *j, bs_strpool *pool,
                            bs_dval_doc *doc, bs_dval **out);
/* v as a bs_json tree. Bounded: nesting deeper than BS_JSON_MAX_DEPTH (a
 * cycle) or more than budget values, shared ones counted each time they
 * are shared, is BS_ERR_INVALID "pickle: ...". */
bs_status bs_dval_to_json(const bs_dval *v, size_t budget, bs_json *out);

#endif
