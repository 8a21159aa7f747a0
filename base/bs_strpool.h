/* Interned strings: each distinct string stored once, so that a folder of
 * thousands of dumps repeating the same op names, shapes and dtypes holds
 * each once, and equal strings compare as equal pointers. A pool may be
 * read into from several threads at once, each through its own view (the
 * strings it has seen, kept without a lock; the pool's lock only for a
 * string new to the view). */
#ifndef BS_STRPOOL_H
#define BS_STRPOOL_H

#include <stddef.h>

typedef struct bs_strpool bs_strpool;

bs_strpool *bs_strpool_create(void);
/* A view of shared for one thread: its strings are shared's (the same
 * pointers); destroyed before shared. NULL when out of memory. */
bs_strpool *bs_strpool_view(bs_strpool *shared);
void bs_strpool_destroy(bs_strpool *p);
/* The pool's copy of s (NULL when out of memory); valid until destroy. */
const char *bs_strpool_get(bs_strpool *p, const char *s);
/* The same of the n bytes at s (no NUL among them). */
const char *bs_strpool_getn(bs_strpool *p, const char *s, size_t n);

#endif
