/* A small JSON reader: the runner reads back the run object a child wrote,
 * and the oracles read the communicator's flight-recorder dumps. Strict
 * RFC 8259 (no comments, no trailing commas), depth-limited so hostile input
 * cannot exhaust the stack. */
#ifndef BS_JSON_H
#define BS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_err.h"

typedef enum bs_jtype {
  BS_JNULL = 0,
  BS_JBOOL,
  BS_JNUM,
  BS_JSTR,
  BS_JARR,
  BS_JOBJ
} bs_jtype;

typedef struct bs_json {
  bs_jtype type;
  bool b;
  double num;
  /* BS_JNUM written as an integer that fits: its exact value (a time in
   * nanoseconds does not survive a double). */
  bool integral;
  int64_t i;
  char *str;             /* BS_JSTR: decoded, NUL-terminated */
  struct bs_json *items; /* BS_JARR, BS_JOBJ: n values */
  char **keys;           /* BS_JOBJ: n keys */
  /* A parsed object's keys, one block (keys point into it; freed whole);
   * NULL: each key its own allocation (an object built by hand). */
  char *keyblock;
  size_t n, cap; /* cap: of items (and keys), bs_vec.h */
} bs_json;

#define BS_JSON_MAX_DEPTH 64

/* BS_ERR_INVALID "json: line L, column C: expected X" on bad input (in the
 * calling thread's error record); *out is then empty. */
bs_status bs_json_parse(const char *text, size_t len, bs_json *out);
void bs_json_free(bs_json *j);

/* Member of an object (NULL when j is not an object or has no such key). */
const bs_json *bs_json_get(const bs_json *j, const char *key);
/* Typed members with a fallback when absent or of another type. */
const char *bs_json_get_str(const bs_json *j, const char *key,
                            const char *dflt);
double bs_json_get_num(const bs_json *j, const char *key, double dflt);
/* An integral number exactly; dflt when absent, not a number or not one. */
int64_t bs_json_get_int(const bs_json *j, const char *key, int64_t dflt);
bool bs_json_get_bool(const bs_json *j, const char *key, bool dflt);

#endif
