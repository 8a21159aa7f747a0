/* A world's footprint against the machine's room (bs_footprint.h). */
#include "plan/bs_footprint.h"

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#include "bs_actor.h"
#include "bs_limits.h"
#include "comm/bs_comm.h"

#define GIB ((double)(1u << 30))
#define MIB ((double)(1u << 20))

/* Device and host bytes of a rank at its peak, a quarter more for the
 * pages they round up to: the bf16 params where elements live and the
 * Normal backuper's pinned copy of every tensor (MainCast keeps only the
 * extras'), and where ranks run at once, the larger of the train step's
 * fp32 grads and the weight sync's staging and gather of a bucket (their
 * padding to the world stays unbacked). A scheduled world's rank drops
 * these before it waits for its peers (bs_comm_reduce_scatter_made, the
 * sync's drops): they are one rank's at a time, not one a rank. */
static double state_bytes(const bs_config *cfg, double bytes, double bucket,
                          bool scheduled) {
  double copy = cfg->rematerialize ? 0 : bytes;
  double step = 2 * bytes, sync = 2 * bucket;
  double transient = scheduled ? 0 : step > sync ? step : sync;
  return 1.25 * (bytes + copy + transient);
}

bs_status bs_footprint_of(const bs_model_spec *m, const bs_config *cfg,
                          int ranks, bs_footprint_ranks as, bs_footprint *out) {
  bs_status st = BS_OK;
  double bytes = 0, largest = 0, padded = 0;
  bool spawn = as == BS_FOOTPRINT_SPAWN;
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < m->n; i++) {
    double b = (double)bs_tensor_bytes(&m->t[i]);
    bytes += b;
    largest = b > largest ? b : largest;
  }
  BS_CHECK(bs_actor_layout_numel(m, ranks, cfg, &padded));
  double bucket = (double)cfg->sim.update_buffer_bytes;
  bucket = bucket < bytes ? bucket : bytes;
  double engines =
      spawn || ranks <= BS_ENGINE_PROCS_MAX ? ranks : BS_ENGINE_PROCS_MAX;
  out->engines = engines * BS_FOOTPRINT_ENGINE_BYTES +
                 ranks * (BS_FOOTPRINT_ENGINE_RANK_BYTES + largest);
  out->per_rank =
      BS_FOOTPRINT_RANK_BYTES +
      (cfg->rematerialize ? BS_FOOTPRINT_MAINCAST_BYTES : 0) +
      BS_FOOTPRINT_TENSOR_BYTES * (double)m->n +
      state_bytes(cfg, bytes, bucket, as == BS_FOOTPRINT_SCHEDULED) +
      out->engines / ranks +
      (as == BS_FOOTPRINT_THREADS ? BS_FOOTPRINT_THREAD_BYTES : 0) +
      (spawn ? BS_FOOTPRINT_PROC_BYTES : 0);
  /* fp32 master and Adam's two moments, sharded; the world's process */
  out->shared = 12 * padded + (spawn ? 0 : BS_FOOTPRINT_WORLD_BYTES);
  out->bytes = ranks * out->per_rank + out->shared;
  /* At least (the rest is the run's to say): every rank's DDP param and
   * grad buffers, reserved whole, padding and all, and on threads, one
   * process for the world, every rank's stacks. */
  out->address =
      spawn ? 6 * padded
            : ranks * (6 * padded + (double)bs_world_stacks_reserve_bytes());
  /* Engine processes; a thread a rank, or a process; the parent, the
   * child, its watchdog and the hasher. */
  out->tasks = (long)engines + (as == BS_FOOTPRINT_SCHEDULED ? 1 : ranks) +
               (spawn ? ranks : 0) + 4;
  double maps = cfg->rematerialize ? BS_FOOTPRINT_RANK_MAPS_MAINCAST
                                   : BS_FOOTPRINT_RANK_MAPS;
  out->maps = (long)((spawn ? 1 : ranks) * maps) + BS_FOOTPRINT_MAPS;
  out->maps_guarded =
      (long)((spawn ? 1 : ranks) * BS_FOOTPRINT_RANK_MAPS_GUARDED) +
      BS_FOOTPRINT_MAPS;
out:
  return st;
}

/* The first number in path (-1: none; "max" is none too). */
static double read_number(const char *dir, const char *name) {
  char path[4200];
  double v = -1;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (f && fscanf(f, "%lf", &v) != 1)
    v = -1;
  if (f)
    fclose(f);
  return v;
}

static double meminfo_available(const char *meminfo) {
  FILE *f = fopen(meminfo, "r");
  char line[128];
  double kb = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
      break;
  if (f)
    fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

/* A limit this large is no limit (v1 writes 2^63 rounded to pages). */
#define NO_LIMIT ((double)(1ull << 60))

double bs_footprint_bytes_room(const char *cgdir, const char *meminfo, char *by,
                               size_t n) {
  static const char *const files[][3] = {
      {"memory.max", "memory.current", "cgroup memory.max"},
      {"memory.limit_in_bytes", "memory.usage_in_bytes",
       "cgroup memory.limit_in_bytes"},
  };
  double room = meminfo_available(meminfo);
  snprintf(by, n, "%s", room >= 0 ? "MemAvailable" : "");
  for (size_t i = 0; cgdir && i < sizeof files / sizeof files[0]; i++) {
    double lim = read_number(cgdir, files[i][0]);
    double used = read_number(cgdir, files[i][1]);
    if (lim < 0 || lim >= NO_LIMIT || used < 0)
      continue;
    double left = lim > used ? lim - used : 0;
    if (room < 0 || left < room) {
      room = left;
      snprintf(by, n, "%s", files[i][2]);
    }
  }
  return room < 0 ? 0 : room;
}

/* This process's memory cgroup folder: v2's "0::/p", v1's "N:memory:/p",
 * under the mount, or the mount itself when p is not visible there. */
static void memory_cgroup(char *dir, size_t n) {
  FILE *f = fopen("/proc/self/cgroup", "r");
  char line[4096], p[4200];
  struct stat sb;
  snprintf(dir, n, "/sys/fs/cgroup");
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    const char *root = NULL, *path = NULL;
    if (strncmp(line, "0::", 3) == 0) {
      root = "/sys/fs/cgroup";
      path = line + 3;
    } else if (strstr(line, ":memory:")) {
      root = "/sys/fs/cgroup/memory";
      path = strstr(line, ":memory:") + strlen(":memory:");
    }
    if (!root)
      continue;
    snprintf(p, sizeof p, "%s%s", root, path);
    snprintf(dir, n, "%s", stat(p, &sb) == 0 ? p : root);
    if (path != line + 3) /* v1's memory controller wins (a hybrid host) */
      break;
  }
  if (f)
    fclose(f);
}

