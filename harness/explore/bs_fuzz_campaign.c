#include "explore/bs_fuzz_campaign.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bs_mutant.h"
#include "bs_stop.h"
#include "bs_vec.h"

#define CANDIDATES_MAX 48

double bs_fuzz_campaign_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The mutants of every run: what its configuration validates under. */
static bs_mutants mutants(const bs_fuzz_campaign *z) {
  return bs_mutant_of(z->base.mutants, z->base.nmutants);
}

/* ---- running drawn or shrunk runs ---- */

/* Runs r[0..n) in parallel, or their counting runs; res[i] for r[i]. */
static bs_status run_or_count(bs_fuzz_campaign *z, const bs_fuzz_run *r,
                              size_t n, bool counting, bs_result *res) {
  bs_status st = BS_OK;
  bs_fuzz_cfg *c = calloc(n ? n : 1, sizeof *c);
  bs_run *cfgs = calloc(n ? n : 1, sizeof *cfgs);
  if (!c || !cfgs)
    BS_FAIL(BS_ERR_NOMEM, NULL, "fuzz: %zu runs", n);
  for (size_t i = 0; i < n; i++) {
    BS_CHECK((counting ? bs_fuzz_count_cfg
                       : bs_fuzz_cfg_make)(&r[i], &z->base, &z->models, &c[i]));
    c[i].cfg.run_index = i;
    cfgs[i] = c[i].cfg;
  }
  BS_CHECK(bs_batch_run(&z->batch, cfgs, n, res));
out:
  free(c);
  free(cfgs);
  return st;
}

static bs_status run_all(bs_fuzz_campaign *z, const bs_fuzz_run *r, size_t n,
                         bs_result *res) {
  return run_or_count(z, r, n, false, res);
}

/* ---- counting runs ---- */

static bs_fuzz_counted *counted_find(const bs_fuzz_campaign *z,
                                     const char *key) {
  for (size_t i = 0; i < z->nc; i++)
    if (!strcmp(z->c[i].key, key))
      return &z->c[i];
  return NULL;
}

/* The counting run of r's configuration (NULL for a driver's run, which
 * draws no faults). */
static const bs_result *count_of(const bs_fuzz_campaign *z,
                                 const bs_fuzz_run *r) {
  char key[512];
  bs_fuzz_key(r, key, sizeof key);
  const bs_fuzz_counted *c = counted_find(z, key);
  return c ? &c->count : NULL;
}

/* Keeps what the draws read of a counting run's result: its verdict,
 * oracles and reaches. */
static void keep_count(bs_fuzz_counted *c, bs_result *res) {
  c->count = (bs_result){.verdict = res->verdict,
                         .oracles = res->oracles,
                         .noracles = res->noracles,
                         .reaches = res->reaches,
                         .nreaches = res->nreaches};
  res->oracles = NULL;
  res->reaches = NULL;
  bs_result_free(res);
}

/* The counting runs of r[0..n)'s configurations not yet counted, in
 * parallel; a driver's runs draw no faults and need none. */
static bs_status count_new(bs_fuzz_campaign *z, const bs_fuzz_run *r,
                           size_t n) {
  bs_status st = BS_OK;
  bs_fuzz_run *uncounted = calloc(n ? n : 1, sizeof *uncounted);
  bs_result *res = calloc(n ? n : 1, sizeof *res);
  size_t m = 0, first = z->nc;
  if (!uncounted || !res)
    BS_FAIL(BS_ERR_NOMEM, NULL, "fuzz: %zu counting runs", n);
  BS_CHECK(bs_vec_reserve(&z->c, &z->ccap, z->nc + n, sizeof *z->c,
                          "fuzz: counting runs"));
  for (size_t i = 0; i < n; i++) {
    bs_fuzz_counted *c = &z->c[z->nc];
    bs_fuzz_key(&r[i], c->key, sizeof c->key);
    if (r[i].scn->drive || counted_find(z, c->key))
      continue;
    c->count = (bs_result){0}; /* empty to free if the counting fails */
    uncounted[m++] = r[i];
    z->nc++;
  }
  bs_batch fuzzing = z->batch; /* the counting runs' own line */
  z->batch.label = "fuzz: counting";
  z->batch.done = 0;
  z->batch.total = m;
  st = run_or_count(z, uncounted, m, true, res);
  z->batch = fuzzing;
  BS_CHECK(st);
  for (size_t i = 0; i < m; i++) {
    z->count_failed += bs_fuzz_plain_fails(&res[i]);
    keep_count(&z->c[first + i], &res[i]);
  }
out:
  for (size_t i = 0; res && i < m; i++)
    bs_result_free(&res[i]);
  free(uncounted);
  free(res);
  return st;
}

