#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_cmd.h"
#include "plan/bs_plan.h"
#include "report/bs_report.h"
#include "run/bs_run_all.h"

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
    bs_plan_warn_deadlines(&plan);
  bs_result *res = calloc(n, sizeof *res);
  bs_run_all_opts ro = {.jobs = bs_plan_jobs(&o),
                        .verbosity = o.verbosity,
                        .out = lead ? human : NULL,
                        .label = "run"};
  int rc = 1;
  bs_status st = res ? bs_run_all(cfgs, n, &ro, res)
                     : bs_err_fail(BS_ERR_NOMEM, NULL, "%zu results", n);
  if (st != BS_OK) {
    fprintf(stderr, "backstop run: %s\n", bs_err()->message);
    goto out;
  }
  rc = bs_run_all_exit_code(res, n);
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
