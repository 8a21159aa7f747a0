#include "comm/front/bs_watchdog.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "bs_clock.h"

struct bs_watchdog {
  int slots;
  uint64_t timeout_ns;
  uint64_t poll_ns;
  bs_watchdog_fire_fn fire;
  void (*tick)(void *ctx);
  void *ctx;
  _Atomic uint64_t *armed; /* monotonic ns when armed; 0: idle */
  _Atomic uint64_t held;   /* the last bs_watchdog_hold */
  atomic_bool fired;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool stop;     /* under mu */
  bool threaded; /* its thread runs (not a bs_watchdog_create one) */
  pthread_t thread;
};

static struct timespec ts_at(uint64_t ns) {
  return (struct timespec){.tv_sec = (time_t)(ns / 1000000000ull),
                           .tv_nsec = (long)(ns % 1000000000ull)};
}

/* The oldest armed slot past the timeout, or -1. */
static int overdue(bs_watchdog *wd, uint64_t now, uint64_t *armed_ns) {
  int worst = -1;
  for (int i = 0; i < wd->slots; i++) {
    uint64_t t = atomic_load(&wd->armed[i]);
    t = t ? bs_watchdog_since(wd, t) : 0;
    /* t > now: armed after now was read, not overdue (and no wrap). */
    if (t && t < now && now - t > wd->timeout_ns &&
        (worst < 0 || t < *armed_ns)) {
      worst = i;
      *armed_ns = t;
    }
  }
  return worst;
}

static void *watch(void *p) {
  bs_watchdog *wd = p;
  pthread_mutex_lock(&wd->mu);
  while (!wd->stop && !atomic_load(&wd->fired)) {
    struct timespec until = ts_at(bs_clock_mono_ns() + wd->poll_ns);
    pthread_cond_timedwait(&wd->cv, &wd->mu, &until);
    uint64_t armed_ns = 0;
    int slot = wd->stop ? -1 : overdue(wd, bs_clock_mono_ns(), &armed_ns);
    if (slot >= 0)
      atomic_store(&wd->fired, true);
    bool tick = wd->tick && slot < 0 && !wd->stop;
    if (slot < 0 && !tick)
      continue;
    /* Unlocked: the callbacks wake ranks, which may arm/disarm. */
    pthread_mutex_unlock(&wd->mu);
    if (tick)
      wd->tick(wd->ctx);
    else
      wd->fire(wd->ctx, slot, armed_ns);
    pthread_mutex_lock(&wd->mu);
  }
  pthread_mutex_unlock(&wd->mu);
  return NULL;
}

static void wd_free(bs_watchdog *wd) {
  pthread_cond_destroy(&wd->cv);
  pthread_mutex_destroy(&wd->mu);
  free(wd->armed);
  free(wd);
}

bs_status bs_watchdog_start(int slots, int timeout_ms, bs_watchdog_fire_fn fire,
                            void *ctx, bs_watchdog **out) {
  return bs_watchdog_start_ticking(slots, timeout_ms, fire, NULL, 0, ctx, out);
}

/* A tenth of the timeout: late by at most 10%, idle otherwise. */
static uint64_t poll_of(uint64_t timeout_ns, void (*tick)(void *ctx),
                        int period_ms) {
  uint64_t ns = timeout_ns / 10;
  if (ns < 1000000ull)
    ns = 1000000ull;
  if (ns > 100000000ull)
    ns = 100000000ull;
  if (tick && ns > (uint64_t)period_ms * 1000000ull)
    ns = (uint64_t)period_ms * 1000000ull;
  return ns;
}

bs_status bs_watchdog_create(int slots, int timeout_ms, bs_watchdog **out) {
  bs_status st = BS_OK;
  bs_watchdog *wd = NULL;
  pthread_condattr_t ca;
  if (slots <= 0 || timeout_ms <= 0 || !out)
    BS_FAIL(BS_ERR_INVALID, NULL, "watchdog: bad argument (%d slots, %d ms)",
            slots, timeout_ms);
  wd = calloc(1, sizeof *wd);
  if (!wd || !(wd->armed = calloc((size_t)slots, sizeof *wd->armed))) {
    free(wd);
    BS_FAIL(BS_ERR_NOMEM, NULL, "watchdog: out of memory");
  }
  wd->slots = slots;
  wd->timeout_ns = (uint64_t)timeout_ms * 1000000ull;
  pthread_mutex_init(&wd->mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&wd->cv, &ca);
  pthread_condattr_destroy(&ca);
  *out = wd;
out:
  return st;
}

bs_status bs_watchdog_start_ticking(int slots, int timeout_ms,
                                    bs_watchdog_fire_fn fire,
                                    void (*tick)(void *ctx), int period_ms,
                                    void *ctx, bs_watchdog **out) {
  bs_status st = BS_OK;
  bs_watchdog *wd = NULL;
  if (!fire || (tick && period_ms <= 0))
    BS_FAIL(BS_ERR_INVALID, NULL,
            "watchdog: bad argument (no callback, or a tick every %d ms)",
            period_ms);
  BS_CHECK(bs_watchdog_create(slots, timeout_ms, &wd));
  wd->poll_ns = poll_of(wd->timeout_ns, tick, period_ms);
  wd->tick = tick;
  wd->fire = fire;
  wd->ctx = ctx;
  /* Before the thread starts: its tick may hold the watchdog (*out). */
  *out = wd;
  if (pthread_create(&wd->thread, NULL, watch, wd) != 0) {
    wd_free(wd);
    BS_FAIL(BS_ERR_NOMEM, NULL, "watchdog: cannot start its thread");
  }
  wd->threaded = true;
out:
  /* Only a failure writes it again: the running tick may be reading it. */
  if (st != BS_OK && out)
    *out = NULL;
  return st;
}

void bs_watchdog_stop(bs_watchdog *wd) {
  if (!wd)
    return;
  pthread_mutex_lock(&wd->mu);
  wd->stop = true;
  pthread_cond_signal(&wd->cv);
  pthread_mutex_unlock(&wd->mu);
  if (wd->threaded)
    pthread_join(wd->thread, NULL);
  wd_free(wd);
}

void bs_watchdog_arm(bs_watchdog *wd, int slot) {
  if (wd && slot >= 0 && slot < wd->slots)
    atomic_store(&wd->armed[slot], bs_clock_mono_ns());
}

void bs_watchdog_disarm(bs_watchdog *wd, int slot) {
  if (wd && slot >= 0 && slot < wd->slots)
    atomic_store(&wd->armed[slot], 0);
}

void bs_watchdog_hold(bs_watchdog *wd, uint64_t at_ns) {
  if (!wd)
    return;
  uint64_t was = atomic_load(&wd->held);
  while (was < at_ns && !atomic_compare_exchange_weak(&wd->held, &was, at_ns))
    ;
}

uint64_t bs_watchdog_since(const bs_watchdog *wd, uint64_t armed_ns) {
  uint64_t held = wd ? atomic_load(&((bs_watchdog *)wd)->held) : 0;
  return held > armed_ns ? held : armed_ns;
}

bool bs_watchdog_fired(const bs_watchdog *wd) {
  return wd && atomic_load(&((bs_watchdog *)wd)->fired);
}
