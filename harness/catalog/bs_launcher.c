#include "catalog/bs_launcher.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_num.h"

/* Index and count variables of the launchers, most specific first. */
static const char *const pairs[][2] = {
    {"BS_PROC_RANK", "BS_PROC_SIZE"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"PMI_RANK", "PMI_SIZE"},
    {"SLURM_PROCID", "SLURM_NTASKS"},
    {"RANK", "WORLD_SIZE"}, /* torchrun --no-python */
};

static const char *const job_vars[] = {"BS_JOB_ID", "PMIX_NAMESPACE",
                                       "OMPI_MCA_ess_base_jobid",
                                       "SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"};

static bs_status env_int(const char *var, const char *s, long lo, long hi,
                         int *out) {
  if (bs_num_int(s, (int)lo, (int)hi, out))
    return BS_OK;
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "environment: %s='%s' is not an integer in [%ld, %ld]",
                     var, s, lo, hi);
}

static bs_status from_pair(const char *const v[2], bs_launcher *p) {
  bs_status st = BS_OK;
  const char *rank = getenv(v[0]), *size = getenv(v[1]);
  if (!rank != !size)
    BS_FAIL(BS_ERR_INVALID, NULL, "environment: %s is set but %s is not",
            rank ? v[0] : v[1], rank ? v[1] : v[0]);
  BS_CHECK(env_int(v[1], size, 1, BS_LAUNCHER_MAX, &p->nprocs));
  BS_CHECK(env_int(v[0], rank, 0, p->nprocs - 1, &p->proc));
  snprintf(p->from, sizeof p->from, "%s", v[0]);
out:
  return st;
}

/* The first job id set, with what a folder name cannot hold replaced. */
static void job_id(bs_launcher *p) {
  for (size_t i = 0; i < sizeof job_vars / sizeof job_vars[0]; i++) {
    const char *s = getenv(job_vars[i]);
    if (!s || !*s)
      continue;
    /* Slurm's job id is shared by every step (srun) of an allocation,
     * torchrun's by every restart of the workers (and is "none" unless
     * given). */
    bool torch = !strcmp(job_vars[i], "TORCHELASTIC_RUN_ID");
    const char *step = !strcmp(job_vars[i], "SLURM_JOB_ID")
                           ? getenv("SLURM_STEP_ID")
                       : torch ? getenv("TORCHELASTIC_RESTART_COUNT")
                               : NULL;
    /* torchrun's first attempt keeps the run id's own name. */
    if (step && *step && !(torch && strcmp(step, "0") == 0))
      snprintf(p->job, sizeof p->job, "%s.%s", s, step);
    else
      snprintf(p->job, sizeof p->job, "%s", s);
    snprintf(p->job_from, sizeof p->job_from, "%s", job_vars[i]);
    for (char *c = p->job; *c; c++)
      if (!isalnum((unsigned char)*c) && !strchr("._-", *c))
        *c = '_';
    return;
  }
}

bs_status bs_launcher_from_env(bs_launcher *p) {
  memset(p, 0, sizeof *p);
  p->nprocs = 1;
  job_id(p);
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
    if (getenv(pairs[i][0]) || getenv(pairs[i][1]))
      return from_pair(pairs[i], p);
  return BS_OK;
}

bs_status bs_launcher_claim(const bs_launcher *p, const char *job_dir) {
  bs_status st = BS_OK;
  char path[1100], note[96];
  snprintf(path, sizeof path, "%s/proc%d", job_dir, p->proc);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST && p->job[0])
    BS_FAIL(BS_ERR_INVALID, NULL,
            "job id %s (%s) was used before: %s holds proc%d from an earlier "
            "run; give a new job id (BS_JOB_ID) or remove %s",
            p->job, p->job_from, job_dir, p->proc, job_dir);
  if (fd < 0 && errno == EEXIST)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "--rendezvous: %s holds proc%d from an earlier run without a job "
            "id; give one (BS_JOB_ID) or remove %s",
            job_dir, p->proc, job_dir);
  if (fd < 0)
    BS_FAIL(BS_ERR_INVALID, NULL, "--rendezvous: cannot create %s: %s", path,
            strerror(errno));
  int n = snprintf(note, sizeof note, "process %d of %d, pid %ld\n", p->proc,
                   p->nprocs, (long)getpid());
  if (write(fd, note, (size_t)n) != n) {
    int e = errno;
    unlink(path); /* a half-made mark must not refuse the retry */
    BS_FAIL(BS_ERR_INVALID, NULL, "--rendezvous: cannot write %s: %s", path,
            strerror(e));
  }
out:
  if (fd >= 0)
    close(fd);
  return st;
}

void bs_launcher_run_dir(const bs_run *cfg, char *out, size_t n) {
  snprintf(out, n, "%s/run%zu", cfg->rendezvous, cfg->run_index);
}

int bs_launcher_local_ranks(const bs_run *cfg) {
  return cfg->nprocs > 1 ? cfg->ranks / cfg->nprocs : cfg->ranks;
}

int bs_launcher_first_rank(const bs_run *cfg) {
  return cfg->nprocs > 1 ? cfg->proc * bs_launcher_local_ranks(cfg) : 0;
}
