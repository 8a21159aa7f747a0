#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_cmd.h"
#include "driver/bs_driver.h"
#include "plan/bs_plan.h"
#include "report/bs_report.h"
#include "run/bs_child.h"
#include "run/bs_nccl_plan.h"
#include "run/bs_parent.h"
#include "run/bs_pool.h"

/* A deadline that the waits of a run's faults alone reach (a skipped init
 * is waited out for twice the watchdog's timeout) kills the run before its
 * watchdog could: said before running, once per scenario. */
static void warn_deadlines(const bs_run *cfgs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char why[160];
    double ms = bs_driver_waits_ms(&cfgs[i], why, sizeof why);
    if (ms < cfgs[i].deadline_s * 1000 ||
        (i && !strcmp(cfgs[i].scn->name, cfgs[i - 1].scn->name)))
      continue;
    fprintf(stderr,
            "backstop: warning: %s: --deadline-s %g is shorter than the "
            "%.0f ms its faults make it wait (%s): the deadline would end it "
            "before its watchdog does (raise --deadline-s or lower "
            "--timeout-ms)\n",
            cfgs[i].scn->name, cfgs[i].deadline_s, ms, why);
  }
}

int bs_cmd_run(int argc, char **argv, const char *exe) {
  bs_opts_run o;
  bs_plan plan;
  if (bs_opts_parse_run(argc, argv, &o) != BS_OK ||
      bs_plan_runs(&o, exe, &plan) != BS_OK)
    return bs_cmd_usage_error("run");
  const bs_run *cfgs = plan.runs;
  size_t n = plan.n;
  /* A report on stdout ("-") keeps stdout for itself. */
  bool to_stdout =
      (o.json && !strcmp(o.json, "-")) || (o.junit && !strcmp(o.junit, "-"));
  FILE *human = to_stdout ? stderr : stdout;
  bool lead = bs_plan_lead(&o);
  if (lead)
    warn_deadlines(cfgs, n);
  bs_result *res = calloc(n, sizeof *res);
  bs_parent_opts eo = {.jobs = bs_nccl_plan_jobs(cfgs, n, bs_plan_jobs(&o)),
                       .verbosity = o.verbosity,
                       .out = lead ? human : NULL,
                       .tty = lead && isatty(fileno(human)),
                       .child = bs_child_run};
  bs_progress line;
  bs_parent_progress(&eo, &line, "run", n);
  int rc = 1;
  bs_status st = res ? bs_pool_run_all(cfgs, n, &eo, res)
                     : bs_err_fail(BS_ERR_NOMEM, NULL, "%zu results", n);
  bs_progress_end(&line);
  if (st != BS_OK) {
    fprintf(stderr, "backstop run: %s\n", bs_err()->message);
    goto out;
  }
  rc = bs_parent_exit_code(res, n);
  if (!lead)
    goto out;
  /* The table's rows were printed as the runs ended (bs_parent_opts). */
  if (o.verbosity >= 0)
    fputc('\n', human);
  bs_report_table_summary(human, res, n);
  bs_cmd_reports reports = {.runs = res, .n = n};
  rc |= bs_cmd_save_reports("run", o.json, o.junit, &reports);
out:
  for (size_t i = 0; res && i < n; i++)
    bs_result_free(&res[i]);
  free(res);
  bs_plan_free(&plan);
  return rc;
}
