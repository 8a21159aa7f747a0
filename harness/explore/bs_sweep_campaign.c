#include "explore/bs_sweep_campaign.h"

#include <stdlib.h>
#include <string.h>

#include "bs_vec.h"
#include "catalog/bs_scenario.h"

bs_sweep_filter bs_sweep_campaign_filter(const bs_sweep_campaign *w,
                                         size_t index) {
  return (bs_sweep_filter){.points = w->o.points,
                           .npoints = w->o.npoints,
                           .rank = w->o.sweep_rank,
                           .cycle = w->o.sweep_cycle,
                           .sample = w->o.sample,
                           .sample_pct = w->o.sample_pct,
                           .offset = index * w->o.sample};
}

static size_t scenario_faults(const bs_scenario *s) {
  size_t n = 0;
  while (s->faults && s->faults[n])
    n++;
  return n;
}

/* Every base run once, counting reaches. */
static bs_status count_pass(bs_sweep_campaign *w) {
  bs_status st = BS_OK;
  bs_run_cfg *c = calloc(w->nbase ? w->nbase : 1, sizeof *c);
  bs_result *r = calloc(w->nbase ? w->nbase : 1, sizeof *r);
  if (!c || !r)
    BS_FAIL(BS_ERR_NOMEM, NULL, "sweep: %zu counting runs", w->nbase);
  for (size_t i = 0; i < w->nbase; i++) {
    c[i] = w->base[i];
    c[i].count_reaches = true;
  }
  w->batch.label = "sweep: counting";
  w->batch.total = w->nbase;
  BS_CHECK(bs_batch_run(&w->batch, c, w->nbase, r));
  for (size_t i = 0; i < w->nbase; i++) {
    w->sc[i] = (bs_swept){.base = &w->base[i], .count = r[i]};
    memset(&r[i], 0, sizeof r[i]);
  }
out:
  free(c);
  free(r);
  return st;
}

bool bs_sweep_campaign_count_ok(const bs_swept *s) {
  return s->count.verdict == BS_PASS || s->count.verdict == BS_VACUOUS;
}

/* The runs of one scenario: two per kept reach. */
static bs_status plan_scenario(bs_sweep_campaign *w, bs_swept *s, size_t index,
                               bs_sweep_reach **r, size_t *nr) {
  /* A small sample goes on where the previous scenario's stopped. */
  bs_sweep_filter f = bs_sweep_campaign_filter(w, index);
  *r = NULL;
  *nr = 0;
  s->fixed = scenario_faults(s->base->scn) + w->o.nfaults;
  if (!bs_sweep_campaign_count_ok(s))
    return BS_OK;
  return bs_sweep_reaches(&s->count, &f, r, nr, &s->total);
}

static bs_status add_runs(bs_sweep_campaign *w, bs_swept *s,
                          const bs_sweep_reach *r, size_t nr) {
  bs_status st = BS_OK;
  size_t need = w->n + 2 * nr;
  BS_CHECK(bs_vec_reserve(&w->cfgs, &w->cap, need, sizeof *w->cfgs, "sweep"));
  BS_CHECK(bs_vec_reserve(&w->runs, &w->rcap, need, sizeof *w->runs, "sweep"));
  s->first = w->n;
  for (size_t i = 0; i < 2 * nr; i++) {
    bs_sweep_run *run = &w->runs[w->n];
    bs_sweep_spec(&r[i / 2], i % 2, run->spec, sizeof run->spec);
    w->cfgs[w->n] = *s->base;
    w->cfgs[w->n].nfaults = w->o.nfaults + 1;
    w->cfgs[w->n].run_index = w->n;
    w->n++;
  }
  s->n = 2 * nr;
out:
  return st;
}

/* Once the lists stop moving: each cfg's faults are the user's, then its
 * own run's spec. */
static void link_faults(bs_sweep_campaign *w) {
  for (size_t i = 0; i < w->n; i++) {
    bs_sweep_run *run = &w->runs[i];
    for (size_t k = 0; k < w->o.nfaults; k++)
      run->faults[k] = w->o.faults[k];
    run->faults[w->o.nfaults] = run->spec;
    w->cfgs[i].faults = run->faults;
  }
}

static bs_status plan_runs(bs_sweep_campaign *w) {
  bs_status st = BS_OK;
  for (size_t i = 0; i < w->nbase; i++) {
    bs_sweep_reach *r = NULL;
    size_t nr = 0;
    st = plan_scenario(w, &w->sc[i], i, &r, &nr);
    if (st == BS_OK)
      st = add_runs(w, &w->sc[i], r, nr);
    free(r);
    BS_CHECK(st);
  }
  link_faults(w);
out:
  return st;
}

bs_status bs_sweep_campaign_plan(bs_sweep_campaign *w) {
  bs_status st = BS_OK;
  if (!(w->sc = calloc(w->nbase ? w->nbase : 1, sizeof *w->sc)))
    return BS_ERR_NOMEM;
  BS_CHECK(count_pass(w));
  BS_CHECK(plan_runs(w));
  if (!(w->res = calloc(w->n ? w->n : 1, sizeof *w->res)))
    st = BS_ERR_NOMEM;
out:
  return st;
}

/* A sweep run's verdict as it ends, so the progress line counts what the
 * summary will: its swept fault is its last, after the fixed ones. */
static void settle_run(const bs_run_cfg *cfg, bs_result *res, void *arg) {
  const bool *strict = arg;
  bs_sweep_settle(cfg, res, scenario_faults(cfg->scn) + cfg->nfaults - 1,
                  *strict);
}

bs_status bs_sweep_campaign_run(bs_sweep_campaign *w) {
  w->batch.label = "sweep";
  w->batch.done = 0;
  w->batch.total = w->n;
  w->batch.settle = settle_run;
  w->batch.settle_arg = &w->o.strict;
  return bs_batch_run(&w->batch, w->cfgs, w->n, w->res);
}

void bs_sweep_campaign_free(bs_sweep_campaign *w) {
  for (size_t i = 0; w->sc && i < w->nbase; i++)
    bs_result_free(&w->sc[i].count);
  for (size_t i = 0; w->res && i < w->n; i++)
    bs_result_free(&w->res[i]);
  free(w->sc);
  free(w->res);
  free(w->runs);
  free(w->cfgs);
  free(w->base);
}
