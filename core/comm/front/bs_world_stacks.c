/* The stacks of a world's rank threads (bs_world_stacks.h). */
#include "comm/front/bs_world_stacks.h"
#include "comm/bs_comm.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

/* A rank's thread touches 32 KiB of its stack at most, its TLS and
 * thread block (16 KiB in a CUDA build) included: every scenario at 4 and
 * 1024 ranks, @fault, a fuzz seed, the replays of tests/data/fr. 256 KiB
 * is 16 times its deepest frames; 16,384 threads of glibc's 8 MiB would
 * reserve 128 GiB of address space (a ulimit -v or a process cgroup's
 * guard refuses that). Under a sanitizer, whose frames are larger, rank
 * threads keep glibc's stacks and the sanitizer's signal stack, and only
 * fibers run here, on 1 MiB. The signal stack is the trap's size
 * (bs_trap.c). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#define RANK_STACK_BYTES ((size_t)1 << 20)
#else
#define SANITIZED 0
#define RANK_STACK_BYTES ((size_t)256 << 10)
#endif
#define SIGNAL_STACK_BYTES ((size_t)64 << 10)

struct bs_world_stacks {
  char *base;
  size_t page, block, len;
};

/* Rank i's block: [guard][signal stack][guard][stack]. */
static char *block_of(const bs_world_stacks *s, int i) {
  return s->base + (size_t)i * s->block;
}

static char *signal_stack_of(const bs_world_stacks *s, int i) {
  return block_of(s, i) + s->page;
}

static char *stack_of(const bs_world_stacks *s, int i) {
  return signal_stack_of(s, i) + SIGNAL_STACK_BYTES + s->page;
}

/* Both guards of every block; false where the kernel has none. */
static bool guard_all(const bs_world_stacks *s, int n) {
  for (int i = 0; i < n; i++)
    if (madvise(block_of(s, i), s->page, MADV_GUARD_INSTALL) != 0 ||
        madvise(stack_of(s, i) - s->page, s->page, MADV_GUARD_INSTALL) != 0)
      return false;
  return true;
}

bs_status bs_world_stacks_create(int n, bs_world_stacks **out) {
  bs_status st = BS_OK;
  bs_world_stacks *s = NULL;
  long page = sysconf(_SC_PAGESIZE);
  *out = NULL;
  if (page <= 0)
    goto out;
  if (!(s = calloc(1, sizeof *s)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "world: stacks of %d ranks", n);
  s->page = (size_t)page;
  s->block = bs_world_stacks_reserve_bytes();
  s->len = (size_t)n * s->block;
  s->base =
      mmap(NULL, s->len, PROT_READ | PROT_WRITE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (s->base == MAP_FAILED) {
    s->base = NULL;
    BS_FAIL(BS_ERR_NOMEM, NULL,
            "world: %.2f GiB of address space for the stacks of %d ranks: "
            "%s",
            (double)s->len / (1u << 30), n, strerrordesc_np(errno));
  }
  madvise(s->base, s->len, MADV_NOHUGEPAGE); /* a huge page a rank: no */
  if (!guard_all(s, n))
    goto out; /* before Linux 6.13: glibc's stacks */
  *out = s;
  s = NULL;
out:
  bs_world_stacks_destroy(s);
  return st;
}

void bs_world_stacks_destroy(bs_world_stacks *s) {
  if (!s)
    return;
#ifdef __SANITIZE_ADDRESS__ /* fibers' frames left poisoned: clean them */
  if (s->base)
    __asan_unpoison_memory_region(s->base, s->len);
#endif
  if (s->base)
    munmap(s->base, s->len);
  free(s);
}

void bs_world_stacks_attr(const bs_world_stacks *s, int i,
                          pthread_attr_t *attr) {
  if (SANITIZED)
    return;
  if (s)
    pthread_attr_setstack(attr, stack_of(s, i), RANK_STACK_BYTES);
  else
    pthread_attr_setstacksize(attr, RANK_STACK_BYTES);
}

size_t bs_world_stacks_reserve_bytes(void) {
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0)
    return 0;
  return 2 * (size_t)page + SIGNAL_STACK_BYTES + RANK_STACK_BYTES;
}

void bs_world_stacks_enter(const bs_world_stacks *s, int i, stack_t *old) {
  stack_t ss = {.ss_size = SIGNAL_STACK_BYTES};
  if (old)
    *old = (stack_t){.ss_flags = SS_DISABLE};
  if (!s || SANITIZED)
    return;
  ss.ss_sp = signal_stack_of(s, i);
  sigaltstack(&ss, old);
}

void bs_world_stacks_leave(const stack_t *old) {
  if (!SANITIZED)
    sigaltstack(old, NULL);
}

void *bs_world_stacks_get(const bs_world_stacks *s, int i, size_t *size) {
  *size = RANK_STACK_BYTES;
  return stack_of(s, i);
}
