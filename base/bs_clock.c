#include "bs_clock.h"

#include <pthread.h>
#include <time.h>

uint64_t bs_clock_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static pthread_once_t clock_once = PTHREAD_ONCE_INIT;
static uint64_t real_minus_mono; /* wall-clock ns minus monotonic ns */

static void clock_init(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t real = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
  real_minus_mono = real - bs_clock_mono_ns();
}

uint64_t bs_clock_wall_at_ns(uint64_t monotonic_ns) {
  pthread_once(&clock_once, clock_init);
  return monotonic_ns + real_minus_mono;
}

uint64_t bs_clock_wall_ns(void) {
  return bs_clock_wall_at_ns(bs_clock_mono_ns());
}
