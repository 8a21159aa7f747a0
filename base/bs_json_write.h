/* The JSON writer: values and an object's fields appended to a bs_buf, the
 * one way the tree writes JSON (reports, run objects, traces, the bench's
 * figures, the flight recorders' dumps; bs_json.h reads it back). Layout
 * (spaces, new lines) is the caller's: a field is its separator, its key
 * and its value. */
#ifndef BS_JSON_WRITE_H
#define BS_JSON_WRITE_H

#include <stddef.h>

#include "bs_buf.h"

/* A string literal (quotes included, control characters escaped); NULL
 * gives null. Plain runs are copied whole: a group's ranks are thousands
 * of characters. */
void bs_json_write_str(bs_buf *b, const char *s);
/* An array of string literals: n items, or up to the first NULL one
 * (SIZE_MAX for a NULL-terminated list; a NULL list gives []). */
void bs_json_write_strs(bs_buf *b, const char *const *s, size_t n);
/* A number; NaN and infinities give null (JSON has neither). An integral
 * value below 1e15 is written as an integer, any other in %.15g. */
void bs_json_write_num(bs_buf *b, double v);
/* sep, then "key": (sep: "" for an object's first field, ", " or ",\n  "
 * for the others). */
void bs_json_write_key(bs_buf *b, const char *sep, const char *key);
/* A field whose value is a string literal or a number. */
void bs_json_write_field_str(bs_buf *b, const char *sep, const char *key,
                             const char *v);
void bs_json_write_field_num(bs_buf *b, const char *sep, const char *key,
                             double v);

#endif
