/* The world's crowd clock (bs_world_crowd.h). Ranks cross the CPU count
 * rarely (a 16,384-rank round: as the last ranks arrive, and as the round
 * wakes them all), so only a crossing takes the lock; readers never do (a
 * sequence count, as a seqlock). */
#include "comm/front/bs_world_crowd.h"

#include "bs_clock.h"

void bs_world_crowd_init(bs_world_crowd *k, int cpus) {
  k->cpus = cpus < 1 ? 1 : cpus;
  atomic_init(&k->wanting, 0);
  atomic_init(&k->seq, 0);
  atomic_init(&k->acc_ns, 0);
  atomic_init(&k->since_ns, 0);
  pthread_mutex_init(&k->mu, NULL);
}

void bs_world_crowd_fini(bs_world_crowd *k) {
  pthread_mutex_destroy(&k->mu);
}

/* Locked: the clock runs while more ranks want to run than there are
 * CPUs, looked at again under the lock (crossings may race). */
static void recheck(bs_world_crowd *k) {
  bool crowded = atomic_load(&k->wanting) > k->cpus;
  uint64_t since = atomic_load(&k->since_ns);
  if (crowded == (since != 0))
    return;
  uint64_t now = bs_clock_mono_ns();
  atomic_fetch_add(&k->seq, 1);
  if (crowded) {
    atomic_store(&k->since_ns, now ? now : 1);
  } else {
    atomic_fetch_add(&k->acc_ns, now > since ? now - since : 0);
    atomic_store(&k->since_ns, 0);
  }
  atomic_fetch_add(&k->seq, 1);
}

void bs_world_crowd_want(bs_world_crowd *k, int delta) {
  int was = atomic_fetch_add(&k->wanting, delta);
  int now = was + delta;
  if ((was > k->cpus) == (now > k->cpus))
    return;
  pthread_mutex_lock(&k->mu);
  recheck(k);
  pthread_mutex_unlock(&k->mu);
}

uint64_t bs_world_crowd_ns(const bs_world_crowd *k) {
  for (;;) {
    uint64_t s0 = atomic_load(&k->seq);
    uint64_t acc = atomic_load(&k->acc_ns);
    uint64_t since = atomic_load(&k->since_ns);
    if (s0 & 1 || atomic_load(&k->seq) != s0)
      continue;
    uint64_t now = bs_clock_mono_ns();
    return acc + (since && now > since ? now - since : 0);
  }
}
