#include "bs_clock.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "bs_task_local.h"

static _Thread_local const _Atomic uint64_t *virtual_now;
static _Thread_local uint64_t virtual_last; /* this thread's last read */
BS_TASK_LOCAL(virtual_last, NULL) /* a task's reads tick on from its own */

uint64_t bs_clock_real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A virtual read is a tick past the thread's last at least: the work
 * between two events of a rank is never nothing, so its events stay in
 * order (a phase's end before the next one's first collective), by more
 * than a double of wall-clock milliseconds resolves (some 0.25 us). */
uint64_t bs_clock_mono_ns(void) {
  if (!virtual_now)
    return bs_clock_real_ns();
  uint64_t v = atomic_load(virtual_now), next = virtual_last + BS_CLOCK_TICK_NS;
  virtual_last = v > next ? v : next;
  return virtual_last;
}

void bs_clock_set_virtual(const _Atomic uint64_t *now) {
  virtual_now = now;
  virtual_last = 0;
}

static pthread_once_t clock_once = PTHREAD_ONCE_INIT;
static uint64_t real_minus_mono; /* wall-clock ns minus monotonic ns */

static void clock_init(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t real = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  real_minus_mono = real - bs_clock_real_ns();
}

uint64_t bs_clock_wall_at_ns(uint64_t monotonic_ns) {
  pthread_once(&clock_once, clock_init);
  return monotonic_ns + real_minus_mono;
}

uint64_t bs_clock_wall_ns(void) {
  return bs_clock_wall_at_ns(bs_clock_mono_ns());
}

/* Field i (0: on a CPU, 1: runnable, waiting for one) of the calling
 * thread's schedstat. */
static uint64_t schedstat(int i) {
  char buf[96];
  unsigned long long f[2] = {0, 0};
  int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
  if (fd >= 0)
    close(fd);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  if (sscanf(buf, "%llu %llu", &f[0], &f[1]) != 2)
    return 0;
  return (uint64_t)f[i];
}

uint64_t bs_clock_run_delay_ns(void) {
  return schedstat(1);
}

uint64_t bs_clock_on_cpu_ns(void) {
  return schedstat(0);
}
