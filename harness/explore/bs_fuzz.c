#include "explore/bs_fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_actor.h"
#include "bs_buf.h"
#include "bs_fault_control.h"
#include "explore/bs_known.h"
#include "model/bs_config_parse.h"
#include "oracles/bs_oracle.h"
#include "plan/bs_plan.h"

/* ---- the stream ---- */

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL; /* splitmix64 */
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static uint64_t next(rng *g) {
  g->s += 0x9e3779b97f4a7c15ULL;
  return mix64(g->s);
}

/* Uniform in [lo, hi]. */
static long pick(rng *g, long lo, long hi) {
  return lo + (long)(next(g) % (uint64_t)(hi - lo + 1));
}

/* True with probability 1/n. */
static bool one_in(rng *g, long n) {
  return pick(g, 1, n) == 1;
}

/* Settings a run may add to its scenario's: the backuper and its check,
 * offload and colocation, extra tags, smaller sync buckets, the optimizer
 * (and, drawn apart, a rule of rematerialize broken). */
static const char *const set_pool[] = {
    "rematerialize=1",
    "rematerialize=0",
    "ci_test=1",
    "ci_test=0",
    "check_rematerialize=1",
    "offload_train=0",
    "colocate=0",
    "with_ref=1",
    "with_teacher=1",
    "keep_old_actor=1",
    "update_buffer_bytes=2048",
    "precision_aware_optimizer=1",
    "optimizer_cpu_offload=1",
};
#define NPOOL (sizeof set_pool / sizeof set_pool[0])

/* What failinfo means differs by point (its .def row says which kind): a
 * draw each site can use. */
static uint64_t draw_failinfo(rng *g, const bs_fuzz_fault *f) {
  static const uint64_t stall_ms[] = {0, 1, 5, 20};
  switch (bs_fault_catalogue_get((bs_fault_point_id)f->point)->draw) {
  case BS_FAILINFO_TENSOR_BIT: /* tensor index, then the bit to flip */
    return (uint64_t)pick(g, 0, 15) | (uint64_t)pick(g, 0, 15) << 32;
  case BS_FAILINFO_BIT:
    return (uint64_t)pick(g, 0, 31);
  case BS_FAILINFO_MS: /* short: every reach may stall */
    return f->nth && f->times ? stall_ms[pick(g, 0, 3)]
                              : (uint64_t)pick(g, 0, 1);
  case BS_FAILINFO_PARITY:
    return (uint64_t)pick(g, 0, 1);
  default:
    return 0;
  }
}

/* The catalogue index of a reach's point, -1 for a reach of none. */
static int reach_point(const bs_fault_reach *x) {
  return x->count > 0 ? (int)x->point : -1;
}

/* The points count reached, in catalogue order; how many. */
static size_t reached_points(const bs_result *count, int *points) {
  bool seen[BS_FP_COUNT] = {false};
  size_t n = 0;
  for (size_t i = 0; i < count->nreaches; i++) {
    int p = reach_point(&count->reaches[i]);
    if (p >= 0)
      seen[p] = true;
  }
  for (int p = 0; p < BS_FP_COUNT; p++)
    if (seen[p])
      points[n++] = p;
  return n;
}

/* The k-th reach (rank, cycle) of point, and how many there are. */
static size_t reach_of(const bs_result *count, int point, size_t k,
                       const bs_fault_reach **out) {
  size_t n = 0;
  for (size_t i = 0; i < count->nreaches; i++)
    if (reach_point(&count->reaches[i]) == point && n++ == k)
      *out = &count->reaches[i];
  return n;
}

/* The most reaches of f's point on one rank in one cycle that its rank and
 * cycle filters keep: nth counts per rank and cycle. */
static long most_reaches(const bs_result *count, const bs_fuzz_fault *f) {
  long most = 0;
  for (size_t i = 0; i < count->nreaches; i++) {
    const bs_fault_reach *x = &count->reaches[i];
    if (reach_point(x) == f->point && (f->rank < 0 || f->rank == x->rank) &&
        (f->cycle < 0 || f->cycle == x->cycle) && x->count > most)
      most = x->count;
  }
  return most;
}

