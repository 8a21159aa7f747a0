/* The resolved configuration of one run: what the planner (plan/) makes of
 * a scenario and the options, and what every floor of a run reads (run,
 * driver, oracles, report). Below the catalogue: it names its scenario but
 * needs none of the catalogue's functions. */
#ifndef BS_RUN_CFG_H
#define BS_RUN_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bs_scenario bs_scenario;

/* backstop run's --deadline-s when none is given (a repro omits it), for
 * worlds of up to BS_RUN_DEADLINE_RANKS_PER_CPU simulated ranks per CPU;
 * larger ones get as much more as they have more ranks per CPU
 * (bs_plan_deadline_s). */
#define BS_RUN_DEADLINE_S 60.0
#define BS_RUN_DEADLINE_RANKS_PER_CPU 2048

/* Everything one run needs, resolved from the scenario and the options. */
typedef struct bs_run_cfg {
  const bs_scenario *scn;
  int ranks;
  const char *backend; /* "sim" | "nccl" */
  const char *device;  /* "host" | "cuda" */
  const char *model;   /* preset or file */
  double scale;
  int cycles;
  const char *const *sets; /* the user's --set, after the scenario's */
  size_t nsets;
  const char *const *faults; /* the user's --fault, after the scenario's */
  size_t nfaults;
  const char *const *mutants;
  size_t nmutants;
  uint64_t seed;
  int timeout_ms;        /* watchdog: --timeout-ms, else the scenario's; 0: the
                          * communicator's default */
  double deadline_s;     /* the parent kills the run past this */
  bool deadline_scaled;  /* deadline_s is the default for its world's size */
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
} bs_run_cfg;

#endif
