/* A flat binary form for what crosses processes of one job (a run's
 * result, a process's part of the run record): this build's bytes of each
 * field, counts before arrays; a reader that checks every count against
 * what is left. Every process of a job runs the same binary; a header of
 * the caller's own (magic, struct sizes) says so. */
#ifndef BS_PACK_H
#define BS_PACK_H

#include <stddef.h>

#include "bs_buf.h"
#include "bs_err.h"

void bs_pack_put(bs_buf *b, const void *p, size_t n);
void bs_pack_put_size(bs_buf *b, size_t v);
/* A count, then the items: what bs_pack_take_array reads. */
void bs_pack_put_array(bs_buf *b, const void *p, size_t n, size_t each);
/* A string with its NUL; NULL as none (read back as NULL). */
void bs_pack_put_str(bs_buf *b, const char *s);
/* n strings: their count, then each. */
void bs_pack_put_strs(bs_buf *b, char *const *s, size_t n);

/* What is left to read, and what it is ("process 2's part") for errors. */
typedef struct bs_pack_cursor {
  const char *p, *end;
  const char *what;
} bs_pack_cursor;

/* Each BS_ERR_INVALID "WHAT: truncated" (or past its end) when the bytes
 * run out. */
bs_status bs_pack_take(bs_pack_cursor *c, void *dst, size_t n);
/* A count of items of size each that must fit in what is left. */
bs_status bs_pack_take_count(bs_pack_cursor *c, size_t each, size_t *out);
/* n items of size each, malloc'd (NULL when n is 0). */
bs_status bs_pack_take_array(bs_pack_cursor *c, size_t each, void **out,
                             size_t *n);
bs_status bs_pack_take_str(bs_pack_cursor *c, char **out);
/* n strings, malloc'd with the array (each freed with it by the caller). */
bs_status bs_pack_take_strs(bs_pack_cursor *c, char ***out, size_t *n);
/* Nothing left: BS_ERR_INVALID "WHAT: N bytes past its end" else. */
bs_status bs_pack_end(const bs_pack_cursor *c);

#endif