/* A fault where the counting run went: a reached point (each alike, however
 * often it is reached), one of its reaches whose rank and cycle the filters
 * pin half the time each, an nth that reach's rank and cycle, or the
 * busiest the filters keep, gets to (0, every reach, a quarter of the
 * time). */
static void draw_reached(rng *g, const bs_result *count, bs_fuzz_fault *f) {
  int points[BS_FP_COUNT];
  const bs_fault_reach *x = NULL;
  size_t np = reached_points(count, points);
  f->point = points[pick(g, 0, (long)np - 1)];
  size_t nx = reach_of(count, f->point, 0, &x);
  reach_of(count, f->point, (size_t)pick(g, 0, (long)nx - 1), &x);
  f->rank = one_in(g, 2) ? x->rank : -1;
  f->cycle = one_in(g, 2) ? -1 : x->cycle;
  f->nth = one_in(g, 4) ? 0 : pick(g, 1, most_reaches(count, f));
}

/* One draw per statement: the order of the draws is the seed's stream
 * (an initializer list's evaluation order is unspecified in C). */
static void draw_fault(rng *g, const bs_result *count, bs_fuzz_fault *f) {
  *f = (bs_fuzz_fault){.times = 1};
  draw_reached(g, count, f);
  f->prob = one_in(g, 8) ? 0.5 : 1.0;
  if (f->nth && one_in(g, 8))
    f->times = 0;
  else if (f->nth && one_in(g, 8))
    f->times = pick(g, 2, 3);
  f->onetime = one_in(g, 10);
  f->failinfo = draw_failinfo(g, f);
}

/* r's configuration as its run's is planned: the scenario's settings,
 * then the run's (parsed here, once), validated under m. */
static bs_status run_config(const bs_fuzz_run *r, bs_mutants m,
                            bs_config *out) {
  bs_status st = BS_OK;
  bs_config_setting set[BS_FUZZ_SETS];
  for (size_t i = 0; i < r->nsets; i++)
    BS_CHECK(bs_config_setting_parse(r->sets[i], &set[i]));
  BS_CHECK(bs_plan_config(r->scn, set, r->nsets, m, out));
out:
  return st;
}

static bool valid(const bs_fuzz_run *r, bs_mutants m) {
  bs_config cfg;
  bool ok = run_config(r, m, &cfg) == BS_OK;
  bs_err_clear();
  return ok;
}

/* The drawn model lays out over the drawn world with a bucket for each of
 * the scenario's model chunks (what the run's plan requires). */
static bool model_fits(const bs_fuzz_run *r, const bs_fuzz_pool *pool) {
  bs_config cfg;
  const bs_model_spec *m;
  bool ok = run_config(r, pool->mutants, &cfg) == BS_OK &&
            bs_models_get(pool->models, r->model, 1.0, &m) == BS_OK &&
            bs_actor_layout_check(m, r->ranks, &cfg) == BS_OK;
  bs_err_clear();
  return ok;
}

/* Rematerialize with one rule of its validation broken: only a core whose
 * validation misses the rule (a mutant) runs it. */
static void draw_violation(rng *g, bs_fuzz_run *r) {
  size_t nrules = 0;
  const bs_config_rule *rules = bs_config_rules(&nrules);
  const bs_config_rule *rule = &rules[pick(g, 0, (long)nrules - 1)];
  r->nsets = 0;
  r->sets[r->nsets++] = "rematerialize=1";
  for (size_t i = 0; i < 2 && rule->violation[i]; i++)
    r->sets[r->nsets++] = rule->violation[i];
}

