#include "bs_buf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(bs_buf *b, size_t extra) {
  if (b->oom)
    return false;
  if (b->len + extra + 1 <= b->cap)
    return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1)
    cap *= 2;
  char *s = realloc(b->s, cap);
  if (!s) {
    b->oom = true;
    return false;
  }
  b->s = s;
  b->cap = cap;
  return true;
}

void bs_buf_append(bs_buf *b, const char *s, size_t n) {
  if (!reserve(b, n))
    return;
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

void bs_buf_printf(bs_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !reserve(b, (size_t)n))
    return;
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

void bs_buf_json_str(bs_buf *b, const char *s) {
  if (!s) {
    bs_buf_append(b, "null", 4);
    return;
  }
  bs_buf_append(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"':
      bs_buf_append(b, "\\\"", 2);
      break;
    case '\\':
      bs_buf_append(b, "\\\\", 2);
      break;
    case '\n':
      bs_buf_append(b, "\\n", 2);
      break;
    case '\t':
      bs_buf_append(b, "\\t", 2);
      break;
    case '\r':
      bs_buf_append(b, "\\r", 2);
      break;
    default:
      if (*p < 0x20)
        bs_buf_printf(b, "\\u%04x", *p);
      else
        bs_buf_append(b, (const char *)p, 1);
    }
  }
  bs_buf_append(b, "\"", 1);
}

void bs_buf_json_strs(bs_buf *b, const char *const *s, size_t n) {
  bs_buf_append(b, "[", 1);
  for (size_t i = 0; s && i < n && s[i]; i++) {
    if (i)
      bs_buf_append(b, ", ", 2);
    bs_buf_json_str(b, s[i]);
  }
  bs_buf_append(b, "]", 1);
}

void bs_buf_json_num(bs_buf *b, double v) {
  if (!isfinite(v))
    bs_buf_append(b, "null", 4);
  else if (v == (double)(long long)v && fabs(v) < 1e15)
    bs_buf_printf(b, "%lld", (long long)v);
  else
    bs_buf_printf(b, "%.15g", v); /* short, and exact for what we write */
}

void bs_buf_xml(bs_buf *b, const char *s) {
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    switch (*p) {
    case '<':
      bs_buf_append(b, "&lt;", 4);
      break;
    case '>':
      bs_buf_append(b, "&gt;", 4);
      break;
    case '&':
      bs_buf_append(b, "&amp;", 5);
      break;
    case '"':
      bs_buf_append(b, "&quot;", 6);
      break;
    case '\n':
      bs_buf_append(b, "&#10;", 5);
      break;
    default:
      /* XML 1.0 forbids other control characters, even escaped. */
      if (*p < 0x20 && *p != '\t')
        bs_buf_append(b, "?", 1);
      else
        bs_buf_append(b, (const char *)p, 1);
    }
  }
}

const char *bs_buf_str(const bs_buf *b) {
  return b->s ? b->s : "";
}

char *bs_buf_take(bs_buf *b) {
  char *s = NULL;
  if (!b->oom)
    s = b->s ? b->s : calloc(1, 1);
  else
    free(b->s);
  *b = (bs_buf){0};
  return s;
}

void bs_buf_free(bs_buf *b) {
  free(b->s);
  *b = (bs_buf){0};
}
