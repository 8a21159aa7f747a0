/* The clocks every part shares: the comm layer's durations, the flight
 * recorder's timestamps, the run record's timeline. */
#ifndef BS_CLOCK_H
#define BS_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds: every duration the comm layer measures. */
uint64_t bs_clock_mono_ns(void);

/* The flight recorder's clock: wall-clock nanoseconds as PyTorch's dumps carry
 * them, read as CLOCK_REALTIME once per process and advanced by
 * CLOCK_MONOTONIC since, so that it never steps and a monotonic time maps
 * onto it exactly (bs_clock_wall_at_ns): the timeline puts phases
 * (monotonic) and collectives on one clock. */
uint64_t bs_clock_wall_ns(void);
uint64_t bs_clock_wall_at_ns(uint64_t monotonic_ns);

/* How long the calling thread has been runnable but not running, in ns
 * (the kernel's run_delay, /proc/thread-self/schedstat); 0 where the
 * kernel does not say. */
uint64_t bs_clock_run_delay_ns(void);
/* How long the calling thread has run on a CPU, in ns (the same file's
 * first field); 0 where the kernel does not say. */
uint64_t bs_clock_on_cpu_ns(void);

#endif
