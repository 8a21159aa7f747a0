/* Reports over finished runs: the verdict table and per-run lines for
 * people, the JSON report of docs/cli.md and JUnit XML for machines. */
#ifndef BS_REPORT_H
#define BS_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "bs_buf.h"
#include "result/bs_result.h"

typedef struct bs_summary {
  size_t runs, pass, fail, hang, crash, vacuous, interrupted, known;
} bs_summary;
bs_summary bs_report_summarize(const bs_result *runs, size_t n);

/* One mutant of `backstop mutants`: the scenarios that caught it. */
typedef struct bs_kill {
  char name[48];
  char **killed_by;
  size_t nkilled;
  bool survived;
  /* Not killed, and a run of it was cut short by a signal (bs_stop.h):
   * neither killed nor survived. */
  bool interrupted;
  /* Why no scenario could catch it in this build (every one that targets
   * it was skipped, bs_scenario_skip_reason); NULL: it was tested. */
  const char *untested;
} bs_kill;
void bs_report_kill_free(bs_kill *k);

/* docs/cli.md's report: schema 1, version, runs, summary, and "mutants" when
 * kills is not NULL (an untested mutant adds "untested": why). */
void bs_report_json(bs_buf *b, const bs_result *runs, size_t n,
                    const bs_kill *kills, size_t nkills);
/* Adds "key": json (a JSON value) as the last member of what
 * bs_report_json wrote to b: the sweep's matrix, the fuzz's findings. */
void bs_report_json_add(bs_buf *b, const char *key, const char *json);
/* One testsuite, one testcase per run; a failure lists the failed
 * oracles (or says hang/crash). */
void bs_report_junit(bs_buf *b, const bs_result *runs, size_t n);
/* `mutants --junit`: the fixed core's runs, then one test per mutant (a
 * failure when it survived, skipped when untested); secs[m]: the time of
 * mutant m's runs. */
void bs_report_junit_mutants(bs_buf *b, const bs_result *fixed, size_t nfixed,
                             const bs_kill *kills, const double *secs,
                             size_t nkills);
/* The result table's row for one run, printed as the run ends:
 * "PASS  engine-death  4 ranks  41.7 ms" and, for a failure or with
 * verbose, one line per oracle and the repro command; with verbose also
 * each failed rank's outcome and where it was raised. */
void bs_report_table_line(FILE *out, const bs_result *r, int verbosity);
/* The line under the table: "15 runs: 14 passed, 0 failed, 1 vacuous, 0
 * hung, 0 crashed" */
void bs_report_table_summary(FILE *out, const bs_result *runs, size_t n);

/* Writes b to path whole or not at all (bs_file_publish; "-": stdout).
 * BS_ERR_INVALID naming path and why. */
bs_status bs_report_save(const char *path, const bs_buf *b);

#endif
