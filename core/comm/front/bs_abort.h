/* A world's failure shared with the worlds of the other processes of one
 * job (process-per-rank runs): NCCL has no deadlock detector and a process
 * cannot see another's ranks, so the first failure a process sees (a rank
 * that died, a timeout) is published as a note in a shared folder, and
 * every other process's watchdog thread, finding it, fails its own world
 * with the same status: all ranks then stop at once, and alike, as a
 * launcher's agent tears a job down. Internal to the communicator. */
#ifndef BS_ABORT_SHARE_H
#define BS_ABORT_SHARE_H

#include <stdbool.h>
#include <stdint.h>

#include "bs_err.h"

typedef struct bs_abort_note {
  bs_status st;
  uint64_t real_ns; /* CLOCK_REALTIME of the stall (one clock per host) */
  int first, size;  /* the publishing world's ranks */
  char cause[256];
} bs_abort_note;

/* Writes dir/abort.<first>, whole or not at all. */
bs_status bs_abort_publish(const char *dir, const bs_abort_note *n);

/* The note of another world than the one whose first rank is own_first
 * (the lowest first rank when several): false when there is none. A file
 * that does not parse is not a note. */
bool bs_abort_find(const char *dir, int own_first, bs_abort_note *out);

/* CLOCK_REALTIME in nanoseconds. */
uint64_t bs_abort_real_ns(void);

#endif
