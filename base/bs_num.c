#include "bs_num.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool bs_num_plain(const char *s) {
  if (!s || !isdigit((unsigned char)s[0]) || (s[0] == '0' && s[1]))
    return false;
  for (const char *p = s; *p; p++)
    if (!isdigit((unsigned char)*p))
      return false;
  return true;
}

bool bs_num_long(const char *s, long lo, long hi, long *out) {
  char *end;
  if (!bs_num_plain(s))
    return false;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (*end || errno || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

bool bs_num_int(const char *s, int lo, int hi, int *out) {
  long v;
  if (!bs_num_long(s, lo, hi, &v))
    return false;
  *out = (int)v;
  return true;
}

bool bs_num_ull(const char *s, unsigned long long lo, unsigned long long hi,
                unsigned long long *out) {
  char *end;
  if (!bs_num_plain(s))
    return false;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || errno || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

bool bs_num_hex(const char *s, unsigned long long *out) {
  char *end;
  if (!s || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !s[2])
    return false;
  for (const char *p = s + 2; *p; p++)
    if (!isxdigit((unsigned char)*p))
      return false;
  errno = 0;
  unsigned long long v = strtoull(s + 2, &end, 16);
  if (*end || errno)
    return false;
  *out = v;
  return true;
}

bool bs_num_longn(const char *s, size_t n, long lo, long hi, long *out) {
  char buf[24]; /* a long's digits and more: a longer plain decimal is out */
  if (!s || n >= sizeof buf || memchr(s, '\0', n))
    return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  return bs_num_long(buf, lo, hi, out);
}

bool bs_num_positive(const char *s, double max, double *out) {
  char *end;
  if (!s || !*s)
    return false;
  errno = 0;
  double v = strtod(s, &end);
  if (*end || errno || !isfinite(v) || v <= 0 || v > max)
    return false;
  *out = v;
  return true;
}
