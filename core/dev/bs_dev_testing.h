/* What only the tests ask of a device: its backend's name, the pinned
 * totals over all owners, and the first_diff kernel (which checks the
 * other kernels against the host's, bit for bit). Not a public header. */
#ifndef BS_DEV_TESTING_H
#define BS_DEV_TESTING_H

#include "dev/bs_dev.h"

/* "host" or "cuda". */
const char *bs_dev_name(const bs_dev *d);
/* Pinned bytes held now over all owners, and that sum's high-water mark. */
size_t bs_dev_pinned_total(const bs_dev *d);
size_t bs_dev_pinned_peak_total(const bs_dev *d);
/* Index of the first differing byte of two device buffers, or n. */
size_t bs_dev_first_diff(bs_dev *d, const void *a, const void *b, size_t n);

#endif
