#include "bs_json.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bs_buf.h"
#include "bs_vec.h"

typedef struct parser {
  const char *s;
  size_t len, pos;
  int depth;
} parser;

static bs_status perr(const parser *p, const char *what) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < p->pos && i < p->len; i++) {
    col = p->s[i] == '\n' ? 1 : col + 1;
    line += p->s[i] == '\n';
  }
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "json: line %zu, column %zu: expected %s", line, col,
                     what);
}

static bool is_ws(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

static void skip_ws(parser *p) {
  while (p->pos < p->len && is_ws(p->s[p->pos]))
    p->pos++;
}

static bool eat(parser *p, char c) {
  skip_ws(p);
  if (p->pos < p->len && p->s[p->pos] == c) {
    p->pos++;
    return true;
  }
  return false;
}

static bool literal(parser *p, const char *word) {
  size_t n = strlen(word);
  if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n) != 0)
    return false;
  p->pos += n;
  return true;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static bool hex4(parser *p, unsigned *out) {
  if (p->len - p->pos < 4)
    return false;
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hexval(p->s[p->pos + i]);
    if (h < 0)
      return false;
    v = v * 16 + (unsigned)h;
  }
  p->pos += 4;
  *out = v;
  return true;
}

static void put_utf8(bs_buf *b, unsigned cp) {
  char u[4];
  size_t n;
  if (cp < 0x80) {
    u[0] = (char)cp;
    n = 1;
  } else if (cp < 0x800) {
    u[0] = (char)(0xC0 | (cp >> 6));
    u[1] = (char)(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    u[0] = (char)(0xE0 | (cp >> 12));
    u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[2] = (char)(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    u[0] = (char)(0xF0 | (cp >> 18));
    u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    u[3] = (char)(0x80 | (cp & 0x3F));
    n = 4;
  }
  bs_buf_append(b, u, n);
}

/* A \uXXXX escape, pairing UTF-16 surrogates. */
static bool unicode_escape(parser *p, bs_buf *b) {
  unsigned cp, lo;
  if (!hex4(p, &cp))
    return false;
  if (cp >= 0xD800 && cp < 0xDC00) {
    if (!literal(p, "\\u") || !hex4(p, &lo) || lo < 0xDC00 || lo > 0xDFFF)
      return false;
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  } else if (cp >= 0xDC00 && cp < 0xE000) {
    return false;
  }
  put_utf8(b, cp);
  return true;
}

static bool escape(parser *p, bs_buf *b) {
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  if (p->pos >= p->len)
    return false;
  char c = p->s[p->pos++];
  if (c == 'u')
    return unicode_escape(p, b);
  const char *k = c ? strchr(from, c) : NULL;
  if (!k)
    return false;
  bs_buf_append(b, &to[k - from], 1);
  return true;
}

/* How many plain characters from p's position on: up to a quote, a
 * backslash or a control character. */
static size_t plain_run(const parser *p, size_t from) {
  size_t end = from;
  while (end < p->len) {
    unsigned char x = (unsigned char)p->s[end];
    if (x == '"' || x == '\\' || x < 0x20)
      break;
    end++;
  }
  return end - from;
}

/* A string (quotes and all) decoded onto b, no NUL added. */
static bs_status string_into(parser *p, bs_buf *b) {
  bs_status st = BS_OK;
  if (!eat(p, '"'))
    BS_CHECK(perr(p, "a string"));
  for (;;) {
    if (p->pos >= p->len)
      BS_CHECK(perr(p, "a closing quote"));
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c == '"')
      break;
    if (c < 0x20)
      BS_CHECK(perr(p, "no control character inside a string"));
    if (c == '\\') {
      p->pos++;
      if (!escape(p, b))
        BS_CHECK(perr(p, "a valid escape"));
      continue;
    }
    /* A run of plain characters at once: dumps hold long strings. */
    size_t run = plain_run(p, p->pos);
    bs_buf_append(b, p->s + p->pos, run);
    p->pos += run;
  }
  p->pos++;
out:
  return st;
}

/* A string value, at its opening quote (parse_value looked): one of plain
 * characters only (most of a dump's) is copied at once, no buffer grown. */
static bs_status parse_string(parser *p, char **out) {
  bs_buf b = {0};
  bs_status st = BS_OK;
  size_t at = p->pos + 1, run = plain_run(p, at);
  if (at + run < p->len && p->s[at + run] == '"') {
    if (!(*out = malloc(run + 1)))
      BS_FAIL(BS_ERR_NOMEM, NULL, "json: out of memory");
    memcpy(*out, p->s + at, run);
    (*out)[run] = '\0';
    p->pos = at + run + 1;
    return BS_OK;
  }
  BS_CHECK(string_into(p, &b));
  if (!(*out = bs_buf_take(&b)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "json: out of memory");
out:
  bs_buf_free(&b);
  return st;
}

static size_t digits(parser *p) {
  size_t n = 0;
  while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
    p->pos++;
    n++;
  }
  return n;
}

/* The JSON number grammar checked here; strtod does the conversion, and
 * strtoll too for an integer. */
static bs_status parse_number(parser *p, bs_json *out) {
  size_t start = p->pos;
  bool integral = true;
  if (p->pos < p->len && p->s[p->pos] == '-')
    p->pos++;
  size_t lead = p->pos;
  size_t n = digits(p);
  if (n == 0 || (n > 1 && p->s[lead] == '0'))
    return perr(p, "a number");
  if (p->pos < p->len && p->s[p->pos] == '.') {
    integral = false;
    p->pos++;
    if (digits(p) == 0)
      return perr(p, "digits after '.'");
  }
  if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
    integral = false;
    p->pos++;
    if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
      p->pos++;
    if (digits(p) == 0)
      return perr(p, "digits in the exponent");
  }
  char tmp[64];
  size_t len = p->pos - start;
  if (len >= sizeof tmp)
    return perr(p, "a number of at most 63 characters");
  /* An integer that fits an int64 (a dump's every count and time): its
   * double rounded to nearest, as strtod rounds; -0 stays strtod's. */
  uint64_t v = 0;
  for (size_t k = 0; integral && n <= 19 && k < n; k++)
    v = v * 10 + (uint64_t)(p->s[lead + k] - '0');
  if (integral && n <= 19 && v <= INT64_MAX &&
      !(lead > start && p->s[lead] == '0')) {
    out->i = lead > start ? -(int64_t)v : (int64_t)v;
    out->num = (double)out->i;
    out->integral = true;
    return BS_OK;
  }
  memcpy(tmp, p->s + start, len);
  tmp[len] = '\0';
  out->num = strtod(tmp, NULL);
  if (integral) {
    errno = 0;
    out->i = strtoll(tmp, NULL, 10);
    out->integral = errno == 0;
  }
  return BS_OK;
}

