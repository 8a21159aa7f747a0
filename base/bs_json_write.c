#include "bs_json_write.h"

#include <math.h>

/* The escape of a character a string literal cannot hold as it is, or
 * NULL for a plain one. */
static const char *escape(unsigned char c) {
  switch (c) {
  case '"':
    return "\\\"";
  case '\\':
    return "\\\\";
  case '\n':
    return "\\n";
  case '\t':
    return "\\t";
  case '\r':
    return "\\r";
  }
  return NULL;
}

void bs_json_write_str(bs_buf *b, const char *s) {
  if (!s) {
    bs_buf_append(b, "null", 4);
    return;
  }
  bs_buf_append(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    size_t plain = 0;
    while (p[plain] >= 0x20 && !escape(p[plain]))
      plain++;
    bs_buf_append(b, (const char *)p, plain);
    p += plain;
    if (!*p)
      break;
    const char *e = escape(*p);
    if (e)
      bs_buf_append(b, e, 2);
    else
      bs_buf_printf(b, "\\u%04x", *p);
    p++;
  }
  bs_buf_append(b, "\"", 1);
}

void bs_json_write_strs(bs_buf *b, const char *const *s, size_t n) {
  bs_buf_append(b, "[", 1);
  for (size_t i = 0; s && i < n && s[i]; i++) {
    if (i)
      bs_buf_append(b, ", ", 2);
    bs_json_write_str(b, s[i]);
  }
  bs_buf_append(b, "]", 1);
}

void bs_json_write_num(bs_buf *b, double v) {
  if (!isfinite(v))
    bs_buf_append(b, "null", 4);
  else if (v == (double)(long long)v && fabs(v) < 1e15)
    bs_buf_printf(b, "%lld", (long long)v);
  else
    bs_buf_printf(b, "%.15g", v); /* short, and exact for what we write */
}

void bs_json_write_key(bs_buf *b, const char *sep, const char *key) {
  bs_buf_printf(b, "%s", sep);
  bs_json_write_str(b, key);
  bs_buf_append(b, ": ", 2);
}

void bs_json_write_field_str(bs_buf *b, const char *sep, const char *key,
                             const char *v) {
  bs_json_write_key(b, sep, key);
  bs_json_write_str(b, v);
}

void bs_json_write_field_num(bs_buf *b, const char *sep, const char *key,
                             double v) {
  bs_json_write_key(b, sep, key);
  bs_json_write_num(b, v);
}
