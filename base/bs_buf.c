#include "bs_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_vec.h"

/* From 256 bytes: most strings are lines and short reports. */
static bool reserve(bs_buf *b, size_t extra) {
  size_t need = b->len + extra + 1;
  if (!b->oom && !bs_vec_grow(&b->s, &b->cap, need < 256 ? 256 : need, 1))
    b->oom = true;
  return !b->oom;
}

void bs_buf_append(bs_buf *b, const char *s, size_t n) {
  if (!reserve(b, n))
    return;
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

void bs_buf_uint(bs_buf *b, unsigned long long v) {
  char digits[20], *d = digits + sizeof digits;
  do
    *--d = (char)('0' + v % 10);
  while (v /= 10);
  bs_buf_append(b, d, (size_t)(digits + sizeof digits - d));
}

void bs_buf_int(bs_buf *b, long long v) {
  if (v < 0)
    bs_buf_append(b, "-", 1);
  bs_buf_uint(b, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v);
}

void bs_buf_ms_of_ns(bs_buf *b, unsigned long long ns) {
  char frac[7];
  if (ns >= 1000000000000000ull) {
    bs_buf_printf(b, "%.6f", (double)ns / 1e6);
    return;
  }
  bs_buf_uint(b, ns / 1000000);
  frac[0] = '.';
  for (int i = 6; i > 0; i--, ns /= 10)
    frac[i] = (char)('0' + ns % 10);
  bs_buf_append(b, frac, sizeof frac);
}

/* Formatted into the room there is first: most fit, and are formatted
 * once (the flight recorder's dumps print a few fields an entry). */
void bs_buf_printf(bs_buf *b, const char *fmt, ...) {
  va_list ap;
  size_t room = b->s && !b->oom ? b->cap - b->len : 0;
  va_start(ap, fmt);
  int n = vsnprintf(room ? b->s + b->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n >= 0 && (size_t)n < room) {
    b->len += (size_t)n;
    return;
  }
  if (room)
    b->s[b->len] = '\0'; /* what did not fit is not kept */
  if (n < 0 || !reserve(b, (size_t)n))
    return;
  va_start(ap, fmt);
  vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
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
