#include "run/bs_nccl_plan.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bs_fork.h"
#include "bs_num.h"
#include "bs_stop.h"
#include "catalog/bs_launcher.h"
#include "catalog/bs_scenario.h"
#include "comm/bs_comm.h"
#include "dev/bs_dev.h"

enum { PROBE_MS = 30000 };

typedef struct probe {
  bs_status st;
  bs_nccl_info info;
  int cuda_gpus; /* what the cuda device sees, NCCL or not */
  char why[256]; /* why NCCL did not load, when st says so */
} probe;

static bool read_probe(int fd, probe *p) {
  struct pollfd pf = {.fd = fd, .events = POLLIN};
  size_t got = 0;
  while (got < sizeof *p) {
    int r = poll(&pf, 1, PROBE_MS);
    if (r < 0 && errno == EINTR && !bs_stop_signal())
      continue; /* a signal that stops the command ends the wait too */
    if (r <= 0)
      return false;
    ssize_t k = read(fd, (char *)p + got, sizeof *p - got);
    if (k <= 0)
      return false;
    got += (size_t)k;
  }
  return true;
}

/* NCCL and the GPUs as a fresh process sees them. */
static bool ask(probe *p) {
  int fds[2];
  if (pipe(fds) != 0)
    return false;
  fflush(NULL);
  pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    bs_stop_child(parent);
    close(fds[0]);
    probe q = {.st = bs_world_nccl_info(&q.info)};
    snprintf(q.why, sizeof q.why, "%s", bs_err()->message);
    q.cuda_gpus = bs_dev_cuda_count();
    bs_fork_exit(bs_fork_write_all(fds[1], &q, sizeof q) ? 0 : 1);
  }
  close(fds[1]);
  bool ok = pid > 0 && read_probe(fds[0], p);
  close(fds[0]);
  if (pid > 0) {
    if (!ok)
      kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
  return ok;
}

/* Processes of this job on this host: the launcher's local size when it
 * says, else every process of the job. */
static int host_procs(const bs_run *c) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE",
                                     "MPI_LOCALNRANKS", "LOCAL_WORLD_SIZE",
                                     "SLURM_NTASKS_PER_NODE"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    int n;
    if (bs_num_int(getenv(vars[i]), 1, INT_MAX, &n))
      return n;
  }
  return c->nprocs > 0 ? c->nprocs : 1;
}

bs_status bs_nccl_plan_shared_gpu(int on_host, const bs_nccl_info *in) {
  if (on_host <= in->gpus)
    return BS_OK;
  if (in->version < BS_NCCL_SHARED_GPU_MIN)
    return bs_err_fail(
        BS_ERR_INVALID, NULL,
        "backend nccl: %d ranks on %d GPU%s share a GPU, which needs NCCL "
        ">= 2.30 (%s is %d.%d.%d): pip install nvidia-nccl-cu13 and set "
        "BS_NCCL=<site-packages>/nvidia/nccl/lib (or LD_LIBRARY_PATH)",
        on_host, in->gpus, in->gpus == 1 ? "" : "s", in->lib,
        in->version / 10000, in->version / 100 % 100, in->version % 100);
  setenv("NCCL_MULTI_RANK_GPU_ENABLE", "1", 0);
  /* Ranks that share a GPU share its SMs: with NCCL's default channels
   * each rank's kernels and connections take many blocks, and on the H200
   * 8 ranks ran steady-normal 3.7x slower than with one channel (5.2 s
   * against 1.4 s a run, docs/performance.md). The channel count is
   * NCCL's tuning, not what Backstop tests; a value the user set wins. */
  setenv("NCCL_MAX_NCHANNELS", "1", 0);
  return BS_OK;
}

