/* A growable string: the one way reports, results and traces are built.
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
/* A JSON string literal (quotes included); NULL gives null. */
void bs_buf_json_str(bs_buf *b, const char *s);
/* A JSON array of string literals: n items, or up to the first NULL one
 * (SIZE_MAX for a NULL-terminated list; a NULL list gives []). */
void bs_buf_json_strs(bs_buf *b, const char *const *s, size_t n);
/* A JSON number; NaN and infinities give null (JSON has neither). */
void bs_buf_json_num(bs_buf *b, double v);
/* Text escaped for XML attributes and content. */
void bs_buf_xml(bs_buf *b, const char *s);
/* The string ("" when empty); the buffer keeps owning it. */
const char *bs_buf_str(const bs_buf *b);
/* Hands the string to the caller (NULL after oom) and resets the buffer. */
char *bs_buf_take(bs_buf *b);
void bs_buf_free(bs_buf *b);

#endif
