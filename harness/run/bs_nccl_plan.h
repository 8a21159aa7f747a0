/* How NCCL ranks are placed, decided before anything runs: the parent asks
 * a probe child (CUDA must not start in a process that forks the runs)
 * which NCCL the backend loads and how many GPUs it sees. Ranks that would
 * share a GPU as threads of one process deadlock in CUDA, so such a run
 * gets one process per rank, started by its child (bs_run.spawn);
 * under an outside launcher that cannot be done, and it is a usage error
 * naming the process mode. A shared GPU needs NCCL >= 2.30: below that, a
 * usage error that says where a newer NCCL comes from. Sets
 * NCCL_MULTI_RANK_GPU_ENABLE=1 and NCCL_MAX_NCHANNELS=1 when GPUs are
 * shared (each unless set). */
#ifndef BS_NCCL_PLAN_H
#define BS_NCCL_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "catalog/bs_run.h"
#include "comm/bs_comm.h"

/* BS_ERR_INVALID (a usage error) with a one-line message, also when a run
 * asks for NCCL or a GPU this machine lacks (refused before anything runs,
 * not a run that fails); BS_OK when no run uses nccl or cuda. */
bs_status bs_nccl_plan(bs_run *cfgs, size_t n);

/* Runs in parallel: jobs, unless a run's NCCL ranks share a GPU: then one
 * at a time. Two such runs starve each other's processes of GPU time, and
 * their collectives time out: without MPS (time slices), and with it too
 * (seen on the H200: rank-death at 4 and 8 ranks, -j 4 under MPS, every
 * run timed out in its first all-gather at a 2 s watchdog). MPS still
 * makes each run faster (its ranks' kernels run side by side); a note on
 * stderr says when it is there. */
int bs_nccl_plan_jobs(const bs_run *cfgs, size_t n, int jobs);

/* Whether a CUDA MPS control daemon is running for this user: its control
 * socket ($CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps)/control exists
 * (a socket, as the H200's daemon makes it; a FIFO on older drivers). */
bool bs_nccl_plan_mps(void);

/* The buffers' device for a backend: *device as given, else cuda for nccl
 * and host otherwise; BS_ERR_INVALID for nccl on host memory (NCCL moves
 * device memory: host buffers are an illegal address to its kernels). */
bs_status bs_nccl_plan_device(const char *backend, const char **device);

/* NCCL and the GPUs as a fresh probe process sees them (*out), and whether
 * they serve this backend and device: BS_ERR_INVALID saying what is
 * missing (no NCCL and why, no GPU) otherwise. The one check of run and
 * replay. */
bs_status bs_nccl_plan_require(const char *backend, const char *device,
                               bs_nccl_info *out);

/* on_host NCCL ranks on in's GPUs: BS_OK (setting
 * NCCL_MULTI_RANK_GPU_ENABLE=1 and NCCL_MAX_NCHANNELS=1 when they share
 * one, each unless set), or BS_ERR_INVALID
 * when sharing needs a newer NCCL, saying where one comes from. */
bs_status bs_nccl_plan_shared_gpu(int on_host, const bs_nccl_info *in);

/* The decision for one nccl run, given what the probe found. */
bs_status bs_nccl_plan_place(bs_run *c, const bs_nccl_info *in);

#endif
