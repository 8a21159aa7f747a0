/* The fuzz campaign (docs/cli.md `fuzz`): draw the seed's runs (bs_fuzz.h) and
 * their counting runs until the budget is spent, run them, tally what
 * fired, keep each distinct failure, then confirm and shrink every one and
 * classify it (bs_fuzz_known). backstop fuzz parses the options into o and
 * prints what the campaign found. */
#ifndef BS_FUZZ_CAMPAIGN_H
#define BS_FUZZ_CAMPAIGN_H

#include <stdbool.h>
#include <stddef.h>

#include "explore/bs_batch.h"
#include "explore/bs_fuzz.h"
#include "plan/bs_plan.h"

/* A failure and what shrinking made of it. */
typedef struct bs_fuzz_finding {
  bs_fuzz_run drawn, minimal;
  bs_result first;  /* the drawn run's result */
  bs_result result; /* the minimal run's */
  char sig[96], key[256];
  char why[400];   /* known: the truth; else empty */
  bool reproduced; /* the drawn run failed alike a second time */
  size_t shrink_runs;
  size_t alike, alike_runs[8]; /* more runs that failed the same way */
  char drawn_repro[1024];
} bs_fuzz_finding;

/* A configuration's counting run (bs_fuzz_count_cfg), once per distinct
 * configuration (bs_fuzz_key) in the process: its verdict and reaches. */
typedef struct bs_fuzz_counted {
  char key[512];
  bs_result count;
} bs_fuzz_counted;

typedef struct bs_fuzz_campaign {
  bs_opts_fuzz o;
  const bs_scenario *pool[BS_SCENARIO_MAX];
  size_t npool;
  bs_models models; /* the drawn runs' models, each loaded once */
  bs_run base;
  bs_batch batch;
  size_t runs; /* drawn so far */
  size_t count[BS_VERDICT_COUNT];
  size_t drawn[BS_FP_COUNT], fired[BS_FP_COUNT]; /* per point: fired or
                                                  * pre-empted */
  bs_fuzz_finding *f;
  size_t nf, fcap;
  bs_fuzz_counted *c; /* the counting runs so far */
  size_t nc, ccap;
  size_t count_failed; /* failed with no drawn fault */
  double t0;
} bs_fuzz_campaign;

/* Monotonic seconds: the campaign's budget and its time line. */
double bs_fuzz_campaign_now_s(void);

/* After z->o is parsed and checked (z->o.runs or z->o.time_s set): the
 * pool of scenarios and the base of every run (its mutants, which the
 * draws validate under). Usage errors are BS_ERR_INVALID. */
bs_status bs_fuzz_campaign_init(bs_fuzz_campaign *z, const char *exe);
/* Draws and runs the seed's stream until the budget is spent. */
bs_status bs_fuzz_campaign_draw(bs_fuzz_campaign *z);
/* Confirms each finding (its drawn run again), then shrinks it. */
bs_status bs_fuzz_campaign_shrink(bs_fuzz_campaign *z);
/* The findings not known to be a truth of their configuration. */
size_t bs_fuzz_campaign_unexplained(const bs_fuzz_campaign *z);
/* The repro command of r under z's base. */
void bs_fuzz_campaign_repro(const bs_fuzz_campaign *z, const bs_fuzz_run *r,
                            char *out, size_t n);
void bs_fuzz_campaign_free(bs_fuzz_campaign *z);

#endif
