/* The fault-spec parser (docs/cli.md "Fault spec"): libfiu's key=value syntax
 * plus the project's filters. Every rejection names the spec and the one
 * thing wrong with it, since the CLI prints it as its usage error. */
#include "bs_fault_control.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_fault_parse.h"
#include "bs_near.h"
#include "bs_num.h"

#define SPEC_MAX 256

#define SPEC_FAIL(...) BS_FAIL(BS_ERR_INVALID, NULL, __VA_ARGS__)

enum spec_kind { KIND_POINT, KIND_UINT, KIND_PROB, KIND_FLAG };
enum {
  K_NAME,
  K_RANK,
  K_CYCLE,
  K_NTH,
  K_TIMES,
  K_PERSISTENT,
  K_PROB,
  K_FAILINFO,
  K_ONETIME,
  K_COUNT
};

static const struct spec_key {
  const char *key;
  enum spec_kind kind;
  unsigned long long lo, hi; /* KIND_UINT only */
} spec_keys[K_COUNT] = {
    [K_NAME] = {"name", KIND_POINT, 0, 0},
    [K_RANK] = {"rank", KIND_UINT, 0, INT_MAX},
    [K_CYCLE] = {"cycle", KIND_UINT, 0, INT_MAX},
    [K_NTH] = {"nth", KIND_UINT, 1, LONG_MAX}, /* counted from 1 */
    [K_TIMES] = {"times", KIND_UINT, 1, LONG_MAX},
    [K_PERSISTENT] = {"persistent", KIND_FLAG, 0, 0},
    [K_PROB] = {"prob", KIND_PROB, 0, 0},
    [K_FAILINFO] = {"failinfo", KIND_UINT, 0, UINT64_MAX},
    [K_ONETIME] = {"onetime", KIND_FLAG, 0, 0},
};

/* A plain decimal in [lo, hi]: no sign, no spaces, no hex or octal, so that
 * "rank=-1" and "nth=0x2" are errors rather than surprises. */
static bs_status parse_uint(const char *text, const char *key, const char *val,
                            unsigned long long lo, unsigned long long hi,
                            unsigned long long *out) {
  bs_status st = BS_OK;
  if (val[0] == '-')
    SPEC_FAIL("fault spec '%.80s': %s=%s is negative", text, key, val);
  if (!bs_num_plain(val))
    SPEC_FAIL("fault spec '%.80s': %s=%s is not a decimal integer", text, key,
              val);
  unsigned long long v = 0;
  if (!bs_num_ull(val, lo, hi, &v))
    SPEC_FAIL("fault spec '%.80s': %s=%s is out of range [%llu, %llu]", text,
              key, val, lo, hi);
  *out = v;
out:
  return st;
}

bool bs_fault_spec_matches(const char *pattern, const char *point) {
  size_t n = strlen(pattern);
  if (n > 0 && pattern[n - 1] == '*')
    return strncmp(pattern, point, n - 1) == 0;
  return strcmp(pattern, point) == 0;
}

bool bs_fault_spec_matches_point(const char *pattern, bs_fault_point_id point) {
  const bs_fault_point *p = bs_fault_catalogue_get(point);
  return p && bs_fault_spec_matches(pattern, p->name);
}

bool bs_fault_spec_name_valid(const char *name) {
  if (!name || !*name || strlen(name) >= BS_FAULT_NAME_MAX)
    return false;
  /* libfiu only knows a trailing wildcard; a '*' elsewhere matches nothing. */
  const char *star = strchr(name, '*');
  if (star && star[1] != '\0')
    return false;
  for (int i = 0; i < BS_FP_COUNT; i++)
    if (bs_fault_spec_matches(name, bs_fault_catalogue_get(i)->name))
      return true;
  return false;
}

const char *bs_fault_spec_near(const char *name) {
  const char *names[BS_FP_COUNT];
  for (int i = 0; i < BS_FP_COUNT; i++)
    names[i] = bs_fault_catalogue_get(i)->name;
  return bs_near_hint(name, names, BS_FP_COUNT);
}

static bs_status set_name(const char *text, const char *val,
                          bs_fault_spec *out) {
  bs_status st = BS_OK;
  if (!bs_fault_spec_name_valid(val))
    SPEC_FAIL("fault spec '%.80s': unknown fault point '%.60s'%s (see "
              "backstop faults)",
              text, val, bs_fault_spec_near(val));
  snprintf(out->name, sizeof out->name, "%s", val);
out:
  return st;
}

static void store_uint(bs_fault_spec *out, int k, unsigned long long v) {
  switch (k) {
  case K_RANK:
    out->rank = (int)v;
    break;
  case K_CYCLE:
    out->cycle = (int)v;
    break;
  case K_NTH:
    out->nth = (long)v;
    break;
  case K_TIMES:
    out->times = (long)v;
    break;
  default:
    out->failinfo = (uint64_t)v;
    break;
  }
}

