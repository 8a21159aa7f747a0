/* Dropping the pages of memory whose bytes are dead: a simulated world of
 * thousands of ranks holds one rank's dead buffer at a time instead of one
 * a rank, without freeing what the owner still holds. */
#ifndef BS_PAGES_H
#define BS_PAGES_H

#include <stddef.h>

/* The whole pages inside [p, p + n) read zero from now on and hold no
 * memory until written again (MADV_DONTNEED); the bytes of partial pages
 * at either end are kept. p must be private anonymous memory (malloc's,
 * mmap's): a file's shared pages would only be unmapped. */
void bs_pages_drop(void *p, size_t n);

#endif
