/* Queries and a reset that only white-box tests use. Not a public header. */
#ifndef BS_MEMSAVER_TESTING_H
#define BS_MEMSAVER_TESTING_H

#include "memsaver/bs_memsaver.h"

/* Whether ptr lies inside one of the memory saver's allocations, and that
 * allocation's region tag (NULL outside). */
bool bs_memsaver_contains(const bs_memsaver *ms, const void *ptr);
const char *bs_memsaver_tag_of(const bs_memsaver *ms, const void *ptr);
/* The resident peak restarts from the bytes resident now. */
void bs_memsaver_reset_peak(bs_memsaver *ms);

#endif