/* Threads in use on the machine (/proc/loadavg's running/total). */
static long tasks_in_use(void) {
  FILE *f = fopen("/proc/loadavg", "r");
  long running = 0, total = 0;
  if (f && fscanf(f, "%*f %*f %*f %ld/%ld", &running, &total) != 2)
    total = 0;
  if (f)
    fclose(f);
  return total;
}

static void lower_tasks(bs_room *r, double limit, const char *by) {
  long left = (long)limit - tasks_in_use();
  if (limit <= 0 || limit >= NO_LIMIT)
    return;
  left = left > 0 ? left : 0;
  if (r->tasks == 0 || left < r->tasks) {
    r->tasks = left;
    snprintf(r->tasks_by, sizeof r->tasks_by, "%s", by);
  }
}

/* Whether madvise installs guard regions here (Linux 6.13). */
static bool has_guards(void) {
  long page = sysconf(_SC_PAGESIZE);
  void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return false;
  bool ok = madvise(p, (size_t)page, MADV_GUARD_INSTALL) == 0;
  munmap(p, (size_t)page);
  return ok;
}

/* RLIMIT_AS less what this process maps now (/proc/self/statm's size);
 * 0: no limit. */
static double address_room(void) {
  struct rlimit rl;
  double pages = 0;
  if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
    return 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f && fscanf(f, "%lf", &pages) != 1)
    pages = 0;
  if (f)
    fclose(f);
  double left = (double)rl.rlim_cur - pages * (double)sysconf(_SC_PAGESIZE);
  return left > 1 ? left : 1;
}

void bs_footprint_room(bs_room *out) {
  char cg[4400];
  struct rlimit rl;
  memset(out, 0, sizeof *out);
  memory_cgroup(cg, sizeof cg);
  out->bytes = bs_footprint_bytes_room(cg, "/proc/meminfo", out->bytes_by,
                                       sizeof out->bytes_by);
  lower_tasks(out, read_number("/proc/sys/kernel", "pid_max"),
              "kernel.pid_max");
  lower_tasks(out, read_number("/proc/sys/kernel", "threads-max"),
              "kernel.threads-max");
  if (getrlimit(RLIMIT_NPROC, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    lower_tasks(out, (double)rl.rlim_cur, "RLIMIT_NPROC");
  double maps = read_number("/proc/sys/vm", "max_map_count");
  out->maps = maps > 0 ? (long)maps : 0;
  out->guards = has_guards();
  out->address = address_room();
}

static long maps_of(const bs_footprint *fp, const bs_room *room) {
  return room->guards ? fp->maps_guarded : fp->maps;
}

int bs_footprint_largest(const bs_model_spec *m, const bs_config *cfg,
                         bs_footprint_ranks as, const bs_room *room) {
  int lo = 0, hi = BS_WORLD_MAX_RANKS; /* lo fits (0: trivially), hi+1 not */
  while (lo < hi) {
    int mid = lo + (hi - lo + 1) / 2;
    bs_footprint fp;
    if (bs_footprint_of(m, cfg, mid, as, &fp) == BS_OK &&
        bs_footprint_fits(&fp, room, NULL, 0))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

bool bs_footprint_fits(const bs_footprint *fp, const bs_room *room, char *buf,
                       size_t n) {
  if (room->bytes > 0 && fp->bytes > room->bytes) {
    snprintf(buf, n,
             "needs %.2f GiB of host memory (%.2f MiB a rank + %.2f GiB "
             "shared), %.2f GiB available (%s)",
             fp->bytes / GIB, fp->per_rank / MIB, fp->shared / GIB,
             room->bytes / GIB, room->bytes_by);
    return false;
  }
  if (room->tasks > 0 && fp->tasks > room->tasks) {
    snprintf(buf, n,
             "needs %ld threads and processes (its ranks', its engines'), "
             "%ld free (%s)",
             fp->tasks, room->tasks, room->tasks_by);
    return false;
  }
  if (room->maps > 0 && maps_of(fp, room) > room->maps) {
    snprintf(buf, n,
             "needs some %ld memory mappings in one process (a rank's stack "
             "and device allocations), vm.max_map_count allows %ld",
             maps_of(fp, room), room->maps);
    return false;
  }
  if (room->address > 0 && fp->address > room->address) {
    snprintf(buf, n,
             "needs at least %.2f GiB of address space in one process (its "
             "ranks' stacks and DDP buffers), RLIMIT_AS (ulimit -v) leaves "
             "%.2f GiB",
             fp->address / GIB, room->address / GIB);
    return false;
  }
  return true;
}
