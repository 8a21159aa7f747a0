/* The sweep campaign (docs/cli.md `sweep`): a counting pass of every planned
 * run (bs_plan_runs), then two runs per reach its filters keep
 * (bs_sweep.h: transient and persistent), run in parallel. backstop sweep
 * parses the options into o and plans its runs into plan, and prints the
 * matrix of points x outcomes. */
#ifndef BS_SWEEP_CAMPAIGN_H
#define BS_SWEEP_CAMPAIGN_H

#include <stdbool.h>
#include <stddef.h>

#include "explore/bs_batch.h"
#include "explore/bs_sweep.h"
#include "plan/bs_plan.h"

/* One scenario at one size: its counting pass and its share of the runs. */
typedef struct bs_swept {
  const bs_run *base;
  bs_result count;
  size_t first, n; /* its runs in the run list */
  size_t total;    /* reaches the filters keep, before the sample */
  size_t sampled;  /* of them, in the sample (all without one) */
  size_t swept;    /* of those, reaches with a run */
  size_t taken;    /* runs not armed: its own faults take them */
  size_t fixed;    /* armed faults before the swept one */
} bs_swept;

typedef struct bs_sweep_campaign {
  bs_opts_sweep o;
  bs_plan plan; /* each scenario at each size: its counting pass */
  bs_swept *sc; /* one per planned run */
  /* The runs: each its base's faults, then its swept spec, parsed; run
   * i's faults start at faults[at[i]] (linked once the lists stop
   * growing). */
  bs_run *runs;
  bs_run_fault *faults;
  size_t *at;
  bool *first; /* run i is its reach's first (transient, or persistent
                * where its own faults take the transient one) */
  bs_result *res;
  size_t n, cap, acap, facap, nfaults, fcap; /* caps: of runs, at, first,
                                              * faults */
  bs_batch batch;
} bs_sweep_campaign;

/* The counting pass, then the runs of every reach kept (cfgs, runs; res
 * sized for them), less those the scenario's own faults take
 * (bs_sweep_taken). BS_ERR_NOMEM with no message when memory ran out. */
bs_status bs_sweep_campaign_plan(bs_sweep_campaign *w);
/* The options' filter for the index-th planned scenario (a small sample
 * goes on where the previous scenario's stopped). */
bs_sweep_filter bs_sweep_campaign_filter(const bs_sweep_campaign *w,
                                         size_t index);
/* Runs the planned runs into res, each verdict settled to the sweep's
 * judgement (bs_sweep_settle). */
bs_status bs_sweep_campaign_run(bs_sweep_campaign *w);
/* Whether a scenario's counting pass ran clean (pass or vacuous): only
 * then are its reaches swept. */
bool bs_sweep_campaign_count_ok(const bs_swept *s);
void bs_sweep_campaign_free(bs_sweep_campaign *w);

#endif
