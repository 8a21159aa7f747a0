#include "run/bs_child_judge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/bs_scenario.h"
#include "driver/bs_driver.h"
#include "oracles/bs_judge.h"
#include "report/bs_artifacts.h"

/* The sweep's counting pass: every reach, in one order whatever process
 * counted it. */
static void reach_counts(const bs_record *rec, bs_result *res) {
  size_t n = rec->nreaches;
  if (!n || !(res->reaches = malloc(n * sizeof *res->reaches)))
    return;
  memcpy(res->reaches, rec->reaches, n * sizeof *res->reaches);
  res->nreaches = n;
  bs_fault_count_sort(res->reaches, n);
}

void bs_child_judge_unwritten(bs_result *res) {
  char what[sizeof bs_err()->message + 16];
  snprintf(what, sizeof what, "artifacts: %s", bs_err()->message);
  bs_err_clear();
  fprintf(stderr, "backstop: %s: %s\n", res->repro ? res->repro : res->scenario,
          what);
  bs_result_add_note(res, what);
}

void bs_child_judge(const bs_run *cfg, bs_status setup, bs_record *rec,
                    bs_result *res) {
  char why[400] = "";
  if (setup != BS_OK)
    bs_err_format(bs_err(), why, sizeof why);
  bs_err_clear();
  bs_expect_fn expect =
      bs_driver_user_faults(cfg, rec) ? NULL : cfg->scn->expect;
  if (bs_judge(cfg, rec, expect, res) != BS_OK)
    bs_result_set_note(res, "judging failed: %s", bs_err()->message);
  if (setup != BS_OK) {
    res->verdict = BS_FAIL;
    bs_result_set_note(res, "setup failed: %s", why);
  }
  if (cfg->count_reaches)
    reach_counts(rec, res);
  if (res->verdict != BS_PASS && cfg->artifacts &&
      bs_artifacts_write(cfg, rec, res) != BS_OK)
    bs_child_judge_unwritten(res);
}
