/* One run, resolved: what the planner (plan/, explore/) makes of a
 * scenario and the options, typed, and what every floor of a run reads
 * (run, driver, oracles, report). Nothing below the planner parses a
 * --set, a --fault or a model: the configuration, the fault specs, the
 * mutants and the model are here as the planner made them; the strings
 * the user gave are kept only for the repro line and the reports. Below
 * the catalogue: it names its scenario but needs none of the catalogue's
 * functions. */
#ifndef BS_RUN_H
#define BS_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_fault_control.h"
#include "bs_mutant.h"
#include "bs_sched_spec.h"
#include "model/bs_config.h"
#include "model/bs_model.h"

typedef struct bs_scenario bs_scenario;

/* backstop run's --deadline-s when none is given (a repro omits it),
 * whatever the world's size: on a scheduled world's virtual clock, where
 * no load or size of world makes a run slower. */
#define BS_RUN_DEADLINE_S 60.0
/* Mutants of a run at most: each once. */
#define BS_RUN_MUTANTS_MAX BS_MUT_COUNT

/* One fault of a run: its spec parsed, and its text (a valid spec is
 * shorter) for the reports and the repro line. */
typedef struct bs_run_fault {
  bs_fault_spec spec;
  char text[256];
} bs_run_fault;

/* Everything one run needs. */
typedef struct bs_run {
  const bs_scenario *scn;
  int ranks;
  const char *backend; /* "sim" | "nccl" */
  const char *device;  /* "host" | "cuda" */
  /* The model at its scale, loaded once by the planner for every run of it
   * (NULL for a scenario with its own driver, which loads none); its name
   * as given (a preset or a file) for the reports. */
  const bs_model_spec *model;
  const char *model_name;
  double scale;
  int cycles;
  /* The defaults, then the scenario's settings, then the user's --set;
   * validated under the mutants (not for a scenario with its own driver,
   * which builds its own configurations). */
  bs_config config;
  /* Armed in this order: the scenario's (its {last} this world's last
   * rank: nown of them), then the user's. */
  const bs_run_fault *faults;
  size_t nfaults, nown;
  bs_mutant mutants[BS_RUN_MUTANTS_MAX]; /* in the order given */
  size_t nmutants;
  /* The user's --set as given: the repro line's. */
  const char *const *sets;
  size_t nsets;
  uint64_t seed;
  /* How its ranks take turns (base/bs_sched.h): random or pct:D, one rank
   * at a time on virtual time from schedule.seed (--schedule-seed, else
   * --seed), or threads. A world that is not every rank a thread of one
   * process on the sim (--spawn, --rendezvous, nccl) runs threads: the
   * planner says so here. */
  bs_sched_spec schedule;
  int timeout_ms; /* watchdog: --timeout-ms, else the scenario's; 0: the
                   * communicator's default */
  /* Past this a run is stopped: on its scheduled world's virtual clock
   * (the parent keeps a real-time guard: bs_parent.h), or by its parent
   * in real time on real threads. */
  double deadline_s;
  const char *artifacts; /* folder for failure artifacts; NULL: none */
  const char *exe;       /* the backstop binary (engine processes) */
  /* Process-per-rank (bs_launcher.h): this process runs the ranks
   * proc*ranks/nprocs .. of the run; the processes meet in the folder
   * rendezvous/run<run_index>. rendezvous NULL: every rank is here. */
  int proc, nprocs;
  const char *rendezvous;
  size_t run_index;
  /* Earlier runs of the plan that are the same run (--repeat, --ranks 2,2):
   * its artifacts folder is then a folder of its own. */
  int repeat;
  /* NCCL ranks that would share a GPU as threads (which deadlocks: CUDA
   * serialises a process's allocations against its own NCCL kernels): the
   * run's child starts one process per rank itself (bs_child_spawn.h). */
  bool spawn;
  bool spawned;       /* one of those processes: its repro is a plain run */
  bool shares_gpu;    /* its NCCL ranks share a GPU: it runs alone */
  bool count_reaches; /* the result lists every reach count (sweep) */
} bs_run;

#endif