void bs_fuzz_campaign_repro(const bs_fuzz_campaign *z, const bs_fuzz_run *r,
                            char *out, size_t n) {
  bs_fuzz_cfg c;
  bs_buf b = {0};
  if (bs_fuzz_cfg_make(r, &z->base, NULL, &c) != BS_OK)
    bs_err_clear(); /* drawn valid: as far as it got, it names the run */
  bs_result_repro(&c.cfg, &b);
  snprintf(out, n, "%s", bs_buf_str(&b));
  bs_buf_free(&b);
}

/* Findings alike: the same failure of the same scenario, with drawn
 * faults of the same points hit (bs_fuzz_drawn_hit: which of them fired
 * before the first one's failure spread is timing, not the finding). */
static void key_of(const bs_fuzz_run *r, const bs_result *res, const char *sig,
                   char *out, size_t n) {
  bool fired[BS_FP_COUNT] = {false};
  for (size_t i = 0; i < r->nfaults; i++)
    if (bs_fuzz_drawn_hit(r, res, i))
      fired[r->faults[i].point] = true;
  int len = snprintf(out, n, "%s|%s|", sig, r->scn->name);
  for (int p = 0; p < BS_FP_COUNT && len >= 0 && (size_t)len < n; p++)
    if (fired[p])
      len += snprintf(out + len, n - (size_t)len, "%s,",
                      bs_fault_catalogue_get(p)->name);
}

static bs_status note_finding(bs_fuzz_campaign *z, const bs_fuzz_run *r,
                              bs_result *res) {
  char sig[96], key[256];
  bs_fuzz_signature(res, sig, sizeof sig);
  key_of(r, res, sig, key, sizeof key);
  for (size_t i = 0; i < z->nf; i++)
    if (strcmp(z->f[i].key, key) == 0) {
      bs_fuzz_finding *f = &z->f[i];
      if (f->alike < sizeof f->alike_runs / sizeof f->alike_runs[0])
        f->alike_runs[f->alike] = r->index;
      f->alike++;
      bs_result_free(res);
      return BS_OK;
    }
  if (bs_vec_reserve(&z->f, &z->fcap, z->nf + 1, sizeof *z->f,
                     "fuzz: findings") != BS_OK)
    return BS_ERR_NOMEM;
  bs_fuzz_finding *f = &z->f[z->nf++];
  *f = (bs_fuzz_finding){.drawn = *r, .minimal = *r, .first = *res};
  snprintf(f->sig, sizeof f->sig, "%s", sig);
  snprintf(f->key, sizeof f->key, "%s", key);
  bs_fuzz_campaign_repro(z, r, f->drawn_repro, sizeof f->drawn_repro);
  memset(res, 0, sizeof *res);
  return BS_OK;
}

static void progress(bs_fuzz_campaign *z) {
  char what[160];
  /* Judged a chunk at a time: the counts say of how many runs. */
  snprintf(what, sizeof what,
           "of %zu judged: %zu pass, %zu vacuous, %zu fail, %zu hang, %zu "
           "crash, %zu finding%s",
           z->runs, z->count[BS_PASS], z->count[BS_VACUOUS], z->count[BS_FAIL],
           z->count[BS_HANG], z->count[BS_CRASH], z->nf, z->nf == 1 ? "" : "s");
  bs_batch_line(&z->batch, what);
}

