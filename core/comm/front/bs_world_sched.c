/* How the world's ranks wait, and what time it is for them: under a
 * scheduler (bs_sched.h: one rank at a time, on virtual time) or as real
 * threads on the real clock. Every wait of the front and of the sim
 * backend goes through here, so that in a scheduled world none of them
 * waits on the OS. */
#include "comm/front/bs_comm_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bs_clock.h"
#include "comm/front/bs_futex.h"

/* The modelled cost of moving bytes: a latency and a bandwidth (10 GB/s,
 * a PCIe link's order: collectives and engine streams alike). */
enum { COST_LATENCY_NS = 5000, COST_BYTES_PER_NS = 10 };

/* The schedule named: the options', else BS_SCHEDULE's, else threads. */
static bs_status spec_of(const bs_world_opts *o, bs_sched_spec *spec) {
  const char *text = o->schedule ? o->schedule : getenv("BS_SCHEDULE");
  *spec = (bs_sched_spec){.seed = o->schedule_seed};
  if (!text || !*text)
    return BS_OK;
  return bs_sched_spec_parse(text, spec);
}

/* Only a world whose every rank is a thread of this process on a backend
 * that shares its results (the sim's) has one scheduler to see them all;
 * the others run real threads, whatever the schedule says (processes and
 * GPUs keep real time). */
static bool schedulable(const bs_world *w) {
  return w->be->shares && !w->o.abort_dir && w->o.global_size == w->o.size;
}

bs_status bs_world_sched_create(bs_world *w) {
  bs_status st = BS_OK;
  bs_sched_spec spec;
  BS_CHECK(spec_of(&w->o, &spec));
  if (!schedulable(w))
    spec.policy = BS_SCHED_THREADS;
  bs_sched_spec_format(&spec, w->sched_name, sizeof w->sched_name);
  if (spec.policy != BS_SCHED_THREADS)
    BS_CHECK(bs_sched_create(w->o.size, &spec, bs_clock_real_ns(), &w->sched));
out:
  return st;
}

/* The world's scheduler, where the calling thread is one of its ranks
 * (NULL: a real wait). */
static bs_sched *mine(const bs_world *w) {
  return w->sched && bs_sched_self() == w->sched ? w->sched : NULL;
}

uint64_t bs_world_sched_now(const bs_world *w) {
  return w->sched ? bs_sched_now(w->sched) : bs_clock_real_ns();
}

static void real_sleep(uint64_t ns) {
  struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                        .tv_nsec = (long)(ns % 1000000000ull)};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

void bs_world_sched_sleep(bs_world *w, uint64_t ns) {
  bs_sched *s = mine(w);
  if (s)
    bs_sched_sleep(s, ns);
  else
    real_sleep(ns);
}

void bs_world_sched_spend(bs_world *w, uint64_t ns) {
  bs_sched *s = mine(w);
  if (s)
    bs_sched_sleep(s, ns);
}

void bs_world_sched_yield(bs_world *w) {
  bs_sched *s = mine(w);
  if (s)
    bs_sched_yield(s);
}

uint64_t bs_world_sched_cost(size_t bytes) {
  return COST_LATENCY_NS + bytes / COST_BYTES_PER_NS;
}

void bs_world_sched_wait_key(bs_world *w, _Atomic uint32_t *word, uint32_t seen,
                             const void *key, uint64_t ns) {
  bs_sched *s = mine(w);
  if (!s) {
    bs_futex_wait(word, seen, ns);
    return;
  }
  if (atomic_load(word) != seen)
    return;
  uint64_t now = bs_sched_now(s);
  bs_sched_wait(s, key, ns < UINT64_MAX - now ? now + ns : UINT64_MAX - 1);
}

void bs_world_sched_wait(bs_world *w, _Atomic uint32_t *word, uint32_t seen,
                         uint64_t ns) {
  bs_world_sched_wait_key(w, word, seen, word, ns);
}

void bs_world_sched_signal(bs_world *w, _Atomic uint32_t *word,
                           const void *key) {
  if (!w->sched) {
    bs_futex_bump(word);
    return;
  }
  atomic_fetch_add(word, 1);
  bs_sched_notify(w->sched, key);
}

void bs_world_sched_bump(bs_world *w, _Atomic uint32_t *word) {
  bs_world_sched_signal(w, word, word);
}

void bs_world_sched_notify(bs_world *w, const void *key) {
  if (w->sched)
    bs_sched_notify(w->sched, key);
}

void bs_world_sched_until_failed(bs_world *w, uint64_t until_ns) {
  for (;;) {
    uint32_t seen = atomic_load(&w->failed_word);
    uint64_t now = bs_world_sched_now(w);
    if (atomic_load(&w->abort_st) != BS_OK || now >= until_ns)
      return;
    bs_world_sched_wait(w, &w->failed_word, seen, until_ns - now);
  }
}

bool bs_world_sched_outside(bs_world *w, bool out) {
  bs_sched *s = mine(w);
  if (!s)
    return false;
  bs_sched_outside(s, out);
  return true;
}

const char *bs_world_sched_name(const bs_world *w) {
  return w ? w->sched_name : "threads";
}

bool bs_world_sched_on(const bs_world *w) {
  return w && w->sched;
}

uint64_t bs_world_sched_steps(const bs_world *w) {
  return w && w->sched ? bs_sched_steps(w->sched) : 0;
}

uint64_t bs_world_sched_hash(const bs_world *w) {
  return w && w->sched ? bs_sched_hash(w->sched) : 0;
}
