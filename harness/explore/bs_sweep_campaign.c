#include "explore/bs_sweep_campaign.h"

#include <stdlib.h>
#include <string.h>

#include "bs_vec.h"
#include "catalog/bs_scenario.h"
#include "explore/bs_fuzz.h"

bs_sweep_filter bs_sweep_campaign_filter(const bs_sweep_campaign *w,
                                         size_t index) {
  return (bs_sweep_filter){.points = w->o.points,
                           .npoints = w->o.npoints,
                           .rank = w->o.rank,
                           .cycle = w->o.cycle,
                           .sample = w->o.sample,
                           .sample_pct = w->o.sample_pct,
                           .offset = index * w->o.sample};
}

/* Every base run once, counting reaches. */
static bs_status count_pass(bs_sweep_campaign *w) {
  bs_status st = BS_OK;
  size_t nbase = w->plan.n;
  bs_run *c = calloc(nbase ? nbase : 1, sizeof *c);
  bs_result *r = calloc(nbase ? nbase : 1, sizeof *r);
  if (!c || !r)
    BS_FAIL(BS_ERR_NOMEM, NULL, "sweep: %zu counting runs", nbase);
  for (size_t i = 0; i < nbase; i++) {
    c[i] = w->plan.runs[i];
    c[i].count_reaches = true;
  }
  w->batch.label = "sweep: counting";
  w->batch.total = nbase;
  BS_CHECK(bs_batch_run(&w->batch, c, nbase, r));
  for (size_t i = 0; i < nbase; i++) {
    w->sc[i] = (bs_swept){.base = &w->plan.runs[i], .count = r[i]};
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
  s->fixed = s->base->nfaults;
  if (!bs_sweep_campaign_count_ok(s))
    return BS_OK;
  return bs_sweep_reaches(&s->count, &f, r, nr, &s->total);
}

/* A run of s's base with one more fault, spec (made here, parsed once);
 * first: its reach's first run. */
static bs_status add_run(bs_sweep_campaign *w, const bs_swept *s,
                         const char *spec, bool first) {
  bs_status st = BS_OK;
  const bs_run *base = s->base;
  bs_run_fault swept;
  BS_CHECK(bs_plan_fault(spec, &swept));
  BS_CHECK(
      bs_vec_reserve(&w->runs, &w->cap, w->n + 1, sizeof *w->runs, "sweep"));
  BS_CHECK(bs_vec_reserve(&w->at, &w->acap, w->n + 1, sizeof *w->at, "sweep"));
  BS_CHECK(bs_vec_reserve(&w->first, &w->facap, w->n + 1, sizeof *w->first,
                          "sweep"));
  w->at[w->n] = w->nfaults;
  w->first[w->n] = first;
  BS_CHECK(bs_vec_append(&w->faults, &w->nfaults, &w->fcap, base->faults,
                         base->nfaults, sizeof swept, "sweep"));
  BS_CHECK(bs_vec_push(&w->faults, &w->nfaults, &w->fcap, &swept, sizeof swept,
                       "sweep"));
  w->runs[w->n] = *base;
  w->runs[w->n].nfaults = base->nfaults + 1;
  w->runs[w->n].run_index = w->n;
  w->n++;
out:
  return st;
}

/* Two runs per reach, transient and persistent, less those the base's own
 * faults take (they would be the base run again, their swept fault never
 * firing). */
static bs_status add_runs(bs_sweep_campaign *w, bs_swept *s,
                          const bs_sweep_reach *r, size_t nr) {
  bs_status st = BS_OK;
  char spec[160];
  const bs_run *b = s->base;
  s->first = w->n;
  s->sampled = nr;
  for (size_t i = 0; i < nr; i++) {
    bool first = true;
    for (int persistent = 0; persistent < 2; persistent++) {
      if (bs_sweep_taken(b->faults, b->nfaults, &r[i], persistent)) {
        s->taken++;
        continue;
      }
      bs_sweep_spec(&r[i], persistent, spec, sizeof spec);
      BS_CHECK(add_run(w, s, spec, first));
      s->swept += first;
      first = false;
    }
  }
  s->n = w->n - s->first;
out:
  return st;
}

/* Once the lists stop moving: each run's faults. */
static void link_faults(bs_sweep_campaign *w) {
  for (size_t i = 0; i < w->n; i++)
    w->runs[i].faults = &w->faults[w->at[i]];
}

static bs_status plan_runs(bs_sweep_campaign *w) {
  bs_status st = BS_OK;
  for (size_t i = 0; i < w->plan.n; i++) {
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

/* Each scenario's schedule, unless --schedule: drawn from the campaign's
 * seed and its place in the plan, for its counting pass and every run of
 * its reaches alike (their reaches are the counting pass's). */
static void draw_schedules(bs_sweep_campaign *w) {
  const bs_opts_run *o = &w->o.run;
  for (size_t i = 0; i < w->plan.n; i++) {
    bs_sched_spec *s = &w->plan.runs[i].schedule;
    if (!o->schedule_given && s->policy != BS_SCHED_THREADS)
      bs_fuzz_draw_schedule(o->seed, i, o->schedule_seed_given, s);
  }
}

bs_status bs_sweep_campaign_plan(bs_sweep_campaign *w) {
  bs_status st = BS_OK;
  if (!(w->sc = calloc(w->plan.n ? w->plan.n : 1, sizeof *w->sc)))
    return BS_ERR_NOMEM;
  draw_schedules(w);
  BS_CHECK(count_pass(w));
  BS_CHECK(plan_runs(w));
  if (!(w->res = calloc(w->n ? w->n : 1, sizeof *w->res)))
    st = BS_ERR_NOMEM;
out:
  return st;
}

/* A sweep run's verdict as it ends, so the progress line counts what the
 * summary will: its swept fault is its last, after the fixed ones. */
static void settle_run(const bs_run *run, bs_result *res, void *arg) {
  const bool *strict = arg;
  bs_sweep_settle(run, res, run->nfaults - 1, *strict);
}

bs_status bs_sweep_campaign_run(bs_sweep_campaign *w) {
  w->batch.label = "sweep";
  w->batch.done = 0;
  w->batch.total = w->n;
  w->batch.settle = settle_run;
  w->batch.settle_arg = &w->o.strict;
  return bs_batch_run(&w->batch, w->runs, w->n, w->res);
}

void bs_sweep_campaign_free(bs_sweep_campaign *w) {
  for (size_t i = 0; w->sc && i < w->plan.n; i++)
    bs_result_free(&w->sc[i].count);
  for (size_t i = 0; w->res && i < w->n; i++)
    bs_result_free(&w->res[i]);
  free(w->sc);
  free(w->res);
  free(w->runs);
  free(w->faults);
  free(w->at);
  free(w->first);
  bs_plan_free(&w->plan);
}
