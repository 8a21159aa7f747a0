/* The world's crowd clock: how long more of its ranks wanted to run
 * (outside a collective: holding a turn, waiting for one, or running
 * without one once the world failed) than the machine has CPUs. A rank
 * off a CPU meanwhile waits for peers, or for a lock of a peer, that are
 * queued for a CPU: the simulator's cores shared by thousands of ranks,
 * where a real rank's peers each have their own. So it counts as waiting
 * for a CPU, in a phase's time (bs_comm_cpu_wait_ms_since) and in the
 * detection time (bs_world_detect_ms); a wait with no crowd behind it
 * (every peer blocked: a dead or stuck rank, a timeout) stays the rank's
 * own, which is what the containment expectations must still catch. Kept
 * only where the world takes turns (bs_world_turn). */
#ifndef BS_WORLD_CROWD_H
#define BS_WORLD_CROWD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct bs_world_crowd {
  int cpus;                  /* more ranks than this wanting to run: a crowd */
  _Atomic int wanting;       /* ranks outside a collective */
  pthread_mutex_t mu;        /* orders the clock's writers (crossings) */
  _Atomic uint64_t seq;      /* odd while a writer changes the fields below */
  _Atomic uint64_t acc_ns;   /* crowded time before since_ns */
  _Atomic uint64_t since_ns; /* 0: not crowded now */
} bs_world_crowd;

void bs_world_crowd_init(bs_world_crowd *k, int cpus);
void bs_world_crowd_fini(bs_world_crowd *k);
/* A rank begins or stops wanting to run (it leaves or enters a
 * collective's wait). */
void bs_world_crowd_want(bs_world_crowd *k, int delta);
/* Crowded time so far, monotonic: a wait's share is the difference. */
uint64_t bs_world_crowd_ns(const bs_world_crowd *k);

#endif
