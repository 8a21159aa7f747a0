/* A world's failure shared with the worlds of the other processes of one
 * job (process-per-rank runs): NCCL has no deadlock detector and a process
 * cannot see another's ranks, so a world that fails publishes a note in a
 * shared folder, and every other process's watchdog thread, finding one,
 * fails its own world too: all ranks stop at once, as a launcher's agent
 * tears a job down. Every failed world publishes exactly one note: its own
 * failure (original), or that it follows another's. Once every process's
 * note is in, each process picks the same winner from the same originals
 * (bs_abort_best), so every rank of the job ends with one status and one
 * cause, whichever note a process happened to read first. Internal to the
 * communicator. */
#ifndef BS_ABORT_H
#define BS_ABORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_err.h"

typedef struct bs_abort_note {
  bs_status st;
  uint64_t real_ns; /* CLOCK_REALTIME of the stall (one clock per host) */
  int first, size;  /* the publishing world's ranks */
  bool follows;     /* this world failed because of another's note */
  uint64_t done;    /* the last collective of the world communicator every
                       rank of the publishing world completed */
  uint32_t torn;    /* the teardowns of that communicator every one of
                       them completed */
  char cause[256];
} bs_abort_note;

/* Writes dir/abort.<first>, whole or not at all. */
bs_status bs_abort_publish(const char *dir, const bs_abort_note *n);

/* The original note of another world than the one whose first rank is
 * own_first (the lowest first rank when several): false when there is
 * none. A file that does not parse is not a note. */
bool bs_abort_find(const char *dir, int own_first, bs_abort_note *out);

/* Every note in dir, up to max; returns how many were read. */
size_t bs_abort_collect(const char *dir, bs_abort_note *out, size_t max);

/* The note every process settles on: among the originals, the most severe
 * status (a rank that died explains a desync or a timeout it caused, not
 * the other way round), then the lowest first rank. NULL when n holds no
 * original. */
const bs_abort_note *bs_abort_best(const bs_abort_note *notes, size_t n);

/* CLOCK_REALTIME in nanoseconds. */
uint64_t bs_abort_real_ns(void);

#endif
