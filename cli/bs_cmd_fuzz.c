/* `backstop fuzz [--seed S] [--runs N | --time-s T]`: swarm runs drawn from
 * one seed (harness/explore/bs_fuzz_campaign.h), every failure shrunk to a
 * minimal repro and classified: a truth of the configuration the fuzz knows
 * (bs_fuzz_known), or unexplained (a core bug or an oracle's false alarm,
 * to be looked at). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_cmd.h"
#include "bs_json_write.h"
#include "explore/bs_fuzz_campaign.h"
#include "plan/bs_opts.h"
#include "report/bs_report.h"

#define DEFAULT_RUNS 100

/* ---- reports ---- */

static const char *first_failure(const bs_result *r) {
  for (size_t i = 0; i < r->noracles; i++)
    if (!r->oracles[i].ok)
      return r->oracles[i].detail;
  return r->note ? r->note : "";
}

static void print_finding(FILE *out, const bs_fuzz_campaign *z, size_t i) {
  const bs_fuzz_finding *f = &z->f[i];
  char minimal[1024];
  bs_fuzz_campaign_repro(z, &f->minimal, minimal, sizeof minimal);
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

static void print_points(FILE *out, const bs_fuzz_campaign *z) {
  fprintf(out, "faults fired (or pre-empted by another's) of drawn, per "
               "point:");
  for (int p = 0; p < BS_FP_COUNT; p++)
    fprintf(out, "%s %s %zu/%zu", p ? "," : "", bs_fault_catalogue_get(p)->name,
            z->fired[p], z->drawn[p]);
  fputc('\n', out);
}

/* What the counting runs cost. */
static void print_counting(FILE *out, const bs_fuzz_campaign *z) {
  fprintf(out,
          "counting runs: %zu, one per configuration drawn (%zu failed with "
          "no drawn fault: their runs ran plain); a run is judged on the "
          "faults that fired (a fired fault's failure pre-empts another's "
          "reaches)\n",
          z->nc, z->count_failed);
}

static void print_summary(FILE *out, const bs_fuzz_campaign *z) {
  fprintf(out,
          "fuzz seed %llu: %zu runs: %zu pass, %zu vacuous, %zu fail, %zu "
          "hang, %zu crash",
          (unsigned long long)z->o.run.seed, z->runs, z->count[BS_PASS],
          z->count[BS_VACUOUS], z->count[BS_FAIL], z->count[BS_HANG],
          z->count[BS_CRASH]);
  if (z->count[BS_INTERRUPTED]) /* cut short by a signal (bs_stop.h) */
    fprintf(out, ", %zu interrupted", z->count[BS_INTERRUPTED]);
  fprintf(out, "; %zu finding%s (%zu known, %zu unexplained)\n", z->nf,
          z->nf == 1 ? "" : "s", z->nf - bs_fuzz_campaign_unexplained(z),
          bs_fuzz_campaign_unexplained(z));
}

static void json_findings(bs_buf *b, const void *arg) {
  const bs_fuzz_campaign *z = arg;
  bs_buf_printf(b,
                "{\"seed\": %llu, \"runs\": %zu, \"pass\": %zu, \"vacuous\": "
                "%zu, \"fail\": %zu, \"hang\": %zu, \"crash\": %zu, "
                "\"interrupted\": %zu, \"counting_runs\": %zu, "
                "\"counting_failed\": %zu, \"findings\": [",
                (unsigned long long)z->o.run.seed, z->runs, z->count[BS_PASS],
                z->count[BS_VACUOUS], z->count[BS_FAIL], z->count[BS_HANG],
                z->count[BS_CRASH], z->count[BS_INTERRUPTED], z->nc,
                z->count_failed);
  for (size_t i = 0; i < z->nf; i++) {
    const bs_fuzz_finding *f = &z->f[i];
    char minimal[1024];
    bs_fuzz_campaign_repro(z, &f->minimal, minimal, sizeof minimal);
    bs_buf_printf(b, "%s\n    {\"run\": %zu, \"failure\": ", i ? "," : "",
                  f->drawn.index);
    bs_json_write_str(b, f->sig);
    bs_buf_printf(b, ", \"alike\": %zu, \"known\": ", f->alike);
    bs_json_write_str(b, f->why[0] ? f->why : NULL);
    bs_buf_printf(b, ", \"reproduced\": %s, \"drawn\": ",
                  f->reproduced ? "true" : "false");
    bs_json_write_str(b, f->drawn_repro);
    bs_json_write_field_str(b, ", ", "minimal", minimal);
    bs_buf_printf(b, ", \"shrink_runs\": %zu}", f->shrink_runs);
  }
  bs_buf_printf(b, "%s], \"points\": [", z->nf ? "\n  " : "");
  for (int p = 0; p < BS_FP_COUNT; p++) {
    bs_buf_printf(b, "%s{\"point\": ", p ? ", " : "");
    bs_json_write_str(b, bs_fault_catalogue_get(p)->name);
    bs_buf_printf(b, ", \"drawn\": %zu, \"fired\": %zu}", z->drawn[p],
                  z->fired[p]);
  }
  bs_buf_printf(b, "]}");
}

/* The reports hold the minimal run of each finding. */
static int save_reports(const bs_fuzz_campaign *z) {
  bs_result *res = calloc(z->nf ? z->nf : 1, sizeof *res);
  int rc = !res;
  /* A finding that did not fail again is reported as it first failed; a
   * known one as known (bs_known.h), its truth as the note, unless
   * --strict. The copies borrow their strings: only the array is freed. */
  for (size_t i = 0; res && i < z->nf; i++) {
    res[i] = z->f[i].reproduced ? z->f[i].result : z->f[i].first;
    if (z->f[i].why[0] && !z->o.strict) {
      res[i].verdict = BS_KNOWN;
      res[i].note = (char *)z->f[i].why;
    }
  }
  bs_cmd_reports reports = {.runs = res,
                            .n = z->nf,
                            .section = "fuzz",
                            .section_json = json_findings,
                            .arg = z};
  if (res)
    rc |= bs_cmd_save_reports("fuzz", z->o.run.json, z->o.run.junit, &reports);
  free(res);
  return rc;
}

/* ---- options ---- */

static bs_status check_fuzzable(const bs_opts_fuzz *z) {
  const bs_opts_run *o = &z->run;
  if (z->runs && z->time_s > 0)
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

static bs_status setup(bs_fuzz_campaign *z, int argc, char **argv,
                       const char *exe) {
  bs_status st = BS_OK;
  BS_CHECK(bs_opts_parse_fuzz(argc, argv, &z->o));
  BS_CHECK(check_fuzzable(&z->o));
  if (!z->o.runs && z->o.time_s <= 0)
    z->o.runs = DEFAULT_RUNS;
  BS_CHECK(bs_fuzz_campaign_init(z, exe));
out:
  return st;
}

int bs_cmd_fuzz(int argc, char **argv, const char *exe) {
  bs_fuzz_campaign z = {.t0 = bs_fuzz_campaign_now_s()};
  int rc = 1;
  if (setup(&z, argc, argv, exe) != BS_OK)
    return bs_cmd_usage_error("fuzz");
  z.batch = (bs_batch){.jobs = bs_plan_jobs(&z.o.run), .out = stderr};
  if (bs_fuzz_campaign_draw(&z) != BS_OK ||
      bs_fuzz_campaign_shrink(&z) != BS_OK) {
    bs_batch_end(&z.batch);
    fprintf(stderr, "backstop fuzz: %s\n", bs_err()->message);
    goto out;
  }
  bs_batch_end(&z.batch);
  for (size_t i = 0; i < z.nf && z.o.run.verbosity >= -1; i++)
    print_finding(stdout, &z, i);
  if (z.nf)
    fputc('\n', stdout);
  if (z.o.run.verbosity >= 0) {
    print_points(stdout, &z);
    print_counting(stdout, &z);
  }
  print_summary(stdout, &z);
  fflush(stdout); /* the time line after the report, not inside it */
  fprintf(stderr, "backstop fuzz: %.1f s\n", bs_fuzz_campaign_now_s() - z.t0);
  /* --strict: a known finding fails too. */
  size_t failing = z.o.strict ? z.nf : bs_fuzz_campaign_unexplained(&z);
  rc = (failing > 0) | save_reports(&z);
out:
  bs_fuzz_campaign_free(&z);
  return rc;
}
