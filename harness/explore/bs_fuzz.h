/* Swarm testing (docs/cli.md `fuzz`, TigerBeetle's VOPR): from one seed, a
 * stream of whole runs, each drawn at random (scenario, ranks, cycles,
 * model, settings, then 1-3 faults at points that configuration reaches,
 * which a counting run of it says) and judged on the invariants like
 * `backstop run ... --fault ...`; a failing one is shrunk (fewer faults and
 * settings, the scenario's model, fewer ranks and cycles, lower nth) while
 * it still fails the same way. The i-th run of a seed depends on the seed,
 * i and the mutants only, so a seed always draws the same runs. */
#ifndef BS_FUZZ_H
#define BS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_mutant.h"
#include "catalog/bs_scenario.h"
#include "plan/bs_models.h"
#include "result/bs_result.h"

#define BS_FUZZ_FAULTS 3
#define BS_FUZZ_SETS 3

typedef struct bs_fuzz_fault {
  int point;       /* catalogue index */
  int rank, cycle; /* -1: any */
  long nth;        /* 0: every reach */
  long times;      /* reaches from nth on; 0: persistent */
  double prob;     /* 1: always */
  uint64_t failinfo;
  bool onetime;
} bs_fuzz_fault;

typedef struct bs_fuzz_run {
  size_t index; /* its place in the seed's stream */
  const bs_scenario *scn;
  int ranks, cycles;
  const char *model;              /* NULL: the scenario's */
  const char *sets[BS_FUZZ_SETS]; /* static strings */
  size_t nsets;
  bs_fuzz_fault faults[BS_FUZZ_FAULTS];
  size_t nfaults;
  uint64_t seed; /* the run's own --seed */
  /* Its schedule: drawn (random or pct:D, seeded by the run's seed or one
   * of its own), or the campaign's --schedule. */
  bs_sched_spec schedule;
} bs_fuzz_run;

/* What runs are drawn from: the scenarios, at most max_ranks ranks, the
 * mutants the runs have (their configurations validate under them) and
 * the models drawn, each loaded once. */
typedef struct bs_fuzz_pool {
  const bs_scenario *const *scn;
  size_t n;
  int max_ranks;
  bs_mutants mutants;
  bs_models *models;
  /* The campaign's --schedule (policy, and seed when seeded): drawn for
   * each run unless given. */
  bs_sched_spec schedule;
  bool schedule_given, schedule_seeded;
} bs_fuzz_pool;

/* The index-th run of seed's stream over the pool's scenarios, its
 * configuration (no faults yet): at most max_ranks ranks (at least the
 * scenario's minimum), settings its configuration validates under the
 * pool's mutants, a model that lays out over its world, and its schedule
 * (a stream of its own: random three times in four, else pct:2..4; seeded
 * half the time by the run's seed, else by one drawn). A scenario with
 * its own driver (config-matrix) takes no ranks, cycles, model, settings
 * or faults of the draw: it runs as it is. */
void bs_fuzz_draw(uint64_t seed, size_t index, const bs_fuzz_pool *pool,
                  bs_fuzz_run *out);

/* A schedule drawn from its own stream of seed and index: random three
 * times in four, else pct:2..4; its seed (s->seed, as given) replaced
 * half the time by one drawn, unless seeded (the user named it). What
 * fuzz's runs and sweep's scenarios are run under unless --schedule. */
void bs_fuzz_draw_schedule(uint64_t seed, size_t index, bool seeded,
                           bs_sched_spec *s);

/* Draws r's 1-3 faults (its own stream of the seed and r->index) from
 * count, the counting run of r's configuration (bs_fuzz_count_cfg): a
 * point it reached, rank and cycle filters a reach of the point meets, an
 * nth within the most reaches the filters keep on one rank in one cycle.
 * None when it reached no point, when the configuration fails without a
 * drawn fault (bs_fuzz_plain_fails: the run is judged as it is, so that
 * failure is found and shrunk like any other), or for a scenario with its
 * own driver. */
void bs_fuzz_draw_faults(uint64_t seed, const bs_result *count, bs_fuzz_run *r);