static bs_status parse_value(parser *p, bs_json *out);

static bs_status make_room(bs_json *j, bool with_keys) {
  size_t cap = j->cap;
  bs_status st =
      bs_vec_reserve(&j->items, &j->cap, j->n + 1, sizeof *j->items, "json");
  if (st == BS_OK && with_keys && j->cap != cap)
    st = bs_vec_reserve(&j->keys, NULL, j->cap, sizeof *j->keys, "json");
  return st;
}

/* An object's key onto its block kb, NUL-ended; keys[i] its offset there
 * until the object ends (keys_placed). */
static bs_status parse_key(parser *p, bs_json *obj, bs_buf *kb) {
  bs_status st = BS_OK;
  size_t at = kb->len;
  skip_ws(p);
  BS_CHECK(string_into(p, kb));
  bs_buf_append(kb, "", 1);
  obj->keys[obj->n] = (char *)(uintptr_t)at;
  if (!eat(p, ':'))
    BS_CHECK(perr(p, "':'"));
out:
  return st;
}

/* The keys' offsets made pointers into the object's block (ok), or, when
 * it did not parse, cleared for bs_json_free. */
static bs_status keys_placed(bs_json *obj, bs_buf *kb, bool ok) {
  bool placed = ok && !kb->oom;
  for (size_t i = 0; i < obj->n; i++)
    obj->keys[i] = placed ? kb->s + (uintptr_t)obj->keys[i] : NULL;
  if (placed && obj->n) {
    obj->keyblock = kb->s;
    kb->s = NULL;
  }
  bs_buf_free(kb);
  if (ok && !placed)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "json: out of memory");
  return BS_OK;
}

