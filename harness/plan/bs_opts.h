/* The options of `backstop run`, `mutants`, `sweep` and `fuzz`
 * (docs/cli.md), a struct per command, parsed and checked up front: a
 * usage error is BS_ERR_INVALID with a one-line message in bs_err()
 * naming what was wrong, before anything runs. What a value says is
 * parsed here once: a --set into its setting, a --fault into its spec, a
 * --mutant into its id; the planner (bs_plan.h) turns them into runs. */
#ifndef BS_OPTS_H
#define BS_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_err.h"
#include "bs_fault_control.h"
#include "bs_limits.h"
#include "bs_mutant.h"
#include "catalog/bs_launcher.h"
#include "catalog/bs_run.h"
#include "model/bs_config.h"

#define BS_OPTS_MAX 64
#define BS_RANKS_MAX BS_WORLD_MAX_RANKS
#define BS_OPTS_REPEAT_MAX 1000
/* Bounds of the other number options: far past any real use, and within
 * what every conversion downstream holds (ints, ms in doubles, a run per
 * draw). */
#define BS_OPTS_SECONDS_MAX 1e7 /* --deadline-s, --time-s: 115 days */
#define BS_OPTS_SCALE_MAX 1e9
#define BS_OPTS_COUNT_MAX 100000000L /* --runs, --sample */

/* `backstop run`'s options, which the other three take too: what the
 * planner reads. */
typedef struct bs_opts_run {
  const char *sel[BS_OPTS_MAX]; /* selectors; none: the default suite */
  size_t nsel;
  int ranks[16]; /* world sizes; none: each scenario's default */
  size_t nranks;
  const char *backend, *device; /* device NULL: host with sim, cuda else */
  const char *model;            /* NULL: each scenario's */
  double scale;
  int cycles; /* < 0: each scenario's */
  /* --set: as given (the repro line's) and parsed. */
  const char *sets[BS_OPTS_MAX];
  bs_config_setting settings[BS_OPTS_MAX];
  size_t nsets;
  bs_run_fault faults[BS_FAULT_MAX_SPECS]; /* --fault, parsed */
  size_t nfaults;
  bs_mutant mutants[BS_RUN_MUTANTS_MAX];
  size_t nmutants;
  uint64_t seed;
  /* --schedule (default random) and --schedule-seed (default: --seed);
   * given: named by the user, not the default (sweep and fuzz draw one
   * per run unless given). */
  bs_sched_spec schedule;
  bool schedule_given, schedule_seed_given;
  int timeout_ms;
  double deadline_s;
  int jobs;
  /* Written by the lead process; each checked while parsing: it can be
   * written (a file made and removed), the artifacts a folder. */
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
  bs_launcher procs;
  char rdv[1024];
} bs_opts_run;

/* `backstop mutants`: no --mutant (it runs every one). --targeted: a
 * mutant runs only against the scenarios that name it in .targets (the
 * fixed core still runs them all). */
typedef struct bs_opts_mutants {
  bs_opts_run run;
  bool targeted;
} bs_opts_mutants;

/* `backstop sweep`: --point P (repeatable, PREFIX* allowed), --rank R,
 * --cycle C (-1: any), --sample N reaches at most (0: every one) or P%,
 * --strict (a known failure, bs_known.h, fails too). */
typedef struct bs_opts_sweep {
  bs_opts_run run;
  const char *points[BS_OPTS_MAX];
  size_t npoints;
  int rank, cycle;
  size_t sample;
  int sample_pct; /* --sample P%: of each scenario's reaches (0: none) */
  bool strict;
} bs_opts_sweep;

/* `backstop fuzz`: --runs N or --time-s T (0: neither given),
 * --max-ranks N, --shrink-max N (runs spent shrinking one finding),
 * --strict. */
typedef struct bs_opts_fuzz {
  bs_opts_run run;
  long runs;
  double time_s;
  int max_ranks, shrink_max;
  bool strict;
} bs_opts_fuzz;

/* Re-raises the error of a check with the option it came from ("--set
 * K=V: ..."); a rejected configuration is a usage error. */
bs_status bs_opts_prefixed(bs_status st, const char *prefix);

/* The checks of every command's values, usage errors (BS_ERR_INVALID)
 * naming opt and the value: a whole-string decimal integer in [lo, hi] (no
 * sign, space or leading zero), and one of two words. */
bs_status bs_opts_long(const char *opt, const char *s, long lo, long hi,
                       long *out);
bs_status bs_opts_choice(const char *opt, const char *v, const char *a,
                         const char *b);

/* Each command's options from its arguments (argv[0]: the command itself),
 * its defaults first (sweep and fuzz: a 1000 ms watchdog, fuzz a 20 s
 * deadline, both a job per CPU, two on real threads; run: the
 * backstop-artifacts folder). Reorder argv (getopt). */
bs_status bs_opts_parse_run(int argc, char **argv, bs_opts_run *o);
bs_status bs_opts_parse_mutants(int argc, char **argv, bs_opts_mutants *o);
bs_status bs_opts_parse_sweep(int argc, char **argv, bs_opts_sweep *o);
bs_status bs_opts_parse_fuzz(int argc, char **argv, bs_opts_fuzz *o);

#endif
