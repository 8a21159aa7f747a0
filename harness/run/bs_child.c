#include "run/bs_child.h"

#include <sched.h>

#include "report/bs_artifacts.h"
#include "run/bs_child_part.h"
#include "run/bs_child_spawn.h"
#include "run/bs_child_threads.h"
#include "sync/bs_engine_keep.h"

/* Engines kept idle in a worker at most: the largest world of the suites
 * and campaigns, with room. */
#define KEPT_ENGINES 64

/* A worker's CPUs: every one it may use, and its own among them (-1:
 * none: not a worker). */
static struct {
  cpu_set_t allowed;
  int own;
} cpus = {.own = -1};

void bs_child_start(int slot) {
  bs_engine_keep(KEPT_ENGINES);
  if (sched_getaffinity(0, sizeof cpus.allowed, &cpus.allowed) != 0)
    return;
  int n = CPU_COUNT(&cpus.allowed), k = n ? slot % n : 0;
  for (int c = 0; c < CPU_SETSIZE && cpus.own < 0; c++)
    if (CPU_ISSET(c, &cpus.allowed) && k-- == 0)
      cpus.own = c;
}

/* A scheduled world runs one rank at a time: its threads, and the engines
 * they start, share the worker's own CPU, so that a hand-over from one to
 * the next stays on it (waking a thread on another CPU costs an interrupt
 * there: some 40% of such a run's time on the 2-core VM). Real threads get
 * every CPU back. Threads created from here on inherit it. */
static void place(const bs_run *cfg) {
  cpu_set_t one;
  if (cpus.own < 0)
    return;
  CPU_ZERO(&one);
  CPU_SET(cpus.own, &one);
  bool scheduled = cfg->schedule.policy != BS_SCHED_THREADS;
  sched_setaffinity(0, sizeof one, scheduled ? &one : &cpus.allowed);
}

/* The CPUs a worker may use besides its own: where work beside its
 * scheduled world goes (its digests: bs_hasher.h). False when there is
 * none, or this is not a worker. */
static bool spare_cpus(cpu_set_t *out) {
  if (cpus.own < 0)
    return false;
  *out = cpus.allowed;
  CPU_CLR(cpus.own, out);
  return CPU_COUNT(out) > 0;
}

bool bs_child_keep(int code) {
  return code == 0 && bs_child_threads_clean() && bs_engine_keep_busy() == 0;
}

int bs_child_run(const bs_run *cfg, int fd) {
  /* Process 0 empties the run's folder before any process writes to it
   * (the others write theirs only at a deadline, long after). A folder
   * that cannot be emptied fails the writes that follow, which say so. */
  if (cfg->proc == 0 && bs_artifacts_clear(cfg) != BS_OK)
    bs_err_clear();
  if (cfg->spawn)
    return bs_child_spawn_run(cfg, fd);
  if (cfg->rendezvous)
    return bs_child_part_run(cfg, fd, NULL);
  place(cfg);
  cpu_set_t spare;
  bs_child_threads_spare(spare_cpus(&spare) ? &spare : NULL);
  return bs_child_threads_run(cfg, fd);
}