/* Whether a setting of s's key is among r's (a key is set once). */
static bool key_set(const bs_fuzz_run *r, const char *s) {
  size_t klen = strcspn(s, "=");
  for (size_t i = 0; i < r->nsets; i++)
    if (!strncmp(r->sets[i], s, klen) && r->sets[i][klen] == '=')
      return true;
  return false;
}

static void draw_sets(rng *g, bs_mutants m, bs_fuzz_run *r) {
  size_t want = one_in(g, 2) ? 0 : (size_t)pick(g, 1, BS_FUZZ_SETS - 1);
  r->nsets = 0;
  for (size_t i = 0; i < want; i++) {
    const char *s = set_pool[pick(g, 0, NPOOL - 1)];
    if (!key_set(r, s))
      r->sets[r->nsets++] = s;
  }
  if (one_in(g, 4))
    draw_violation(g, r);
  if (!valid(r, m)) /* the scenario's own settings, which validate */
    r->nsets = 0;
}

/* The fewest cycles a run of s may draw (bs_plan_min_cycles), one at least:
 * a run of fewer is refused, or vacuous whatever it draws. */
static int own_cycles(const bs_scenario *s) {
  int need = bs_plan_min_cycles(s);
  return need > 1 ? need : 1;
}

void bs_fuzz_draw_schedule(uint64_t seed, size_t index, bool seeded,
                           bs_sched_spec *s) {
  rng g = {mix64(seed ^ 0x5c4ed01e5ull) ^ mix64(index + 1)};
  bool pct = one_in(&g, 4);
  s->policy = pct ? BS_SCHED_PCT : BS_SCHED_RANDOM;
  s->depth = pct ? (int)pick(&g, 2, 4) : 0;
  s->horizon = 0;
  if (one_in(&g, 2) && !seeded)
    s->seed = next(&g) >> 32;
}

/* r's schedule: the campaign's, else drawn (bs_fuzz_draw_schedule; the
 * other draws are as they were without it). */
static void draw_schedule(uint64_t seed, const bs_fuzz_pool *pool,
                          bs_fuzz_run *r) {
  r->schedule = pool->schedule;
  r->schedule.seed = pool->schedule_seeded ? pool->schedule.seed : r->seed;
  if (!pool->schedule_given && pool->schedule.policy != BS_SCHED_THREADS)
    bs_fuzz_draw_schedule(seed, r->index, pool->schedule_seeded, &r->schedule);
}

void bs_fuzz_draw(uint64_t seed, size_t index, const bs_fuzz_pool *pool,
                  bs_fuzz_run *out) {
  rng g = {mix64(seed) ^ mix64(index + 1)};
  int max_ranks = pool->max_ranks;
  *out = (bs_fuzz_run){.index = index,
                       .scn = pool->scn[pick(&g, 0, (long)pool->n - 1)]};
  /* Its own driver (config-matrix) takes nothing: it runs as it is. */
  if (out->scn->drive) {
    out->ranks = out->scn->default_ranks;
    out->cycles = out->scn->cycles;
    out->schedule = pool->schedule;
    out->schedule.seed = pool->schedule_seeded ? pool->schedule.seed : 0;
    return;
  }
  int lo = out->scn->min_ranks > 1 ? out->scn->min_ranks : 1;
  out->ranks = (int)pick(&g, lo, max_ranks > lo ? max_ranks : lo);
  int need = own_cycles(out->scn);
  out->cycles = (int)pick(&g, need, need > 3 ? need : 3);
  out->seed = next(&g) >> 32;
  if (one_in(&g, 4)) {
    const char *const *presets = bs_model_preset_list();
    size_t np = 0;
    while (presets[np])
      np++;
    out->model = presets[pick(&g, 0, (long)np - 1)];
  }
  draw_sets(&g, pool->mutants, out);
  if (out->model && !model_fits(out, pool))
    out->model = NULL;
  draw_schedule(seed, pool, out);
}

