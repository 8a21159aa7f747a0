/* Building blocks for scenarios' own expectations (the `expect` oracle of
 * a scenario). Each reads only the run record and says why. */
#ifndef BS_EXPECT_H
#define BS_EXPECT_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_record.h"

/* Every phase of every rank succeeded (and there was at least one cycle). */
bool bs_expect_all_ok(const bs_record *r, char *d, size_t n);

/* The first failed phase of rank k (NULL when none). */
const bs_event *bs_expect_first_failure(const bs_record *r, int k);

/* Every rank failed first in `phase` (NULL: wherever rank 0 did) with
 * status `st` (BS_OK: whatever rank 0 got); with tensor, every error names
 * the same non-empty tensor. */
bool bs_expect_failed_alike(const bs_record *r, const char *phase, bs_status st,
                            bool tensor, char *d, size_t n);

/* bs_expect_failed_alike, and nothing ran after it (a failed verification
 * or an agreed fatal error ends the job). */
bool bs_expect_failed_and_stopped(const bs_record *r, const char *phase,
                                  bs_status st, bool tensor, char *d, size_t n);

/* After its first failure, every rank got through a later successful
 * `phase` (recovery). */
bool bs_expect_recovered(const bs_record *r, const char *phase, char *d,
                         size_t n);

/* No rank recorded anything after its first failure (the run stopped). */
bool bs_expect_stopped(const bs_record *r, char *d, size_t n);

/* No failed phase lasted `ms` or longer (a generous bound proving nothing
 * waited for the collective watchdog's timeout). */
bool bs_expect_fast_failures(const bs_record *r, double ms, char *d, size_t n);

#endif
