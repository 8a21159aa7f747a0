/* SHA256 digests taken later, by a process of their own on a spare CPU,
 * for a caller that needs them only at the end: a scheduled world runs on
 * one CPU, and its oracle's digests of the live weights are 6.7% of a
 * 16,384-rank run's samples there. A process, not a thread: a second
 * thread of the world's process running on another CPU makes each of the
 * world's many munmap and madvise calls flush that CPU's TLB too, which
 * cost more than the digests (docs/performance.md).
 *
 * The caller stages straight into shared memory: it asks for room, copies
 * its parts there one after the other, and puts each part with the place
 * its digest goes. Nothing waits for room: where there is none the caller
 * hashes at once itself. Drain waits (bounded, and the hasher's death
 * noticed) until every part put is hashed, and writes the digests. One
 * thread uses a hasher at a time. */
#ifndef BS_HASHER_H
#define BS_HASHER_H

#include <sched.h>
#include <stddef.h>

#include "bs_digest.h"
#include "bs_err.h"

typedef struct bs_hasher bs_hasher;

/* Forks the hasher, on `cpus` (NULL: where the caller may run). */
bs_status bs_hasher_start(const cpu_set_t *cpus, bs_hasher **out);
/* Drains, then ends the hasher (NULL: nothing). */
void bs_hasher_stop(bs_hasher *h);

/* Room for `bytes` in at most `parts` parts, contiguous: NULL when the
 * hasher has none now. Valid until the next room. */
void *bs_hasher_room(bs_hasher *h, size_t bytes, size_t parts);
/* The room's next `len` bytes, hashed into *out by the next drain. */
void bs_hasher_put(bs_hasher *h, size_t len, bs_digest *out);
/* Every part put hashed and its digest written; the first failure. */
bs_status bs_hasher_drain(bs_hasher *h);
/* The hasher's process (-1: ended), for a caller that watches it. */
int bs_hasher_pid(const bs_hasher *h);

#endif
