/* Process-per-rank runs: `mpirun -np P backstop run ... --rendezvous DIR`.
 * Every process plans the same runs and forks them in the same order; in
 * each run process p drives the ranks p*N/P .. (p+1)*N/P-1 (NCCL across the
 * processes, its unique id passed through the run's folder; or sim, its
 * rendezvous in a shared file there, on one host), writes what
 * they did to the folder, and process 0 merges the parts, judges, and
 * publishes the verdict that every process then reports. Every wait is
 * bounded by the run's deadline. */
#ifndef BS_LAUNCHER_H
#define BS_LAUNCHER_H

#include <stddef.h>

#include "bs_err.h"
#include "catalog/bs_run.h"

#define BS_LAUNCHER_MAX 1024

typedef struct bs_launcher {
  int proc, nprocs;
  char job[64];      /* the launcher's job id, "" when it has none */
  char job_from[32]; /* the variable it came from, for messages */
  char from[32];     /* the variable the index came from, for messages */
} bs_launcher;

/* This process's index and the process count, from the launcher's
 * environment: BS_PROC_RANK/BS_PROC_SIZE, Open MPI's OMPI_COMM_WORLD_*,
 * PMI_RANK/PMI_SIZE (MPICH, Intel MPI), Slurm's SLURM_PROCID/
 * SLURM_NTASKS or torchrun's RANK/WORLD_SIZE, first found; none: process 0
 * of 1. The job id (folder per job, so a stale file of an earlier job is
 * never read): BS_JOB_ID, PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid,
 * SLURM_JOB_ID.SLURM_STEP_ID or TORCHELASTIC_RUN_ID (.TORCHELASTIC_RESTART_
 * COUNT from torchrun's first restart on: a restarted worker group is a job
 * of its own). BS_ERR_INVALID naming the variable for a malformed or
 * half-set pair. */
bs_status bs_launcher_from_env(bs_launcher *p);

/* Claims the job's folder for this process before its first run: makes
 * job_dir/proc<p>, which must not be there. Each process looks for its own
 * mark only: a peer's may be this job's, made a moment before, while its
 * own can only be an earlier job's (a job id used twice), whose files,
 * part<p> and dump<p> of a killed or hung run among them, would be taken
 * for this one's. BS_ERR_INVALID naming the folder and the mark. */
bs_status bs_launcher_claim(const bs_launcher *p, const char *job_dir);

/* The run's shared folder: <rendezvous>/run<run_index>. */
void bs_launcher_run_dir(const bs_run *cfg, char *out, size_t n);

/* The local ranks of the run: first and count. */
int bs_launcher_first_rank(const bs_run *cfg);
int bs_launcher_local_ranks(const bs_run *cfg);

#endif
