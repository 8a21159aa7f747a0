/* What a world costs the machine, estimated before it runs, and what the
 * machine has: a world that would not fit is a usage error naming both
 * and the largest world that fits, never a run the OOM killer ends (or a
 * fork that fails half-way for want of tasks).
 *
 * A rank of a host-device world is a fiber (or a thread) with its device
 * memory where elements live (the DDP param and grad buffers' padding
 * stays unbacked), its backups, its optimizer shard, the weight sync's
 * staging, and its share of a rollout-engine process (one per rank up to
 * BS_ENGINE_PROCS_MAX ranks, shared above); a rank of a --spawn world is
 * a process of its own, with an engine of its own. The fixed parts are
 * measured (docs/performance.md, "What a world needs"). */
#ifndef BS_FOOTPRINT_H
#define BS_FOOTPRINT_H

#include <stdbool.h>
#include <stddef.h>

#include "model/bs_config.h"
#include "model/bs_model.h"

/* Fitted to the peaks of 1,024, 4,096 and 16,384 ranks of six scenarios
 * on the 2-core VM (docs/performance.md, "What a world needs"), 7% to 60%
 * above each: what a scheduled rank costs besides its model state (its
 * fiber's stack, flight ring, run record, fault counters, a few device
 * pages), what MainCast adds (its rebuild's plan and staging, the extras'
 * backuper), what each tensor adds (its digests at each phase, backup
 * slots), what a real thread adds (--schedule threads: its stack pages
 * and TLS), what a world's process holds once (the hasher's ring, the
 * libraries), an engine process's own pages and what each rank it serves
 * adds to them (besides the largest tensor it receives), a --spawn rank
 * process. */
#define BS_FOOTPRINT_RANK_BYTES ((double)(36 << 10))
#define BS_FOOTPRINT_MAINCAST_BYTES ((double)(52 << 10))
#define BS_FOOTPRINT_TENSOR_BYTES ((double)(3 << 9))
#define BS_FOOTPRINT_THREAD_BYTES ((double)(24 << 10))
#define BS_FOOTPRINT_WORLD_BYTES ((double)(16 << 20))
#define BS_FOOTPRINT_ENGINE_BYTES ((double)(128 << 10))
#define BS_FOOTPRINT_ENGINE_RANK_BYTES ((double)(2 << 10))
#define BS_FOOTPRINT_PROC_BYTES ((double)(4 << 20))
/* Memory mappings a rank thread holds at most (its stack and guard, and
 * the host device's allocations, each its own while the protections of
 * its neighbours differ), measured at 256 and 1024 ranks of the tiny
 * model: 2.4 (rank-divergence) and 3.1 (steady-normal) with the Normal
 * backuper, 6.3 with MainCast (its param buffer paused without a host
 * copy); plus what the process maps besides (libraries, heaps). A world's
 * threads share one process's vm.max_map_count. */
#define BS_FOOTPRINT_RANK_MAPS 3.5
#define BS_FOOTPRINT_RANK_MAPS_MAINCAST 7.0
#define BS_FOOTPRINT_MAPS 1000
/* The same where the kernel has guard regions (Linux 6.13): the rank
 * stacks are one mapping (bs_world_stacks.h) and paused device memory
 * splits none (bs_dev_host.c), 98 mappings in all at 1024 MainCast ranks;
 * a sanitizer's build keeps glibc's stacks, a mapping and a guard each. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define BS_FOOTPRINT_RANK_MAPS_GUARDED 2.5
#else
#define BS_FOOTPRINT_RANK_MAPS_GUARDED 0.5
#endif

typedef struct bs_footprint {
  double per_rank;   /* bytes one rank costs */
  double shared;     /* bytes the world holds once (the optimizer's state) */
  double bytes;      /* ranks x per_rank + shared */
  double engines;    /* of bytes, what the engine processes hold */
  long tasks;        /* threads and processes the world starts */
  long maps;         /* memory mappings of the process of its threads */
  long maps_guarded; /* the same where the kernel has guard regions */
  double address;    /* bytes of address space its largest process takes
                        at least: its ranks' DDP buffers and stacks */
} bs_footprint;

/* What a world's ranks are: fibers of one thread under the scheduler
 * (the default), real threads (--schedule threads), or a process each
 * (--spawn). */
typedef enum bs_footprint_ranks {
  BS_FOOTPRINT_SCHEDULED = 0,
  BS_FOOTPRINT_THREADS,
  BS_FOOTPRINT_SPAWN
} bs_footprint_ranks;

/* The footprint of a world of `ranks` ranks of model m laid out as cfg
 * says (DDP buckets, the weight sync's bucket). BS_ERR_INVALID when the
 * model does not lay out over `ranks`. */
bs_status bs_footprint_of(const bs_model_spec *m, const bs_config *cfg,
                          int ranks, bs_footprint_ranks as, bs_footprint *out);

/* What this machine gives now. */
typedef struct bs_room {
  double bytes;      /* 0: unknown */
  char bytes_by[64]; /* "MemAvailable", "cgroup memory.max", ... */
  long tasks;        /* 0: unknown */
  char tasks_by[64]; /* "kernel.pid_max", "RLIMIT_NPROC", ... */
  long maps;         /* a process's mappings (vm.max_map_count); 0: unknown */
  bool guards;       /* the kernel has guard regions (MADV_GUARD_INSTALL) */
  double address;    /* RLIMIT_AS (ulimit -v) less this process's size; 0:
                        no limit */
} bs_room;
void bs_footprint_room(bs_room *out);
/* The lower of the cgroup's room (v2 memory.max - memory.current, v1
 * memory.limit_in_bytes - memory.usage_in_bytes, under root) and
 * MemAvailable (in meminfo, a /proc/meminfo text); 0 when neither says.
 * *by names the one that won. */
double bs_footprint_bytes_room(const char *root, const char *meminfo, char *by,
                               size_t n);

/* The largest world of m (up to BS_WORLD_MAX_RANKS) whose footprint fits
 * the room; 0 when not even one rank does. */
int bs_footprint_largest(const bs_model_spec *m, const bs_config *cfg,
                         bs_footprint_ranks as, const bs_room *room);

/* Whether fp fits room; when not, why in buf (NULL with n 0: not said)
 * ("needs 21.3 GiB (16384 ranks x 1.3 MiB + 0.1 GiB), 20.1 GiB available
 * (MemAvailable)"). */
bool bs_footprint_fits(const bs_footprint *fp, const bs_room *room, char *buf,
                       size_t n);

#endif
