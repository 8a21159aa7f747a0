/* The clocks every part shares: the comm layer's durations, the flight
 * recorder's timestamps, the run record's timeline. */
#ifndef BS_CLOCK_H
#define BS_CLOCK_H

#include <stdatomic.h>
#include <stdint.h>

/* The calling thread's clock in nanoseconds: every duration the comm layer
 * and the run record measure. CLOCK_MONOTONIC, or on a rank of a scheduled
 * world the virtual clock its scheduler advances (bs_sched.h), so that
 * whatever a rank times is a function of the run's seed; there each read
 * is BS_CLOCK_TICK_NS past the thread's last one at least. */
uint64_t bs_clock_mono_ns(void);
#define BS_CLOCK_TICK_NS 1000
/* CLOCK_MONOTONIC in nanoseconds, on every thread: the real time a process
 * spends (phase spans, real-time bounds). */
uint64_t bs_clock_real_ns(void);
/* The calling thread reads bs_clock_mono_ns from *now from here on (NULL:
 * CLOCK_MONOTONIC again). */
void bs_clock_set_virtual(const _Atomic uint64_t *now);

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
