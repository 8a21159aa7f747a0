/* A growable string: the one way reports, results and traces are built
 * (bs_json_write.h writes JSON into it).
 * An allocation failure sets `oom` and makes later appends no-ops, so a
 * writer checks once at the end instead of after every append. */
#ifndef BS_BUF_H
#define BS_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct bs_buf {
  char *s; /* NUL-terminated once anything was appended */
  size_t len, cap;
  bool oom;
} bs_buf;

void bs_buf_printf(bs_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void bs_buf_append(bs_buf *b, const char *s, size_t n);
/* v in decimal, as printf's %llu writes it, digit by digit: a flight
 * recorder's dump is mostly such numbers, thousands a rank. */
void bs_buf_uint(bs_buf *b, unsigned long long v);
/* v as %lld writes it. */
void bs_buf_int(bs_buf *b, long long v);
/* ns nanoseconds as milliseconds, as %.6f writes (double)ns / 1e6: exact
 * below 10^15 ns (31 years), through printf above. */
void bs_buf_ms_of_ns(bs_buf *b, unsigned long long ns);
/* Text escaped for XML attributes and content. */
void bs_buf_xml(bs_buf *b, const char *s);
/* The string ("" when empty); the buffer keeps owning it. */
const char *bs_buf_str(const bs_buf *b);
/* Hands the string to the caller (NULL after oom) and resets the buffer. */
char *bs_buf_take(bs_buf *b);
void bs_buf_free(bs_buf *b);

#endif