/* Which drawn faults fired or were pre-empted (bs_fuzz_drawn_hit). */
static void tally(bs_fuzz_campaign *z, const bs_fuzz_run *r,
                  const bs_result *res) {
  if (res->verdict == BS_INTERRUPTED) /* never judged: neither way */
    return;
  for (size_t i = 0; i < r->nfaults; i++) {
    int p = r->faults[i].point;
    z->drawn[p]++;
    z->fired[p] += bs_fuzz_drawn_hit(r, res, i);
  }
}

/* What the seed's runs are drawn from. */
static bs_fuzz_pool draw_pool(bs_fuzz_campaign *z) {
  return (bs_fuzz_pool){.scn = z->pool,
                        .n = z->npool,
                        .max_ranks = z->o.max_ranks,
                        .mutants = mutants(z),
                        .models = &z->models,
                        .schedule = z->base.schedule,
                        .schedule_given = z->o.run.schedule_given,
                        .schedule_seeded = z->o.run.schedule_seed_given};
}

static bool budget_left(const bs_fuzz_campaign *z) {
  if (bs_stop_signal()) /* interrupted: what was judged is reported */
    return false;
  if (z->o.time_s > 0)
    return bs_fuzz_campaign_now_s() - z->t0 < z->o.time_s;
  return z->runs < (size_t)z->o.runs;
}

/* Draws and runs the seed's stream until the budget is spent. */
bs_status bs_fuzz_campaign_draw(bs_fuzz_campaign *z) {
  bs_status st = BS_OK;
  /* Big chunks keep every job busy past a slow run; a time budget is
   * checked between chunks, so under --time-s they stay small. */
  size_t chunk =
      (size_t)z->batch.jobs * (z->o.time_s > 0 ? 4 : BS_BATCH_CHUNK_PER_JOB);
  bs_fuzz_run *r = calloc(chunk, sizeof *r);
  bs_result *res = calloc(chunk, sizeof *res);
  if (!r || !res)
    BS_FAIL(BS_ERR_NOMEM, NULL, "fuzz: a batch of %zu runs", chunk);
  z->batch.label = "fuzz";
  z->batch.total = z->o.time_s > 0 ? 0 : (size_t)z->o.runs;
  z->batch.budget_s = z->o.time_s;
  progress(z); /* its counts (of verdicts it judges again) from the start */
  bs_fuzz_pool pool = draw_pool(z);
  while (budget_left(z)) {
    size_t n = z->o.time_s > 0 ? chunk : (size_t)z->o.runs - z->runs;
    n = n < chunk ? n : chunk;
    for (size_t i = 0; i < n; i++)
      bs_fuzz_draw(z->o.run.seed, z->runs + i, &pool, &r[i]);
    BS_CHECK(count_new(z, r, n));
    for (size_t i = 0; i < n; i++)
      if (!r[i].scn->drive)
        bs_fuzz_draw_faults(z->o.run.seed, count_of(z, &r[i]), &r[i]);
    BS_CHECK(run_all(z, r, n, res));
    for (size_t i = 0; i < n; i++) {
      /* How many passes were pre-empted is timing (bs_fuzz_drawn_hit). */
      bool preempted;
      z->count[bs_fuzz_verdict(&r[i], &res[i], &preempted)]++;
      tally(z, &r[i], &res[i]);
      if (bs_fuzz_is_finding(&res[i]))
        BS_CHECK(note_finding(z, &r[i], &res[i]));
      bs_result_free(&res[i]);
    }
    z->runs += n;
    progress(z);
  }
out:
  free(r);
  free(res);
  return st;
}

/* ---- shrinking ---- */

/* One round: the first candidate (in the order bs_fuzz_shrink gives) that
 * still fails alike becomes the finding's minimal run. */
