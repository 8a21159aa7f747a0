/* The sim's waits on a word that moves whenever what a waiter looks at may
 * have changed (an epoch): a waiter reads it before looking, and sleeps
 * only while it is unchanged, so a change made after the look (under a
 * lock or not: a world's failure is set without one) ends the sleep at
 * once. Not FUTEX_PRIVATE: a board may be shared by processes. */
#ifndef BS_FUTEX_H
#define BS_FUTEX_H

#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sleeps while *word is seen, at most ns. */
static inline void bs_futex_wait(_Atomic uint32_t *word, uint32_t seen,
                                 uint64_t ns) {
  struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                        .tv_nsec = (long)(ns % 1000000000ull)};
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT, seen, &ts, NULL, 0);
}

/* Moves the word and wakes every sleeper on it. */
static inline void bs_futex_bump(_Atomic uint32_t *word) {
  atomic_fetch_add(word, 1);
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Linux 6.16's process-private futex hash (prctl PR_FUTEX_HASH), here when
 * the headers are older. */
#ifndef PR_FUTEX_HASH
#define PR_FUTEX_HASH 78
#define PR_FUTEX_HASH_SET_SLOTS 1
#define PR_FUTEX_HASH_GET_SLOTS 2
#endif

/* Room in this process's futex hash for `waiters` sleeping threads. Since
 * Linux 6.16 a process hashes its private futexes (semaphores, mutexes)
 * into a table of its own, sized for min(threads, CPUs): 16 buckets on
 * the 2-core VM, so 16,384 rank threads asleep made every wake walk a
 * chain of 1,000 (a scheduled world's hand-over: 123 us rather than 15).
 * Four buckets a waiter, as the kernel sizes its own; a table is never
 * shrunk, and where the kernel has none to size (before 6.16) nothing
 * changes. */
static inline void bs_futex_hash_room(int waiters) {
  long have = prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_GET_SLOTS, 0, 0, 0);
  long want = 16;
  while (want < 4L * waiters)
    want *= 2;
  if (have >= 0 && have < want) /* 0: none yet */
    prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS, want, 0, 0);
}

#endif
