#include "run/bs_child_threads.h"

#include <malloc.h>

#include "bs_fork.h"
#include "catalog/bs_scenario.h"
#include "driver/bs_driver.h"
#include "run/bs_child_judge.h"
#include "run/bs_hangdump.h"

static bool clean = true;

bool bs_child_threads_clean(void) {
  return clean;
}

/* No rank unwound: each freed what it held. */
static bool none_unwound(const bs_record *rec) {
  for (int r = 0; r < rec->nranks; r++)
    if (rec->rank[r].unwound)
      return false;
  return true;
}

/* Buffers from 32 KiB on get mappings of their own, unmapped when freed:
 * malloc's arenas keep a freed chunk's pages, and a buffer every rank of
 * a world holds at once (a weight-sync bucket's staging, a hash's copy of
 * the synced tensors) stayed resident for the rest of the run, under what
 * the ranks touched next: 50 KiB a rank of steady-maincast. */
#define OWN_MAPPING_BYTES (32 << 10)

/* Worlds of this many ranks and more hash their live digests on a spare
 * CPU (bs_hasher.h), where they take a large world's seconds; a small
 * world (fuzz's run in milliseconds) would pay the hasher's fork and
 * drain at every run, and on a busy worker the spare CPU is another
 * worker's. Else at once, by each rank. */
#define HASHER_RANKS 1024

static struct {
  cpu_set_t cpus;
  bool any;
} spare;

void bs_child_threads_spare(const cpu_set_t *cpus) {
  spare.any = cpus != NULL;
  if (cpus)
    spare.cpus = *cpus;
}

static bs_hasher *hasher_for(const bs_run *cfg) {
  bs_hasher *h = NULL;
  if (cfg->schedule.policy == BS_SCHED_THREADS || cfg->ranks < HASHER_RANKS ||
      !spare.any)
    return NULL;
  if (bs_hasher_start(&spare.cpus, &h) != BS_OK)
    bs_err_clear(); /* hashed at once, as in a smaller world */
  return h;
}

/* Every digest written before anything reads the record. */
static bs_status hasher_end(bs_record *rec, bs_status st) {
  if (!rec->hasher)
    return st;
  bs_status drained = bs_hasher_drain(rec->hasher);
  bs_hasher_stop(rec->hasher);
  rec->hasher = NULL;
  return st == BS_OK ? drained : st;
}

int bs_child_threads_run(const bs_run *cfg, int fd) {
  bs_record rec;
  bs_result res;
  bs_buf out = {0};
  if (bs_result_from_run(cfg, &res) != BS_OK)
    return 4;
  mallopt(M_MMAP_THRESHOLD, OWN_MAPPING_BYTES);
  /* A custom driver runs no ranks of its own: nothing for them to owe. */
  int ranks = cfg->scn->drive ? 0 : cfg->ranks;
  bs_status st = bs_record_init(&rec, ranks, cfg->cycles);
  /* The liveness oracle's wall-time check is for real threads: a
   * scheduled world stops at its deadline on its own clock (below), and
   * the wall time a loaded machine takes must not change the verdict. */
  if (cfg->schedule.policy == BS_SCHED_THREADS)
    rec.deadline_ms = cfg->deadline_s * 1e3;
  if (st == BS_OK)
    st = bs_hangdump_start(cfg, &rec, fd, NULL, NULL, NULL);
  /* A scheduled world stops at its deadline on its own clock. */
  bs_driver_set_deadline(bs_hangdump_past, NULL);
  if (st == BS_OK) {
    rec.hasher = hasher_for(cfg);
    st = hasher_end(&rec, bs_driver_run(cfg, &rec));
  }
  bs_driver_set_deadline(NULL, NULL);
  clean = st == BS_OK && none_unwound(&rec);
  if (st == BS_OK)
    st = bs_driver_inspect(cfg, &rec);
  rec.duration_ms = bs_record_now_ms(&rec);
  /* Past the deadline a dump may have the pipe: it ends the process. The
   * run claims it before judging, so the two never write the artifacts at
   * once (the parent's grace covers the rest). */
  bs_hangdump_end();
  bs_child_judge(cfg, st, &rec, &res);
  bs_result_pack(&out, &res);
  int ok = !out.oom && bs_fork_write_all(fd, out.s, out.len);
  bs_buf_free(&out);
  bs_result_free(&res);
  bs_record_free(&rec);
  return ok ? 0 : 5;
}