static bs_status set_prob(const char *text, const char *val,
                          bs_fault_spec *out) {
  bs_status st = BS_OK;
  char *end = NULL;
  double p = strtod(val, &end);
  if (end == val || *end != '\0' || isnan(p))
    SPEC_FAIL("fault spec '%.80s': prob=%s is not a number", text, val);
  if (p < 0.0 || p > 1.0)
    SPEC_FAIL("fault spec '%.80s': prob=%s is outside [0,1]", text, val);
  if (p == 0.0)
    SPEC_FAIL("fault spec '%.80s': prob=%s never fires (give a probability "
              "in (0,1])",
              text, val);
  out->prob = p;
out:
  return st;
}

static int key_index(const char *key) {
  for (int i = 0; i < K_COUNT; i++)
    if (strcmp(spec_keys[i].key, key) == 0)
      return i;
  return -1;
}

static bs_status set_value(const char *text, int k, const char *val,
                           bs_fault_spec *out) {
  bs_status st = BS_OK;
  unsigned long long v = 0;
  switch (spec_keys[k].kind) {
  case KIND_POINT:
    BS_CHECK(set_name(text, val, out));
    break;
  case KIND_PROB:
    BS_CHECK(set_prob(text, val, out));
    break;
  case KIND_FLAG:
    if (k == K_PERSISTENT)
      out->times = 0;
    else
      out->onetime = true;
    break;
  case KIND_UINT:
    BS_CHECK(parse_uint(text, spec_keys[k].key, val, spec_keys[k].lo,
                        spec_keys[k].hi, &v));
    store_uint(out, k, v);
    break;
  }
out:
  return st;
}

/* One "key[=value]" field; seen is a bit per key, for duplicates. */
static bs_status parse_field(const char *text, char *field, unsigned *seen,
                             bs_fault_spec *out) {
  bs_status st = BS_OK;
  if (!*field)
    SPEC_FAIL("fault spec '%.80s': empty field", text);
  char *eq = strchr(field, '=');
  if (eq)
    *eq = '\0';
  int k = key_index(field);
  if (k < 0)
    SPEC_FAIL("fault spec '%.80s': unknown key '%.40s' (keys: name, rank, "
              "cycle, nth, times, persistent, prob, failinfo, onetime)",
              text, field);
  if (*seen & (1u << k))
    SPEC_FAIL("fault spec '%.80s': duplicate key '%s'", text, field);
  *seen |= 1u << k;
  bool takes_value = spec_keys[k].kind != KIND_FLAG;
  if (takes_value && (!eq || !eq[1]))
    SPEC_FAIL("fault spec '%.80s': %s needs a value (%s=...)", text, field,
              field);
  if (!takes_value && eq)
    SPEC_FAIL("fault spec '%.80s': %s takes no value", text, field);
  BS_CHECK(set_value(text, k, eq ? eq + 1 : NULL, out));
out:
  return st;
}

bs_status bs_fault_spec_parse(const char *text, bs_fault_spec *out) {
  bs_status st = BS_OK;
  char buf[SPEC_MAX];
  unsigned seen = 0;
  bs_fault_spec spec = {.rank = -1, .cycle = -1, .times = 1, .prob = 1.0};
  if (!text || !out)
    SPEC_FAIL("fault spec: none given");
  if (!*text)
    SPEC_FAIL("fault spec '': empty (expected name=POINT[,key=value...])");
  if (strlen(text) >= sizeof buf)
    SPEC_FAIL("fault spec '%.80s...': too long (%zu characters, max %zu)", text,
              strlen(text), sizeof buf - 1);
  snprintf(buf, sizeof buf, "%s", text);
  /* strtok would skip empty fields; "a,,b" must be an error. */
  for (char *field = buf; field;) {
    char *comma = strchr(field, ',');
    if (comma)
      *comma = '\0';
    BS_CHECK(parse_field(text, field, &seen, &spec));
    field = comma ? comma + 1 : NULL;
  }
  if (!(seen & (1u << K_NAME)))
    SPEC_FAIL("fault spec '%.80s': missing name=POINT", text);
  if ((seen & (1u << K_TIMES)) && (seen & (1u << K_PERSISTENT)))
    SPEC_FAIL("fault spec '%.80s': times and persistent together (persistent "
              "is every reach from nth on)",
              text);
  /* A window of reaches starts somewhere: at the first unless nth says. */
  if ((seen & (1u << K_TIMES | 1u << K_PERSISTENT)) && !spec.nth)
    spec.nth = 1;
  *out = spec; /* only a valid spec reaches the caller */
out:
  return st;
}
