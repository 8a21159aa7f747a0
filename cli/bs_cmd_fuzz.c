/* `backstop fuzz [--seed S] [--runs N | --time-s T]`: swarm runs drawn from
 * one seed (harness/explore/bs_fuzz.h), every failure shrunk to a minimal
 * repro and classified: a truth of the configuration the fuzz knows
 * (bs_fuzz_known), or unexplained (a core bug or an oracle's false alarm,
 * to be looked at). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bs_cmd.h"
#include "bs_cmd_batch.h"
#include "bs_mutant.h"
#include "bs_opts.h"
#include "explore/bs_fuzz.h"
#include "report/bs_report.h"

#define DEFAULT_RUNS 100
#define CANDIDATES_MAX 48

/* A failure and what shrinking made of it. */
typedef struct finding {
  bs_fuzz_run drawn, minimal;
  bs_result first;  /* the drawn run's result */
  bs_result result; /* the minimal run's */
  char sig[96], key[256];
  char why[400];   /* known: the truth; else empty */
  bool reproduced; /* the drawn run failed alike a second time */
  size_t shrink_runs;
  size_t alike, alike_runs[8]; /* more runs that failed the same way */
  char drawn_repro[1024];
} finding;

/* A configuration's counting run (bs_fuzz_count_cfg), once per distinct
 * configuration (bs_fuzz_key) in the process: its verdict and reaches. */
typedef struct counted {
  char key[512];
  bs_result count;
} counted;

typedef struct fuzz {
  bs_opts o;
  const bs_scenario *pool[BS_SCENARIO_MAX];
  size_t npool;
  bs_run_cfg base;
  bs_cmd_batch batch;
  size_t runs; /* drawn so far */
  size_t count[BS_VERDICT_COUNT];
  size_t drawn[BS_FP_COUNT], fired[BS_FP_COUNT]; /* faults per point */
  finding *f;
  size_t nf;
  counted *c;              /* the counting runs so far */
  size_t nc, count_failed; /* failed with no drawn fault */
  double t0;
} fuzz;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- running drawn or shrunk runs ---- */

/* Runs r[0..n) in parallel, or their counting runs; res[i] for r[i]. */
static bs_status run_or_count(fuzz *z, const bs_fuzz_run *r, size_t n,
                              bool counting, bs_result *res) {
  bs_status st = BS_OK;
  bs_fuzz_cfg *c = calloc(n ? n : 1, sizeof *c);
  bs_run_cfg *cfgs = calloc(n ? n : 1, sizeof *cfgs);
  if (!c || !cfgs)
    BS_FAIL(BS_ERR_NOMEM, NULL, "fuzz: %zu runs", n);
  for (size_t i = 0; i < n; i++) {
    (counting ? bs_fuzz_count_cfg : bs_fuzz_cfg_make)(&r[i], &z->base, &c[i]);
    c[i].cfg.run_index = i;
    cfgs[i] = c[i].cfg;
  }
  BS_CHECK(bs_cmd_batch_run(&z->batch, cfgs, n, res));
out:
  free(c);
  free(cfgs);
  return st;
}

static bs_status run_all(fuzz *z, const bs_fuzz_run *r, size_t n,
                         bs_result *res) {
  return run_or_count(z, r, n, false, res);
}

/* ---- counting runs ---- */

static counted *counted_find(const fuzz *z, const char *key) {
  for (size_t i = 0; i < z->nc; i++)
    if (!strcmp(z->c[i].key, key))
      return &z->c[i];
  return NULL;
}

/* The counting run of r's configuration (NULL for a driver's run, which
 * draws no faults). */
static const bs_result *count_of(const fuzz *z, const bs_fuzz_run *r) {
  char key[512];
  bs_fuzz_key(r, key, sizeof key);
  const counted *c = counted_find(z, key);
  return c ? &c->count : NULL;
}

/* Keeps what the draws read of a counting run's result: its verdict,
 * oracles and reaches. */