void bs_fuzz_draw_faults(uint64_t seed, const bs_result *count,
                         bs_fuzz_run *r) {
  int points[BS_FP_COUNT];
  rng g = {mix64(mix64(seed) ^ mix64(r->index + 1))}; /* not the draw's */
  r->nfaults = 0;
  if (r->scn->drive || bs_fuzz_plain_fails(count) ||
      reached_points(count, points) == 0)
    return;
  r->nfaults = (size_t)pick(&g, 1, BS_FUZZ_FAULTS);
  for (size_t i = 0; i < r->nfaults; i++)
    draw_fault(&g, count, &r->faults[i]);
}

/* An invariant's name (not the scenario's expectation or a check). */
static bool invariant(const char *name) {
  for (const bs_oracle *o = bs_oracle_list(); o->name; o++)
    if (!strcmp(o->name, name))
      return true;
  return false;
}

bool bs_fuzz_plain_fails(const bs_result *count) {
  bool broke = false, failed = false;
  for (size_t i = 0; i < count->noracles; i++) {
    failed |= !count->oracles[i].ok;
    broke |= !count->oracles[i].ok && invariant(count->oracles[i].name);
  }
  if (count->verdict == BS_FAIL)
    return broke || !failed; /* none failed: its setup did */
  return count->verdict == BS_HANG || count->verdict == BS_CRASH;
}

void bs_fuzz_key(const bs_fuzz_run *r, char *out, size_t n) {
  bs_buf b = {0};
  bs_buf_printf(&b, "%s|%d|%d|%s", r->scn->name, r->ranks, r->cycles,
                r->model ? r->model : "");
  for (size_t i = 0; i < r->nsets; i++)
    bs_buf_printf(&b, "|%s", r->sets[i]);
  snprintf(out, n, "%s", bs_buf_str(&b));
  bs_buf_free(&b);
}

/* ---- as a run ---- */

void bs_fuzz_spec(const bs_fuzz_fault *f, char *out, size_t n) {
  bs_buf b = {0};
  bs_buf_printf(&b, "name=%s", bs_fault_catalogue_get(f->point)->name);
  if (f->rank >= 0)
    bs_buf_printf(&b, ",rank=%d", f->rank);
  if (f->cycle >= 0)
    bs_buf_printf(&b, ",cycle=%d", f->cycle);
  if (f->nth)
    bs_buf_printf(&b, ",nth=%ld", f->nth);
  if (f->nth && f->times == 0)
    bs_buf_printf(&b, ",persistent");
  if (f->nth && f->times > 1)
    bs_buf_printf(&b, ",times=%ld", f->times);
  if (f->prob < 1.0)
    bs_buf_printf(&b, ",prob=%g", f->prob);
  if (f->failinfo)
    bs_buf_printf(&b, ",failinfo=%llu", (unsigned long long)f->failinfo);
  if (f->onetime)
    bs_buf_printf(&b, ",onetime");
  snprintf(out, n, "%s", bs_buf_str(&b));
  bs_buf_free(&b);
}

/* The scenario's faults in the run's world, then the drawn ones. */
static bs_status run_faults(const bs_fuzz_run *r, bs_fuzz_cfg *out) {
  bs_status st = BS_OK;
  char spec[160];
  size_t n = 0;
  BS_CHECK(bs_plan_own_faults(r->scn, r->ranks, out->faults, &n));
  out->cfg.nown = n;
  for (size_t i = 0; i < r->nfaults; i++) {
    bs_fuzz_spec(&r->faults[i], spec, sizeof spec);
    BS_CHECK(bs_plan_fault(spec, &out->faults[n++]));
  }
  out->cfg.nfaults = n;
out:
  return st;
}

