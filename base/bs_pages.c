/* Dropping dead pages (bs_pages.h). */
#include "bs_pages.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

void bs_pages_drop(void *p, size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE); /* glibc's, kept: no call */
  uintptr_t from = ((uintptr_t)p + page - 1) / page * page;
  uintptr_t to = ((uintptr_t)p + n) / page * page;
  if (to > from)
    (void)madvise((void *)from, to - from, MADV_DONTNEED);
}
