/* Growable arrays: the one place an array of the tree is reallocated. An
 * array is its owner's pointer, count and capacity (a T *, size_t n, size_t
 * cap); these grow it by doubling, so appending n items copies O(n) of
 * them. `items` is the address of the pointer (a T ** passed as void *):
 * on failure it, and the capacity, are left as they were. */
#ifndef BS_VEC_H
#define BS_VEC_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_err.h"

/* Room for at least need items of each bytes: a capacity of twice the
 * last, or need when that is more (4 at least); cap NULL for an array
 * sized to its count (it gets exactly need). False, the error record untouched,
 * when memory ran out (or need * each overflows): for callers that report it
 * their way. */
bool bs_vec_grow(void *items, size_t *cap, size_t need, size_t each);

/* bs_vec_grow, a failure recorded: BS_ERR_NOMEM "WHAT: out of memory (N
 * items)". */
bs_status bs_vec_reserve(void *items, size_t *cap, size_t need, size_t each,
                         const char *what);

/* Appends a copy of item (each bytes) after the *n there are: grows as
 * bs_vec_reserve, then *n + 1. */
bs_status bs_vec_push(void *items, size_t *n, size_t *cap, const void *item,
                      size_t each, const char *what);

/* Appends m items at src (each bytes) after the *n there are. */
bs_status bs_vec_append(void *items, size_t *n, size_t *cap, const void *src,
                        size_t m, size_t each, const char *what);

#endif