bs_status bs_nccl_plan_place(bs_run *c, const bs_nccl_info *in) {
  bs_status st = BS_OK;
  int local = bs_launcher_local_ranks(c), gpus = in->gpus;
  int on_host = local * (c->rendezvous ? host_procs(c) : 1);
  if (on_host <= gpus)
    goto out;
  BS_CHECK(bs_nccl_plan_shared_gpu(on_host, in));
  c->shares_gpu = true;
  if (local <= gpus || c->scn->drive)
    goto out;
  if (c->rendezvous)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "backend nccl: each process would drive %d ranks on %d GPU%s, and "
            "ranks sharing a GPU as threads deadlock (CUDA serialises a "
            "process's allocations against its own NCCL kernels): launch one "
            "process per rank (mpirun -np %d ...), or leave out the launcher "
            "and --rendezvous and backstop starts them",
            local, gpus, gpus == 1 ? "" : "s", c->ranks);
  c->spawn = true;
out:
  return st;
}

bs_status bs_nccl_plan_device(const char *backend, const char **device) {
  bool nccl = backend && strcmp(backend, "nccl") == 0;
  if (!*device)
    *device = nccl ? "cuda" : "host";
  if (nccl && strcmp(*device, "host") == 0)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "--backend nccl needs --device cuda (NCCL moves device "
                       "memory; host buffers are an illegal address to its "
                       "kernels)");
  return BS_OK;
}

/* The probe's answer for a backend and device: BS_OK, or the usage error
 * that says what this machine lacks. */
static bs_status usable(const probe *p, bool asked, const char *backend,
                        const char *device) {
  bool nccl = strcmp(backend, "nccl") == 0;
  if (!asked)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "--backend %s --device %s: the GPU probe did not "
                       "answer",
                       backend, device);
  if (nccl && p->st != BS_OK)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "--backend nccl: no NCCL here (%s)", p->why);
  if (nccl && p->info.gpus < 1)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "--backend nccl: no GPU here (NCCL %s loads, CUDA sees "
                       "no device)",
                       p->info.lib);
  if (strcmp(device, "cuda") == 0 && p->cuda_gpus < 1)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "--device cuda: no GPU here (CUDA sees no device, or "
                       "this build has no CUDA)");
  return BS_OK;
}

bs_status bs_nccl_plan_require(const char *backend, const char *device,
                               bs_nccl_info *out) {
  probe p = {0};
  bool asked = ask(&p);
  memset(out, 0, sizeof *out);
  if (asked)
    *out = p.info;
  return usable(&p, asked, backend, device);
}

bs_status bs_nccl_plan(bs_run *cfgs, size_t n) {
  bs_status st = BS_OK;
  bs_nccl_info in;
  bool asked = false;
  for (size_t i = 0; i < n; i++) {
    bool nccl = strcmp(cfgs[i].backend, "nccl") == 0;
    if (!nccl && strcmp(cfgs[i].device, "cuda") != 0)
      continue;
    if (!asked)
      BS_CHECK(bs_nccl_plan_require(cfgs[i].backend, cfgs[i].device, &in));
    asked = true;
    if (nccl)
      BS_CHECK(bs_nccl_plan_place(&cfgs[i], &in));
  }
out:
  return st;
}

bool bs_nccl_plan_mps(void) {
  const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
  char path[4096];
  struct stat sb;
  snprintf(path, sizeof path, "%s/control",
           dir && *dir ? dir : "/tmp/nvidia-mps");
  return stat(path, &sb) == 0 && (S_ISSOCK(sb.st_mode) || S_ISFIFO(sb.st_mode));
}

int bs_nccl_plan_jobs(const bs_run *cfgs, size_t n, int jobs) {
  bool shared = false;
  for (size_t i = 0; i < n; i++)
    shared |= cfgs[i].shares_gpu;
  if (!shared)
    return jobs;
  if (jobs > 1 && bs_nccl_plan_mps())
    fprintf(stderr, "backstop: CUDA MPS is running; runs whose ranks share "
                    "the GPU still go one at a time\n");
  return 1;
}
