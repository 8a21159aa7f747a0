/* Swarm testing (cli.md `fuzz`, TigerBeetle's VOPR): from one seed, a
 * stream of whole runs, each drawn at random (scenario, ranks, cycles,
 * model, settings, 1-3 catalogue faults) and judged on the invariants like
 * `backstop run ... --fault ...`; a failing one is shrunk (fewer faults and
 * settings, the scenario's model, fewer ranks and cycles, lower nth) while
 * it still fails the same way. The i-th run of a seed depends on the seed,
 * i and the mutants only, so a seed always draws the same runs. */
#ifndef BS_FUZZ_H
#define BS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog/bs_scenario.h"
#include "report/bs_result.h"

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
} bs_fuzz_run;

/* The index-th run of seed's stream over the scenarios of pool: at most
 * max_ranks ranks (at least the scenario's minimum), settings its
 * configuration validates under the mutants set in this process. A
 * scenario with its own driver (config-matrix) takes no ranks, cycles,
 * model, settings or faults of the draw: it runs as it is. */
void bs_fuzz_draw(uint64_t seed, size_t index, int max_ranks,
                  const bs_scenario *const *pool, size_t npool,
                  bs_fuzz_run *out);

/* The run as a run configuration: base's backend, device, watchdog,
 * deadline, mutants and binary, with the run's own fields. Strings live in
 * the struct: link it where it stays (bs_fuzz_cfg_link) before use. */
typedef struct bs_fuzz_cfg {
  bs_run_cfg cfg;
  char specs[BS_FUZZ_FAULTS][160];
  const char *faults[BS_FUZZ_FAULTS];
} bs_fuzz_cfg;
void bs_fuzz_cfg_make(const bs_fuzz_run *r, const bs_run_cfg *base,
                      bs_fuzz_cfg *out);
void bs_fuzz_cfg_link(bs_fuzz_cfg *c);

/* "name=P[,rank=R][,cycle=C][,nth=K][,times=T|,persistent][,prob=P]
 * [,failinfo=I][,onetime]". */
void bs_fuzz_spec(const bs_fuzz_fault *f, char *out, size_t n);

/* A failure to shrink: fail, hang or crash (vacuous proves nothing). */
bool bs_fuzz_is_finding(const bs_result *r);
/* What must stay the same while shrinking: "fail bit-identity", "hang". */
void bs_fuzz_signature(const bs_result *r, char *out, size_t n);

/* Runs one step smaller than r, most promising first (a fault, a setting
 * dropped; the scenario's model; fewer ranks; fewer cycles; a lower nth or
 * a plainer fault); up to max in out, how many returned. */
size_t bs_fuzz_shrink(const bs_fuzz_run *r, bs_fuzz_run *out, size_t max);

/* A failure that is the truth about the configuration, not a bug: a
 * corruption that the core's own SHA256 restore check does not cover
 * reached the weights, so only bit identity broke. why says which
 * settings make the core catch it (the check on: ci_test=1 or
 * check_rematerialize=1, within its window). */
bool bs_fuzz_known(const bs_fuzz_run *r, const bs_result *res, char *why,
                   size_t n);

#endif
