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

#endif