/* Whether a counting run says its configuration fails with no drawn fault:
 * it broke an invariant (the scenario's expectation and checks aside: they
 * describe its own world and cycles, which the fuzz's replace, and are
 * skipped in a run with drawn faults), its setup failed, it hung or it
 * crashed. On the fixed core few do (seed 1: 6 of 2,000 draws' 1,022,
 * a scenario's own corruption with the check off, a known truth); under a
 * mutant, many. A hang can be a matter of timing: then whether the run
 * draws faults is too. */
bool bs_fuzz_plain_fails(const bs_result *count);

/* What names r's configuration, the same for every run that the same
 * counting run describes: scenario, ranks, cycles, model and settings (not
 * the run's seed or faults). */
void bs_fuzz_key(const bs_fuzz_run *r, char *out, size_t n);

/* The run resolved (planned, bs_plan.h): base's backend, device,
 * watchdog, deadline, mutants and binary, with the run's own world, model
 * (from models), configuration (validated under base's mutants) and faults
 * (the scenario's, then the drawn ones, parsed); models NULL: no model
 * (the repro line needs its name only). The faults live in the struct:
 * link it where it stays (bs_fuzz_cfg_link) before use. */
typedef struct bs_fuzz_cfg {
  bs_run cfg;
  bs_run_fault faults[BS_SCENARIO_FAULTS_MAX + BS_FUZZ_FAULTS];
} bs_fuzz_cfg;
bs_status bs_fuzz_cfg_make(const bs_fuzz_run *r, const bs_run *base,
                           bs_models *models, bs_fuzz_cfg *out);
void bs_fuzz_cfg_link(bs_fuzz_cfg *c);
/* The counting run of r's configuration: no faults but the scenario's,
 * seed 0 (the reaches are the configuration's: bs_fuzz_key), every reach
 * counted (bs_run's count_reaches). */
bs_status bs_fuzz_count_cfg(const bs_fuzz_run *r, const bs_run *base,
                            bs_models *models, bs_fuzz_cfg *out);

/* "name=P[,rank=R][,cycle=C][,nth=K][,times=T|,persistent][,prob=P]
 * [,failinfo=I][,onetime]". */
void bs_fuzz_spec(const bs_fuzz_fault *f, char *out, size_t n);

/* Whether r's i-th drawn fault fired in res (armed after the scenario's
 * own faults). */
bool bs_fuzz_drawn_fired(const bs_fuzz_run *r, const bs_result *res, size_t i);

/* What the fuzz tallies of r's i-th drawn fault, the same for one seed on
 * a quiet or a loaded machine: it fired, or it was pre-empted (another
 * drawn fault fired: whether this one was reached before that failure
 * reached its rank is a matter of timing). */
bool bs_fuzz_drawn_hit(const bs_fuzz_run *r, const bs_result *res, size_t i);

/* The run's verdict as the fuzz counts it: res's, except that a vacuous run
 * in which a drawn fault fired is judged on the faults that fired, as
 * sweep judges a run on its swept fault: pass. The faults it left unfired
 * waited for reaches that a fired one's failure cut off (the counting run
 * says the configuration reaches them); *preempted says so. Vacuous: no
 * drawn fault fired. */
bs_verdict bs_fuzz_verdict(const bs_fuzz_run *r, const bs_result *res,
                           bool *preempted);

/* A failure to shrink: fail, hang or crash (vacuous proves nothing). */
bool bs_fuzz_is_finding(const bs_result *r);
/* What must stay the same while shrinking: "fail bit-identity", "hang". */
void bs_fuzz_signature(const bs_result *r, char *out, size_t n);

/* Runs one step smaller than r, most promising first (a fault, a setting
 * dropped where the rest validates under m; the scenario's model; fewer
 * ranks; fewer cycles; a lower nth or a plainer fault; a plainer
 * schedule: the run's own seed, fewer PCT change points, random); up to
 * max in out, how many returned. */
size_t bs_fuzz_shrink(const bs_fuzz_run *r, bs_mutants m, bs_fuzz_run *out,
                      size_t max);

/* A failure that is the truth about the configuration (r's, validated
 * under m), not a bug: a corruption that the core's own SHA256 restore
 * check does not cover reached the weights, so only bit identity broke.
 * why says which settings make the core catch it (the check on:
 * ci_test=1 or check_rematerialize=1, within its window; bs_known.h). */
bool bs_fuzz_known(const bs_fuzz_run *r, bs_mutants m, const bs_result *res,
                   char *why, size_t n);

#endif
