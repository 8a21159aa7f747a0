/* The stacks of a world's rank threads: one mapping for them all, each
 * rank's block [guard][signal stack][guard][stack], the guards lightweight
 * guard regions (madvise MADV_GUARD_INSTALL, Linux 6.13), which fault as
 * PROT_NONE does but split no mapping. glibc gives each thread a mapping
 * of its own and a guard that is another: two of a process's
 * vm.max_map_count (65,530) a rank, 32,768 of a 16,384-rank world's. The
 * signal stack is where the paused-read trap's handler runs (bs_trap.c
 * takes the one a thread has): its pages are touched only by a signal,
 * where one malloc'ed a rank landed on pages other ranks had used and
 * freed (0.67 GiB of a 16,384-rank world). Pages of a stack never touched
 * cost nothing, so the stack can be as deep as a sanitizer needs.
 *
 * Where the kernel has no guard regions, each thread gets glibc's stack
 * of the same size, and the trap its own signal stack. Internal to the
 * front. */
#ifndef BS_WORLD_STACKS_H
#define BS_WORLD_STACKS_H

#include <pthread.h>
#include <signal.h>

#include "bs_err.h"

typedef struct bs_world_stacks bs_world_stacks;

/* The stacks of n rank threads; *out NULL (and BS_OK) where the kernel
 * has no guard regions: glibc's then. */
bs_status bs_world_stacks_create(int n, bs_world_stacks **out);
void bs_world_stacks_destroy(bs_world_stacks *s);
/* attr (initialised) gives a thread rank i's stack (s NULL: glibc's, of
 * the same size). */
void bs_world_stacks_attr(const bs_world_stacks *s, int i,
                          pthread_attr_t *attr);
/* On rank i's thread, first: its signal stack (nothing with s NULL), the
 * thread's old one into *old (NULL: not kept), for a thread that runs on
 * (fibers) to take back (bs_world_stacks_leave). */
void bs_world_stacks_enter(const bs_world_stacks *s, int i, stack_t *old);
void bs_world_stacks_leave(const stack_t *old);
/* Rank i's stack (s not NULL): its lowest address, its size into *size. */
void *bs_world_stacks_get(const bs_world_stacks *s, int i, size_t *size);

#endif
