/* Queries and a reset that only white-box tests use. Not a public header. */
#ifndef BS_MS_TESTING_H
#define BS_MS_TESTING_H

#include "memsaver/bs_ms.h"

/* Whether ptr lies inside one of the memory saver's allocations, and that
 * allocation's region tag (NULL outside). */
bool bs_ms_contains(const bs_ms *ms, const void *ptr);
const char *bs_ms_tag_of(const bs_ms *ms, const void *ptr);
/* The resident peak restarts from the bytes resident now. */
void bs_ms_reset_peak(bs_ms *ms);

#endif