bs_status bs_fuzz_cfg_make(const bs_fuzz_run *r, const bs_run *base,
                           bs_models *models, bs_fuzz_cfg *out) {
  bs_status st = BS_OK;
  bs_run *c = &out->cfg;
  memset(out, 0, sizeof *out);
  *c = *base;
  c->scn = r->scn;
  c->ranks = r->ranks;
  c->spawn = base->spawn && r->ranks > 1; /* one rank: one process */
  c->cycles = r->cycles;
  c->model_name = r->model ? r->model : r->scn->model;
  c->sets = r->sets;
  c->nsets = r->nsets;
  c->seed = r->seed;
  if (base->schedule.policy != BS_SCHED_THREADS)
    c->schedule = r->schedule;
  BS_CHECK(
      run_config(r, bs_mutant_of(base->mutants, base->nmutants), &c->config));
  if (!r->scn->drive && models)
    BS_CHECK(bs_models_get(models, c->model_name, 1.0, &c->model));
  BS_CHECK(run_faults(r, out));
out:
  bs_fuzz_cfg_link(out);
  return st;
}

bs_status bs_fuzz_count_cfg(const bs_fuzz_run *r, const bs_run *base,
                            bs_models *models, bs_fuzz_cfg *out) {
  bs_status st = bs_fuzz_cfg_make(r, base, models, out);
  out->cfg.nfaults = out->cfg.nown;
  out->cfg.seed = out->cfg.schedule.seed = 0;
  out->cfg.count_reaches = true;
  return st;
}

void bs_fuzz_cfg_link(bs_fuzz_cfg *c) {
  c->cfg.faults = c->faults;
}

/* ---- findings ---- */

bool bs_fuzz_drawn_fired(const bs_fuzz_run *r, const bs_result *res, size_t i) {
  size_t own = 0; /* the scenario's own faults are armed first */
  while (r->scn->faults && r->scn->faults[own])
    own++;
  return own + i < res->narmed && res->armed[own + i].fired_total > 0;
}

bool bs_fuzz_drawn_hit(const bs_fuzz_run *r, const bs_result *res, size_t i) {
  for (size_t k = 0; k < r->nfaults; k++)
    if (bs_fuzz_drawn_fired(r, res, k))
      return i < r->nfaults;
  return false;
}

bs_verdict bs_fuzz_verdict(const bs_fuzz_run *r, const bs_result *res,
                           bool *preempted) {
  bool fired = false;
  for (size_t i = 0; i < r->nfaults; i++)
    fired |= bs_fuzz_drawn_fired(r, res, i);
  *preempted = res->verdict == BS_VACUOUS && fired;
  return *preempted ? BS_PASS : res->verdict;
}

bool bs_fuzz_is_finding(const bs_result *r) {
  return r->verdict == BS_FAIL || r->verdict == BS_HANG ||
         r->verdict == BS_CRASH;
}

void bs_fuzz_signature(const bs_result *r, char *out, size_t n) {
  const char *oracle = "";
  for (size_t i = 0; i < r->noracles && !*oracle; i++)
    if (!r->oracles[i].ok)
      oracle = r->oracles[i].name;
  snprintf(out, n, "%s%s%s", bs_result_verdict_name(r->verdict),
           *oracle ? " " : "", oracle);
}

/* ---- shrinking ---- */

static size_t add(bs_fuzz_run *out, size_t n, size_t max,
                  const bs_fuzz_run *c) {
  if (n < max)
    out[n] = *c;
  return n < max ? n + 1 : n;
}

static size_t fewer_items(const bs_fuzz_run *r, bs_mutants m, bs_fuzz_run *out,
                          size_t n, size_t max) {
  for (size_t i = 0; i < r->nfaults; i++) {
    bs_fuzz_run c = *r;
    memmove(&c.faults[i], &c.faults[i + 1],
            (c.nfaults - i - 1) * sizeof c.faults[0]);
    c.nfaults--;
    n = add(out, n, max, &c);
  }
  for (size_t i = 0; i < r->nsets; i++) {
    bs_fuzz_run c = *r;
    memmove(&c.sets[i], &c.sets[i + 1], (c.nsets - i - 1) * sizeof c.sets[0]);
    c.nsets--;
    if (valid(&c, m))
      n = add(out, n, max, &c);
  }
  if (r->model) {
    bs_fuzz_run c = *r;
    c.model = NULL;
    n = add(out, n, max, &c);
  }
  return n;
}

