/* `backstop mutants`: the kill matrix (harness/explore/bs_kill_matrix.h)
 * run and printed. The selected scenarios run against the fixed core and
 * against each mutant; a mutant is killed by every scenario whose run did
 * not pass. */
#include <stdlib.h>
#include <unistd.h>

#include "bs_cmd.h"
#include "bs_mutant.h"
#include "explore/bs_kill_matrix.h"
#include "plan/bs_plan.h"
#include "report/bs_report.h"
#include "run/bs_run_all.h"

#define MUTANT_SUITE "@mutant-target"

static int print_matrix(FILE *out, const bs_result *res, size_t nbase,
                        const bs_kill *k) {
  bs_summary fixed = bs_report_summarize(res, nbase);
  int rc = fixed.pass != fixed.runs;
  fprintf(out, "\nfixed core: %zu of %zu runs pass", fixed.pass, fixed.runs);
  if (fixed.interrupted)
    fprintf(out, ", %zu interrupted", fixed.interrupted);
  fputc('\n', out);
  for (size_t i = 0; i < nbase; i++)
    if (res[i].verdict != BS_PASS)
      bs_report_table_line(out, &res[i], 0);
  fprintf(out, "%-24s %s\n", "mutant", "killed by");
  for (int m = 0; m < BS_MUT_COUNT; m++) {
    fprintf(out, "%-24s ", k[m].name);
    if (k[m].survived)
      fprintf(out, "SURVIVED (%s)", bs_mutant_effect((bs_mutant)m));
    if (k[m].interrupted)
      fprintf(out, "INTERRUPTED (a signal cut its runs short)");
    if (k[m].untested == bs_kill_unexplored)
      fprintf(out, "untested: %s", k[m].untested);
    else if (k[m].untested)
      fprintf(out, "untested: every scenario that targets it was skipped: %s",
              k[m].untested);
    for (size_t i = 0; i < k[m].nkilled; i++)
      fprintf(out, "%s%s", i ? ", " : "", k[m].killed_by[i]);
    fprintf(out, "\n");
    rc |= k[m].survived;
  }
  return rc;
}

/* The matrix's runs: mut[i] is run i's mutant (-1: the fixed core, the
 * first nbase). */
typedef struct matrix {
  const bs_result *res;
  const int *mut;
  size_t n, nbase;
} matrix;

/* --junit: the fixed core's runs and one test per mutant, timed by its
 * runs (bs_report_junit_mutants). */
static void junit_matrix(bs_buf *b, const bs_cmd_reports *r) {
  const matrix *x = r->arg;
  double secs[BS_MUT_COUNT] = {0};
  for (size_t i = 0; i < x->n; i++)
    if (x->mut[i] >= 0)
      secs[x->mut[i]] += x->res[i].duration_ms / 1e3;
  bs_report_junit_mutants(b, x->res, x->nbase, r->kills, secs, r->nkills);
}

static int report(const bs_opts_run *o, const bs_result *res, const int *mut,
                  const bool *explored, size_t n, size_t nbase) {
  bs_kill k[BS_MUT_COUNT];
  int rc = 1;
  if (bs_kill_matrix_judge(res, mut, explored, n, k) != BS_OK) {
    fprintf(stderr, "backstop mutants: %s\n", bs_err()->message);
    goto out;
  }
  /* Every process of a process-per-rank job judges alike; one speaks. */
  bool lead = bs_plan_lead(o);
  FILE *out = lead ? stdout : fopen("/dev/null", "w");
  if (!out)
    goto out;
  rc = print_matrix(out, res, nbase, k);
  if (!lead)
    fclose(out);
  matrix x = {.res = res, .mut = mut, .n = n, .nbase = nbase};
  bs_cmd_reports reports = {.runs = res,
                            .n = n,
                            .kills = k,
                            .nkills = BS_MUT_COUNT,
                            .junit = junit_matrix,
                            .arg = &x};
  if (lead)
    rc |= bs_cmd_save_reports("mutants", o->json, o->junit, &reports);
out:
  for (int m = 0; m < BS_MUT_COUNT; m++)
    bs_report_kill_free(&k[m]);
  return rc;
}

int bs_cmd_mutants(int argc, char **argv, const char *exe) {
  bs_opts_mutants om;
  bs_opts_run *o = &om.run;
  bs_plan plan;
  bs_run *all = NULL;
  bs_result *res = NULL;
  int *mut = NULL;
  bool *explored = NULL;
  size_t n = 0;
  if (bs_opts_parse_mutants(argc, argv, &om) != BS_OK)
    return bs_cmd_usage_error("mutants");
  if (o->nsel == 0)
    o->sel[o->nsel++] = MUTANT_SUITE;
  if (bs_plan_runs(o, exe, &plan) != BS_OK)
    return bs_cmd_usage_error("mutants");
  int rc = 1;
  size_t nbase = plan.n;
  all = bs_kill_matrix_plan(plan.runs, nbase, om.targeted, &mut, &explored, &n);
  res = calloc(n ? n : 1, sizeof *res);
  /* Runs that pass are the expected case for a mutant matrix: only
   * failures of the fixed core are news, the matrix says the rest. */
  bs_run_all_opts ro = {.jobs = bs_plan_jobs(o),
                        .verbosity = o->verbosity > 0 ? 1 : -1,
                        .out = bs_plan_lead(o) ? stdout : NULL,
                        .label = "mutants"};
  bs_status st = all && res ? bs_run_all(all, n, &ro, res)
                            : bs_err_fail(BS_ERR_NOMEM, NULL, "%zu results", n);
  if (st != BS_OK) {
    fprintf(stderr, "backstop mutants: %s\n", bs_err()->message);
    goto out;
  }
  rc = report(o, res, mut, explored, n, nbase);
out:
  free(mut);
  free(explored);
  for (size_t i = 0; res && i < n; i++)
    bs_result_free(&res[i]);
  free(res);
  free(all);
  bs_plan_free(&plan);
  return rc;
}
