#include "report/bs_report.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *tag(bs_verdict v) {
  static const char *const tags[] = {"PASS",    "FAIL",        "HANG", "CRASH",
                                     "VACUOUS", "INTERRUPTED", "KNOWN"};
  return (unsigned)v < BS_VERDICT_COUNT ? tags[v] : "?";
}

static void run_name(const bs_result *r, char *out, size_t n) {
  int len = snprintf(out, n, "%s", r->scenario);
  for (size_t i = 0; i < r->nmutants && len >= 0 && (size_t)len < n; i++)
    len += snprintf(out + len, n - (size_t)len, " +%s", r->mutants[i]);
}

/* The hang/desync report the run left in its artifacts, indented. */
static void print_report(FILE *out, const char *path) {
  FILE *f = path ? fopen(path, "r") : NULL;
  char line[512];
  if (!f)
    return;
  while (fgets(line, sizeof line, f))
    fprintf(out, "      | %s%s", line, strchr(line, '\n') ? "" : "\n");
  fclose(f);
}

/* -v: each failed rank's outcome and the BS_FAIL behind it, the first frame
 * of a backtrace ("rank 3 engine-dead in update_weights at FILE:LINE"). */
static void print_outcomes(FILE *out, const bs_result *r) {
  for (size_t i = 0; i < r->noutcomes; i++) {
    const bs_rank_outcome *o = &r->outcomes[i];
    if (strcmp(o->status, "ok") == 0)
      continue;
    fprintf(out, "      rank %d %s%s%s%s%s\n", o->rank, o->status,
            o->phase[0] ? " in " : "", o->phase, o->where[0] ? " at " : "",
            o->where);
  }
}

void bs_report_table_line(FILE *out, const bs_result *r, int verbosity) {
  char name[160];
  run_name(r, name, sizeof name);
  fprintf(out, "%-5s %-40s %3d rank%s %9.1f ms", tag(r->verdict), name,
          r->ranks, r->ranks == 1 ? " " : "s", r->duration_ms);
  if (r->note && r->verdict != BS_PASS)
    fprintf(out, "  %s", r->note);
  fputc('\n', out);
  bool failed = r->verdict != BS_PASS;
  if (!failed && verbosity <= 0)
    return;
  /* Even -q says which oracle failed and why: a CI log is often all there
   * is of a run that failed once. */
  for (size_t i = 0; i < r->noracles; i++)
    if (!r->oracles[i].ok || verbosity > 0)
      fprintf(out, "      %s %-16s %s\n", r->oracles[i].ok ? "ok  " : "FAIL",
              r->oracles[i].name, r->oracles[i].detail);
  if (verbosity < 0) {
    fprintf(out, "      repro: %s\n", r->repro ? r->repro : "");
    return;
  }
  if (verbosity > 0)
    print_outcomes(out, r);
  if (failed) {
    print_report(out, r->report);
    if (r->trace)
      fprintf(out, "      artifacts: %s\n", r->trace);
    fprintf(out, "      repro: %s\n", r->repro ? r->repro : "");
  }
}

void bs_report_table_summary(FILE *out, const bs_result *runs, size_t n) {
  bs_summary s = bs_report_summarize(runs, n);
  fprintf(out,
          "%zu runs: %zu passed, %zu failed, %zu vacuous, %zu hung, %zu "
          "crashed",
          s.runs, s.pass, s.fail, s.vacuous, s.hang, s.crash);
  if (s.interrupted)
    fprintf(out, ", %zu interrupted", s.interrupted);
  if (s.known) /* sweep and fuzz only */
    fprintf(out, ", %zu known", s.known);
  fputc('\n', out);
}