/* Fewer ranks (faults on a rank past the world move to its last) and fewer
 * cycles, down to the scenario's fewest (a drawn fault pinned to a cycle
 * past them rules that size out). */
static size_t smaller_world(const bs_fuzz_run *r, bs_fuzz_run *out, size_t n,
                            size_t max) {
  int lo = r->scn->min_ranks > 1 ? r->scn->min_ranks : 1;
  for (int k = lo; k < r->ranks; k++) {
    bs_fuzz_run c = *r;
    c.ranks = k;
    for (size_t i = 0; i < c.nfaults; i++)
      if (c.faults[i].rank >= k)
        c.faults[i].rank = k - 1;
    n = add(out, n, max, &c);
  }
  for (int k = own_cycles(r->scn); k < r->cycles; k++) {
    bs_fuzz_run c = *r;
    bool fits = true;
    c.cycles = k;
    for (size_t i = 0; i < c.nfaults; i++)
      fits = fits && c.faults[i].cycle < k;
    if (fits)
      n = add(out, n, max, &c);
  }
  return n;
}

/* A lower nth, an earlier cycle, then the fault's extras dropped. */
static size_t plainer_faults(const bs_fuzz_run *r, bs_fuzz_run *out, size_t n,
                             size_t max) {
  for (size_t i = 0; i < r->nfaults; i++) {
    const bs_fuzz_fault *f = &r->faults[i];
    for (long k = 1; k < f->nth; k++) {
      bs_fuzz_run c = *r;
      c.faults[i].nth = k;
      n = add(out, n, max, &c);
    }
    if (f->cycle > 0) {
      bs_fuzz_run c = *r;
      c.faults[i].cycle = f->cycle - 1;
      n = add(out, n, max, &c);
    }
    bs_fuzz_run c = *r;
    bs_fuzz_fault *g = &c.faults[i];
    if (f->times != 1 || f->prob < 1.0 || f->onetime) {
      g->times = 1;
      g->prob = 1.0;
      g->onetime = false;
      n = add(out, n, max, &c);
    }
  }
  return n;
}

/* The run's own seed for its schedule, fewer PCT change points, random:
 * what the default would run, as near as it still fails. */
static size_t plainer_schedule(const bs_fuzz_run *r, bs_fuzz_run *out, size_t n,
                               size_t max) {
  bs_fuzz_run c = *r;
  if (r->schedule.policy == BS_SCHED_THREADS)
    return n;
  if (r->schedule.seed != r->seed) {
    c.schedule.seed = r->seed;
    n = add(out, n, max, &c);
  }
  c = *r;
  if (r->schedule.policy == BS_SCHED_PCT && r->schedule.depth > 1) {
    c.schedule.depth--;
    n = add(out, n, max, &c);
  }
  c = *r;
  if (r->schedule.policy == BS_SCHED_PCT) {
    c.schedule.policy = BS_SCHED_RANDOM;
    c.schedule.depth = 0;
    n = add(out, n, max, &c);
  }
  return n;
}

size_t bs_fuzz_shrink(const bs_fuzz_run *r, bs_mutants m, bs_fuzz_run *out,
                      size_t max) {
  size_t n = fewer_items(r, m, out, 0, max);
  n = smaller_world(r, out, n, max);
  n = plainer_faults(r, out, n, max);
  return plainer_schedule(r, out, n, max);
}

/* ---- known truths ---- */

bool bs_fuzz_known(const bs_fuzz_run *r, bs_mutants m, const bs_result *res,
                   char *why, size_t n) {
  bs_run c = {.scn = r->scn, .sets = r->sets, .nsets = r->nsets};
  if (run_config(r, m, &c.config) != BS_OK) {
    bs_err_clear(); /* not validated: its check counts as off */
    c.config.rematerialize = false;
  }
  return bs_known(&c, res, why, n);
}