/* Arrays and objects: one loop, objects read a key first. */
static bs_status parse_container(parser *p, bs_json *out, bool obj) {
  bs_status st = BS_OK;
  bs_buf kb = {0};
  char close = obj ? '}' : ']';
  out->type = obj ? BS_JOBJ : BS_JARR;
  if (++p->depth > BS_JSON_MAX_DEPTH)
    BS_CHECK(perr(p, "nesting of at most 64 levels"));
  if (eat(p, close))
    goto out;
  do {
    BS_CHECK(make_room(out, obj));
    if (obj)
      BS_CHECK(parse_key(p, out, &kb));
    BS_CHECK(parse_value(p, &out->items[out->n]));
    out->n++;
  } while (eat(p, ','));
  if (!eat(p, close))
    BS_CHECK(perr(p, obj ? "',' or '}'" : "',' or ']'"));
out:
  if (obj && keys_placed(out, &kb, st == BS_OK) != BS_OK)
    st = BS_ERR_NOMEM;
  p->depth--;
  return st;
}

static bs_status parse_value(parser *p, bs_json *out) {
  memset(out, 0, sizeof *out);
  skip_ws(p);
  if (p->pos >= p->len)
    return perr(p, "a value");
  char c = p->s[p->pos];
  if (c == '{' || c == '[') {
    p->pos++;
    bs_status st = parse_container(p, out, c == '{');
    if (st != BS_OK)
      bs_json_free(out);
    return st;
  }
  if (c == '"') {
    out->type = BS_JSTR;
    return parse_string(p, &out->str);
  }
  if (literal(p, "true") || literal(p, "false")) {
    out->type = BS_JBOOL;
    out->b = c == 't';
    return BS_OK;
  }
  if (literal(p, "null"))
    return BS_OK;
  out->type = BS_JNUM;
  return parse_number(p, out);
}

bs_status bs_json_parse(const char *text, size_t len, bs_json *out) {
  parser p = {.s = text, .len = len};
  bs_status st = parse_value(&p, out);
  if (st != BS_OK)
    return st;
  skip_ws(&p);
  if (p.pos != p.len) {
    bs_json_free(out);
    return perr(&p, "the end of the document");
  }
  return BS_OK;
}

void bs_json_free(bs_json *j) {
  if (!j)
    return;
  for (size_t i = 0; i < j->n; i++) {
    bs_json_free(&j->items[i]);
    if (j->keys && !j->keyblock)
      free(j->keys[i]);
  }
  free(j->items);
  free(j->keys);
  free(j->keyblock);
  free(j->str);
  memset(j, 0, sizeof *j);
}

const bs_json *bs_json_get(const bs_json *j, const char *key) {
  if (!j || j->type != BS_JOBJ)
    return NULL;
  for (size_t i = 0; i < j->n; i++)
    if (strcmp(j->keys[i], key) == 0)
      return &j->items[i];
  return NULL;
}

const char *bs_json_get_str(const bs_json *j, const char *key,
                            const char *dflt) {
  const bs_json *v = bs_json_get(j, key);
  return v && v->type == BS_JSTR ? v->str : dflt;
}

double bs_json_get_num(const bs_json *j, const char *key, double dflt) {
  const bs_json *v = bs_json_get(j, key);
  return v && v->type == BS_JNUM ? v->num : dflt;
}

int64_t bs_json_get_int(const bs_json *j, const char *key, int64_t dflt) {
  const bs_json *v = bs_json_get(j, key);
  return v && v->type == BS_JNUM && v->integral ? v->i : dflt;
}

bool bs_json_get_bool(const bs_json *j, const char *key, bool dflt) {
  const bs_json *v = bs_json_get(j, key);
  return v && v->type == BS_JBOOL ? v->b : dflt;
}