static bs_status shrink_round(bs_fuzz_campaign *z, bs_fuzz_finding *f,
                              bool *smaller) {
  bs_status st = BS_OK;
  bs_fuzz_run cand[CANDIDATES_MAX];
  bs_result res[CANDIDATES_MAX];
  size_t n = bs_fuzz_shrink(&f->minimal, mutants(z), cand, CANDIDATES_MAX);
  *smaller = false;
  size_t max = (size_t)z->o.shrink_max;
  if (n > max - f->shrink_runs)
    n = max - f->shrink_runs;
  memset(res, 0, sizeof res);
  BS_CHECK(run_all(z, cand, n, res));
  f->shrink_runs += n;
  for (size_t i = 0; i < n && !*smaller; i++) {
    char sig[96];
    bs_fuzz_signature(&res[i], sig, sizeof sig);
    if (strcmp(sig, f->sig) != 0)
      continue;
    f->minimal = cand[i];
    bs_result_free(&f->result);
    f->result = res[i];
    memset(&res[i], 0, sizeof res[i]);
    *smaller = true;
  }
out:
  for (size_t i = 0; i < CANDIDATES_MAX; i++)
    bs_result_free(&res[i]);
  return st;
}

/* Confirms the finding (the drawn run again), then shrinks it. */
static bs_status shrink(bs_fuzz_campaign *z, bs_fuzz_finding *f) {
  bs_status st = BS_OK;
  char sig[96];
  BS_CHECK(run_all(z, &f->drawn, 1, &f->result));
  f->shrink_runs = 1;
  bs_fuzz_signature(&f->result, sig, sizeof sig);
  f->reproduced = strcmp(sig, f->sig) == 0;
  for (bool smaller = f->reproduced;
       smaller && f->shrink_runs < (size_t)z->o.shrink_max;)
    BS_CHECK(shrink_round(z, f, &smaller));
  if (f->reproduced &&
      bs_fuzz_known(&f->minimal, mutants(z), &f->result, f->why, sizeof f->why))
    return BS_OK;
  f->why[0] = '\0';
out:
  return st;
}

bs_status bs_fuzz_campaign_shrink(bs_fuzz_campaign *z) {
  bs_status st = BS_OK;
  /* Its runs are counted apart: not drawn runs, and no budget of theirs. */
  z->batch.label = "fuzz: shrinking";
  z->batch.done = z->batch.total = 0;
  z->batch.budget_s = 0;
  for (size_t i = 0; i < z->nf; i++) {
    char what[64];
    snprintf(what, sizeof what, "shrinking finding %zu of %zu", i + 1, z->nf);
    bs_batch_line(&z->batch, what);
    BS_CHECK(shrink(z, &z->f[i]));
  }
out:
  return st;
}

size_t bs_fuzz_campaign_unexplained(const bs_fuzz_campaign *z) {
  size_t n = 0;
  for (size_t i = 0; i < z->nf; i++)
    n += !z->f[i].why[0];
  return n;
}

bs_status bs_fuzz_campaign_init(bs_fuzz_campaign *z, const char *exe) {
  bs_status st = BS_OK;
  static const char *const all[] = {"*"};
  const bs_opts_run *o = &z->o.run;
  BS_CHECK(bs_scenario_select(o->nsel ? o->sel : all, o->nsel ? o->nsel : 1,
                              z->pool, &z->npool));
#ifndef FIU_ENABLE
  BS_FAIL(BS_ERR_INVALID, NULL,
          "built without fault points (BS_FIU=OFF): nothing to fuzz");
#endif
  z->base = (bs_run){.backend = o->backend,
                     .device = o->device,
                     .scale = 1.0,
                     .nmutants = o->nmutants,
                     .timeout_ms = o->timeout_ms,
                     .deadline_s = o->deadline_s,
                     .artifacts = o->artifacts,
                     .exe = exe,
                     .nprocs = 1,
                     .spawn = o->spawn};
  /* Processes run real threads (bs_opts.c refused a schedule for them). */
  if (!o->spawn && strcmp(o->backend, "sim") == 0)
    z->base.schedule = o->schedule;
  memcpy(z->base.mutants, o->mutants, o->nmutants * sizeof *o->mutants);
out:
  return st;
}

void bs_fuzz_campaign_free(bs_fuzz_campaign *z) {
  for (size_t i = 0; i < z->nf; i++) {
    bs_result_free(&z->f[i].first);
    bs_result_free(&z->f[i].result);
  }
  free(z->f);
  for (size_t i = 0; i < z->nc; i++)
    bs_result_free(&z->c[i].count);
  free(z->c);
  bs_models_free(&z->models);
}
