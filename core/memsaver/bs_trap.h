/* The paused-read trap (bs_trap.c): the guard a rank's work runs under,
 * the reads it caught, and the registry of live allocations its handler
 * reads. Below the memory saver, which registers its allocations here. */
#ifndef BS_TRAP_H
#define BS_TRAP_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_err.h"

#define BS_TAG_MAX 32 /* tag length limit, NUL included */

typedef enum bs_region_state { BS_ACTIVE = 0, BS_PAUSED } bs_region_state;

/* Paused-read detection. A rank's thread runs its work through
 * bs_trap_run(); a fault on a paused allocation of any
 * memory saver then records a bs_paused_read and unwinds that thread back to
 * the guard, which returns BS_ERR_PAUSED_READ with the error record filled
 * ("read of paused allocation <tag> at offset N in phase P"). */
typedef struct bs_paused_read {
  char tag[BS_TAG_MAX];
  size_t offset;
  char phase[32];
  int rank;
} bs_paused_read;

/* Guards nest (the innermost catches). An unwound fn's own cleanup does
 * not run. A fault that is not a paused read, or a paused read outside any
 * guard, goes to the previous SIGSEGV/SIGBUS disposition: a crash. */
typedef bs_status (*bs_trap_fn)(void *arg);
bs_status bs_trap_run(bs_trap_fn fn, void *arg);
/* Paused reads seen so far in this process (for the no-paused-reads oracle). */
size_t bs_trap_count(void);
bool bs_trap_get(size_t i, bs_paused_read *out);
void bs_trap_reset(void);

/* The registry the fault handler reads: every live memory-saver allocation
 * of the process, with its tag and its state as the trap sees it.
 * bs_memsaver.c is the writer; BS_ERR_NOMEM when the fixed table is full. */
bs_status bs_trap_register(const void *va, size_t bytes, const char *tag,
                           int *slot);
void bs_trap_set_state(int slot, bs_region_state s);
void bs_trap_unregister(int slot);

#endif
