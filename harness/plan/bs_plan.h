/* Run planning (docs/cli.md `run`): from the options the command line gave
 * (cli/bs_opts.h parses them) to the runs, one resolved configuration each,
 * every check that needs the scenario made before anything runs: world
 * sizes, fault ranks and cycles, the configuration under the mutants, the
 * model's fit in this machine's memory, a launcher's job id. */
#ifndef BS_PLAN_H
#define BS_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_err.h"
#include "bs_fault_control.h"
#include "bs_limits.h"
#include "catalog/bs_launcher.h"
#include "catalog/bs_scenario.h"

#define BS_OPTS_MAX 64
#define BS_RANKS_MAX BS_WORLD_MAX_RANKS
#define BS_OPTS_REPEAT_MAX 1000
/* Bounds of the other number options: far past any real use, and within
 * what every conversion downstream holds (ints, ms in doubles, a run per
 * draw). */
#define BS_OPTS_SECONDS_MAX 1e7 /* --deadline-s, --time-s: 115 days */
#define BS_OPTS_SCALE_MAX 1e9
#define BS_OPTS_COUNT_MAX 100000000L /* --runs, --sample */

typedef struct bs_opts {
  const char *sel[BS_OPTS_MAX]; /* selectors; none: the default suite */
  size_t nsel;
  int ranks[16]; /* world sizes; none: each scenario's default */
  size_t nranks;
  const char *backend, *device; /* device NULL: host with sim, cuda else */
  const char *model;            /* NULL: each scenario's */
  double scale;
  int cycles; /* < 0: each scenario's */
  const char *sets[BS_OPTS_MAX];
  size_t nsets;
  const char *faults[BS_FAULT_MAX_SPECS];
  size_t nfaults;
  const char *mutants[BS_OPTS_MAX];
  size_t nmutants;
  uint64_t seed;
  int timeout_ms;
  double deadline_s;
  bool deadline_given; /* --deadline-s: it wins over the scaled default */
  int jobs;
  const char *json, *junit, *artifacts;
  int verbosity; /* -1 quiet, 0, 1 verbose */
  /* --rendezvous DIR: process-per-rank, with either backend (sim: on one
   * host); rdv is DIR/<job id>, the folder this job's processes share
   * (bs_launcher.h). */
  const char *rendezvous;
  /* --spawn: one process per rank, started by each run's child (what NCCL
   * ranks that would share a GPU get without asking, bs_nccl_plan.h). */
  bool spawn;
  /* --repeat N: every planned run N times over (same seed): races show. */
  int repeat;
  /* mutants --targeted: a mutant runs only against the scenarios that name
   * it in .targets (the fixed core still runs them all). */
  bool targeted;
  /* sweep: --point P (repeatable, PREFIX* allowed), --rank R, --cycle C
   * (-1: any), --sample N reaches at most (0: every one). */
  const char *points[BS_OPTS_MAX];
  size_t npoints;
  int sweep_rank, sweep_cycle;
  size_t sample;
  int sample_pct; /* --sample P%: of each scenario's reaches (0: none) */
  /* fuzz: --runs N or --time-s T (0: neither given), --max-ranks N,
   * --shrink-max N (runs spent shrinking one finding). */
  long runs;
  double time_s;
  int max_ranks, shrink_max;
  /* sweep and fuzz --strict: a known failure (bs_known) fails too. */
  bool strict;
  bs_launcher procs;
  char rdv[1024];
} bs_opts;

/* Re-raises the error of a check with the option it came from ("--set
 * K=V: ..."); a rejected configuration is a usage error. */
bs_status bs_plan_prefixed(bs_status st, const char *prefix);

/* A command's options before its arguments are read: every default, and
 * the campaigns' own (sweep and fuzz: a 1000 ms watchdog, fuzz a 20 s
 * deadline, jobs twice the CPUs; run: the backstop-artifacts folder). */
void bs_plan_defaults(const char *cmd, bs_opts *o);

/* Process-per-rank: process 0 speaks for every process (prints, saves the
 * reports), and every process runs the runs one at a time, in the same
 * order. Without --rendezvous: true and o->jobs. */
bool bs_plan_lead(const bs_opts *o);
int bs_plan_jobs(const bs_opts *o);
/* The deadline of a run of `ranks` ranks: --deadline-s when given, else
 * the default, scaled up for worlds of more ranks per CPU than
 * BS_RUN_DEADLINE_RANKS_PER_CPU. */
double bs_plan_deadline_s(const bs_opts *o, int ranks);

/* The default suite when no selector is given. */
#define BS_DEFAULT_SUITE "@smoke"

/* One run per selected scenario and world size, in catalogue order then
 * size order (a size of a --ranks matrix below a scenario's minimum is
 * skipped). Checks what needs the scenario: world size against its
 * minimum, fault ranks inside the world, its configuration with the user's
 * --set accepted by validation. *out is malloc'd; strings point into o. */
bs_status bs_plan_runs(const bs_opts *o, const char *exe, bs_run_cfg **out,
                       size_t *n);

#endif