static void keep_count(counted *c, bs_result *res) {
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
static bs_status count_new(fuzz *z, const bs_fuzz_run *r, size_t n) {
  bs_status st = BS_OK;
  bs_fuzz_run *uncounted = calloc(n ? n : 1, sizeof *uncounted);
  bs_result *res = calloc(n ? n : 1, sizeof *res);
  counted *grown = realloc(z->c, (z->nc + n + 1) * sizeof *grown);
  size_t m = 0, first = z->nc;
  if (grown)
    z->c = grown;
  if (!uncounted || !res || !grown)
    BS_FAIL(BS_ERR_NOMEM, NULL, "fuzz: %zu counting runs", n);
  for (size_t i = 0; i < n; i++) {
    counted *c = &z->c[z->nc];
    bs_fuzz_key(&r[i], c->key, sizeof c->key);
    if (r[i].scn->drive || counted_find(z, c->key))
      continue;
    c->count = (bs_result){0}; /* empty to free if the counting fails */
    uncounted[m++] = r[i];
    z->nc++;
  }
  bs_cmd_batch fuzzing = z->batch; /* the counting runs' own line */
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

static void repro_of(const fuzz *z, const bs_fuzz_run *r, char *out, size_t n) {
  bs_fuzz_cfg c;
  bs_buf b = {0};
  bs_fuzz_cfg_make(r, &z->base, &c);
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

static bs_status note_finding(fuzz *z, const bs_fuzz_run *r, bs_result *res) {
  char sig[96], key[256];
  bs_fuzz_signature(res, sig, sizeof sig);
  key_of(r, res, sig, key, sizeof key);
  for (size_t i = 0; i < z->nf; i++)
    if (strcmp(z->f[i].key, key) == 0) {
      finding *f = &z->f[i];
      if (f->alike < sizeof f->alike_runs / sizeof f->alike_runs[0])
        f->alike_runs[f->alike] = r->index;
      f->alike++;
      bs_result_free(res);
      return BS_OK;
    }
  finding *grown = realloc(z->f, (z->nf + 1) * sizeof *grown);
  if (!grown)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "fuzz: %zu findings", z->nf + 1);
  z->f = grown;
  finding *f = &z->f[z->nf++];
  *f = (finding){.drawn = *r, .minimal = *r, .first = *res};
  snprintf(f->sig, sizeof f->sig, "%s", sig);
  snprintf(f->key, sizeof f->key, "%s", key);
  repro_of(z, r, f->drawn_repro, sizeof f->drawn_repro);
  memset(res, 0, sizeof *res);
  return BS_OK;
}

static void progress(fuzz *z) {
  char what[160];
  snprintf(what, sizeof what,
           "runs: %zu pass, %zu vacuous, %zu fail, %zu hang, %zu crash, %zu "
           "finding%s",
           z->count[BS_PASS], z->count[BS_VACUOUS], z->count[BS_FAIL],
           z->count[BS_HANG], z->count[BS_CRASH], z->nf, z->nf == 1 ? "" : "s");
  bs_cmd_batch_line(&z->batch, what);
}

/* Which drawn faults fired or were pre-empted (bs_fuzz_drawn_hit). */
static void tally(fuzz *z, const bs_fuzz_run *r, const bs_result *res) {
  for (size_t i = 0; i < r->nfaults; i++) {
    int p = r->faults[i].point;
    z->drawn[p]++;
    z->fired[p] += bs_fuzz_drawn_hit(r, res, i);
  }
}

static bool budget_left(const fuzz *z) {
  if (z->o.time_s > 0)
    return now_s() - z->t0 < z->o.time_s;
  return z->runs < (size_t)z->o.runs;
}

/* Draws and runs the seed's stream until the budget is spent. */
static bs_status draw_all(fuzz *z) {
  bs_status st = BS_OK;
  /* Big chunks keep every job busy past a slow run; a time budget is
   * checked between chunks, so under --time-s they stay small. */
  size_t chunk = (size_t)z->batch.jobs *
                 (z->o.time_s > 0 ? 4 : BS_CMD_BATCH_CHUNK_PER_JOB);
  bs_fuzz_run *r = calloc(chunk, sizeof *r);
  bs_result *res = calloc(chunk, sizeof *res);
  if (!r || !res)
    BS_FAIL(BS_ERR_NOMEM, NULL, "fuzz: a batch of %zu runs", chunk);
  z->batch.label = "fuzz";
  z->batch.total = z->o.time_s > 0 ? 0 : (size_t)z->o.runs;
  while (budget_left(z)) {
    size_t n = z->o.time_s > 0 ? chunk : (size_t)z->o.runs - z->runs;
    n = n < chunk ? n : chunk;
    for (size_t i = 0; i < n; i++)
      bs_fuzz_draw(z->o.seed, z->runs + i, z->o.max_ranks, z->pool, z->npool,
                   &r[i]);
    BS_CHECK(count_new(z, r, n));
    for (size_t i = 0; i < n; i++)
      if (!r[i].scn->drive)
        bs_fuzz_draw_faults(z->o.seed, count_of(z, &r[i]), &r[i]);
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
    if (z->o.time_s > 0)
      z->batch.total = z->runs;
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
static bs_status shrink_round(fuzz *z, finding *f, bool *smaller) {
  bs_status st = BS_OK;
  bs_fuzz_run cand[CANDIDATES_MAX];
  bs_result res[CANDIDATES_MAX];
  size_t n = bs_fuzz_shrink(&f->minimal, cand, CANDIDATES_MAX);
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
static bs_status shrink(fuzz *z, finding *f) {
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
      bs_fuzz_known(&f->minimal, &f->result, f->why, sizeof f->why))
    return BS_OK;
  f->why[0] = '\0';
out:
  return st;
}

static bs_status shrink_all(fuzz *z) {
  bs_status st = BS_OK;
  for (size_t i = 0; i < z->nf; i++) {
    char what[64];
    snprintf(what, sizeof what, "shrinking finding %zu of %zu", i + 1, z->nf);
    bs_cmd_batch_line(&z->batch, what);
    BS_CHECK(shrink(z, &z->f[i]));
  }
out:
  return st;
}

/* ---- reports ---- */

static size_t unexplained(const fuzz *z) {
  size_t n = 0;
  for (size_t i = 0; i < z->nf; i++)
    n += !z->f[i].why[0];
  return n;
}

static const char *first_failure(const bs_result *r) {
  for (size_t i = 0; i < r->noracles; i++)
    if (!r->oracles[i].ok)
      return r->oracles[i].detail;
  return r->note ? r->note : "";
}

static void print_finding(FILE *out, const fuzz *z, size_t i) {
  const finding *f = &z->f[i];
  char minimal[1024];
  repro_of(z, &f->minimal, minimal, sizeof minimal);
  fprintf(out, "\nfinding %zu: %s in run %zu", i + 1, f->sig, f->drawn.index);
  if (f->alike) {
    fprintf(out, " (and %zu more alike: run", f->alike);
    size_t shown = f->alike < 8 ? f->alike : 8;
    for (size_t k = 0; k < shown; k++)
      fprintf(out, "%s %zu", k ? "," : "", f->alike_runs[k]);
    fprintf(out, "%s)", f->alike > shown ? ", ..." : "");
  }
  fprintf(out, "\n  %s: %s\n", f->why[0] ? "known" : "unexplained",
          f->why[0] ? f->why : first_failure(&f->first));
  if (!f->reproduced)
    fprintf(out, "  it did not fail alike when run again: %s\n",
            f->result.verdict == BS_PASS ? "it passed" : "another failure");
  fprintf(out, "  drawn:   %s\n", f->drawn_repro);
  if (f->reproduced)
    fprintf(out, "  minimal: %s (%zu shrink runs)\n", minimal, f->shrink_runs);
}

static void print_points(FILE *out, const fuzz *z) {
  fprintf(out, "faults fired (or pre-empted by another's) of drawn, per "
               "point:");
  for (int p = 0; p < BS_FP_COUNT; p++)
    fprintf(out, "%s %s %zu/%zu", p ? "," : "", bs_fault_catalogue_get(p)->name,
            z->fired[p], z->drawn[p]);
  fputc('\n', out);
}

/* What the counting runs cost. */
static void print_counting(FILE *out, const fuzz *z) {
  fprintf(out,
          "counting runs: %zu, one per configuration drawn (%zu failed with "
          "no drawn fault: their runs ran plain); a run is judged on the "
          "faults that fired (a fired fault's failure pre-empts another's "
          "reaches)\n",
          z->nc, z->count_failed);
}

static void print_summary(FILE *out, const fuzz *z) {
  fprintf(out,
          "fuzz seed %llu: %zu runs: %zu pass, %zu vacuous, %zu fail, %zu "
          "hang, %zu crash; %zu finding%s (%zu known, %zu unexplained)\n",
          (unsigned long long)z->o.seed, z->runs, z->count[BS_PASS],
          z->count[BS_VACUOUS], z->count[BS_FAIL], z->count[BS_HANG],
          z->count[BS_CRASH], z->nf, z->nf == 1 ? "" : "s",
          z->nf - unexplained(z), unexplained(z));
}

static void json_findings(bs_buf *b, const fuzz *z) {
  bs_buf_printf(b,
                "{\"seed\": %llu, \"runs\": %zu, \"pass\": %zu, \"vacuous\": "
                "%zu, \"fail\": %zu, \"hang\": %zu, \"crash\": %zu, "
                "\"counting_runs\": %zu, \"counting_failed\": %zu, "
                "\"findings\": [",
                (unsigned long long)z->o.seed, z->runs, z->count[BS_PASS],
                z->count[BS_VACUOUS], z->count[BS_FAIL], z->count[BS_HANG],
                z->count[BS_CRASH], z->nc, z->count_failed);
  for (size_t i = 0; i < z->nf; i++) {
    const finding *f = &z->f[i];
    char minimal[1024];
    repro_of(z, &f->minimal, minimal, sizeof minimal);
    bs_buf_printf(b, "%s\n    {\"run\": %zu, \"failure\": ", i ? "," : "",
                  f->drawn.index);
    bs_buf_json_str(b, f->sig);
    bs_buf_printf(b, ", \"alike\": %zu, \"known\": ", f->alike);
    bs_buf_json_str(b, f->why[0] ? f->why : NULL);
    bs_buf_printf(b, ", \"reproduced\": %s, \"drawn\": ",
                  f->reproduced ? "true" : "false");
    bs_buf_json_str(b, f->drawn_repro);
    bs_buf_printf(b, ", \"minimal\": ");
    bs_buf_json_str(b, minimal);
    bs_buf_printf(b, ", \"shrink_runs\": %zu}", f->shrink_runs);
  }
  bs_buf_printf(b, "%s], \"points\": [", z->nf ? "\n  " : "");
  for (int p = 0; p < BS_FP_COUNT; p++) {
    bs_buf_printf(b, "%s{\"point\": ", p ? ", " : "");
    bs_buf_json_str(b, bs_fault_catalogue_get(p)->name);
    bs_buf_printf(b, ", \"drawn\": %zu, \"fired\": %zu}", z->drawn[p],
                  z->fired[p]);
  }
  bs_buf_printf(b, "]}");
}

/* The reports hold the minimal run of each finding. */
static int save_reports(const fuzz *z) {
  bs_result *res = calloc(z->nf ? z->nf : 1, sizeof *res);
  bs_buf b = {0}, m = {0};
  int rc = !res;
  /* A finding that did not fail again is reported as it first failed. */
  for (size_t i = 0; res && i < z->nf; i++)
    res[i] = z->f[i].reproduced ? z->f[i].result : z->f[i].first;
  if (res && z->o.json) {
    bs_report_json(&b, res, z->nf, NULL, 0);
    json_findings(&m, z);
    bs_report_json_add(&b, "fuzz", bs_buf_str(&m));
    rc |= bs_report_save(z->o.json, &b) != BS_OK;
  }
  bs_buf_free(&b);
  bs_buf_free(&m);
  if (res && z->o.junit) {
    bs_report_junit(&b, res, z->nf);
    rc |= bs_report_save(z->o.junit, &b) != BS_OK;
    bs_buf_free(&b);
  }
  if (rc)
    fprintf(stderr, "backstop fuzz: %s\n", bs_err()->message);
  free(res);
  return rc;
}

/* ---- options ---- */

static bs_status check_fuzzable(const bs_opts *o) {
  if (o->runs && o->time_s > 0)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "--runs and --time-s: give one budget");
  const char *given =
      o->nranks             ? "--ranks (fuzz draws it; --max-ranks "
                              "bounds it)"
      : o->cycles >= 0      ? "--cycles (fuzz draws it)"
      : o->model            ? "--model (fuzz draws it)"
      : o->nsets            ? "--set (fuzz draws the settings)"
      : o->nfaults          ? "--fault (fuzz draws the faults)"
      : o->repeat > 1       ? "--repeat"
      : o->rendezvous       ? "--rendezvous"
      : o->procs.nprocs > 1 ? "a launcher's processes (fuzz runs each draw in "
                              "one process, or --spawn)"
      : o->scale != 1.0     ? "--scale (fuzz runs the models it draws at their "
                              "size)"
      : strcmp(o->backend, "sim") ? "--backend nccl (fuzz runs on sim)"
                                  : NULL;
  if (given)
    return bs_err_fail(BS_ERR_INVALID, NULL, "%s: not an option of fuzz",
                       given);
  return BS_OK;
}

static bs_status setup(fuzz *z, int argc, char **argv, const char *exe) {
  bs_status st = BS_OK;
  static const char *const all[] = {"*"};
  BS_CHECK(bs_opts_parse("fuzz", argc, argv, &z->o));
  BS_CHECK(check_fuzzable(&z->o));
  if (!z->o.runs && z->o.time_s <= 0)
    z->o.runs = DEFAULT_RUNS;
  BS_CHECK(bs_scenario_select(z->o.nsel ? z->o.sel : all,
                              z->o.nsel ? z->o.nsel : 1, z->pool, &z->npool));
#ifndef FIU_ENABLE
  BS_FAIL(BS_ERR_INVALID, NULL,
          "built without fault points (BS_FIU=OFF): nothing to fuzz");
#endif
  /* Draws validate under the mutants, as the runs will. */
  for (size_t i = 0; i < z->o.nmutants; i++)
    bs_mutant_set((bs_mutant)bs_mutant_parse(z->o.mutants[i]), true);
  z->base = (bs_run_cfg){.backend = z->o.backend,
                         .device = z->o.device,
                         .scale = 1.0,
                         .mutants = z->o.mutants,
                         .nmutants = z->o.nmutants,
                         .timeout_ms = z->o.timeout_ms,
                         .deadline_s = z->o.deadline_s,
                         .artifacts = z->o.artifacts,
                         .exe = exe,
                         .nprocs = 1,
                         .spawn = z->o.spawn};
out:
  return st;
}

int bs_cmd_fuzz(int argc, char **argv, const char *exe) {
  fuzz z = {.t0 = now_s()};
  int rc = 1;
  if (setup(&z, argc, argv, exe) != BS_OK)
    return bs_cmd_usage_error("fuzz");
  z.batch = (bs_cmd_batch){.jobs = bs_opts_jobs(&z.o),
                           .tty = isatty(STDERR_FILENO) ? stderr : NULL};
  if (draw_all(&z) != BS_OK || shrink_all(&z) != BS_OK) {
    bs_cmd_batch_end(&z.batch);
    fprintf(stderr, "backstop fuzz: %s\n", bs_err()->message);
    goto out;
  }
  bs_cmd_batch_end(&z.batch);
  for (size_t i = 0; i < z.nf && z.o.verbosity >= -1; i++)
    print_finding(stdout, &z, i);
  if (z.nf)
    fputc('\n', stdout);
  if (z.o.verbosity >= 0) {
    print_points(stdout, &z);
    print_counting(stdout, &z);
  }
  print_summary(stdout, &z);
  fflush(stdout); /* the time line after the report, not inside it */
  fprintf(stderr, "backstop fuzz: %.1f s\n", now_s() - z.t0);
  rc = (unexplained(&z) > 0) | save_reports(&z);
out:
  for (size_t i = 0; i < z.nf; i++) {
    bs_result_free(&z.f[i].first);
    bs_result_free(&z.f[i].result);
  }
  free(z.f);
  for (size_t i = 0; i < z.nc; i++)
    bs_result_free(&z.c[i].count);
  free(z.c);
  return rc;
}
