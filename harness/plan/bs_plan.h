/* Run planning (docs/cli.md `run`): from a command's options (bs_opts.h) to
 * its runs, each resolved once into a bs_run (bs_run.h): the configuration
 * (defaults, the scenario's settings, the user's), the scenario's and the
 * user's faults parsed, the mutants, the model loaded. Every check that
 * needs the scenario is made before anything runs: world sizes, fault
 * ranks and cycles, the configuration under the mutants, the model's fit
 * in this machine's memory, a launcher's job id. The campaigns (explore/)
 * resolve the runs they draw or sweep with the same functions. */
#ifndef BS_PLAN_H
#define BS_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_err.h"
#include "bs_mutant.h"
#include "catalog/bs_run.h"
#include "catalog/bs_scenario.h"
#include "plan/bs_models.h"
#include "plan/bs_opts.h"

/* The default suite when no selector is given. */
#define BS_DEFAULT_SUITE "@smoke"

/* A command's runs and what they point into. */
typedef struct bs_plan {
  bs_run *runs;
  size_t n;
  bs_run_fault *faults; /* every run's, each at its own place */
  bs_models models;     /* every run's model, loaded once */
} bs_plan;

/* Process-per-rank: process 0 speaks for every process (prints, saves the
 * reports), and every process runs the runs one at a time, in the same
 * order. Without --rendezvous: true and o->jobs. */
bool bs_plan_lead(const bs_opts_run *o);
int bs_plan_jobs(const bs_opts_run *o);

/* s's configuration: the defaults, then its settings, then set[0..n),
 * validated under the mutants m as the run will be (unless s runs its own
 * driver, which builds its own). A rejection is a usage error naming s. */
bs_status bs_plan_config(const bs_scenario *s, const bs_config_setting *set,
                         size_t n, bs_mutants m, bs_config *out);
/* s's own faults in a world of ranks ({last}: its last rank), parsed into
 * out[0..*n) (at most BS_SCENARIO_FAULTS_MAX). */
bs_status bs_plan_own_faults(const bs_scenario *s, int ranks, bs_run_fault *out,
                             size_t *n);
/* The fewest cycles a run of s can be judged in: its .min_cycles, and
 * at least one past the cycle each of its own faults is pinned to (a run
 * of fewer is refused, or skipped where a label or glob chose s). */
int bs_plan_min_cycles(const bs_scenario *s);
/* A spec the campaigns make (a swept reach, a drawn fault), parsed. */
bs_status bs_plan_fault(const char *text, bs_run_fault *out);

/* One run per selected scenario and world size, in catalogue order then
 * size order (a size of a --ranks matrix below a scenario's minimum is
 * skipped). Checks what needs the scenario: world size against its
 * minimum, fault ranks inside the world, its configuration with the user's
 * --set accepted by validation, its model's layout and fit. Strings point
 * into o, which must outlive the plan. */
bs_status bs_plan_runs(const bs_opts_run *o, const char *exe, bs_plan *out);
/* A deadline that the waits of a run's faults alone reach (a skipped init
 * is waited out for twice the watchdog's timeout: bs_driver_waits_ms)
 * would kill the run before its watchdog could: said on stderr before
 * anything runs, once per scenario. */
void bs_plan_warn_deadlines(const bs_plan *p);
void bs_plan_free(bs_plan *p);

#endif
