/* The commands of the backstop CLI (docs/cli.md). Each returns the exit status:
 * 0 all pass, 1 something failed, 2 a usage error (one line on stderr).
 * argv[0] is the command's name. exe: the backstop binary, which engine
 * processes execute. */
#ifndef BS_CMD_H
#define BS_CMD_H

#include <stdbool.h>
#include <stdio.h>

#include "bs_buf.h"
#include "report/bs_report.h"

int bs_cmd_run(int argc, char **argv, const char *exe);
int bs_cmd_mutants(int argc, char **argv, const char *exe);
int bs_cmd_sweep(int argc, char **argv, const char *exe);
int bs_cmd_fuzz(int argc, char **argv, const char *exe);
int bs_cmd_list(int argc, char **argv);
int bs_cmd_faults(int argc, char **argv);
int bs_cmd_explain(int argc, char **argv);
int bs_cmd_help(int argc, char **argv);
/* No command: one line naming every command; returns 2. */
int bs_cmd_help_none(void);
/* "unknown command" with the nearest one; returns 2. */
int bs_cmd_help_unknown(const char *cmd);
/* The dumps of a real job: the hang report (0: no hang or desync in them,
 * 1: one found, 2: bad input), and the replay on simulated ranks. */
int bs_cmd_analyze(int argc, char **argv);
int bs_cmd_replay(int argc, char **argv);

/* Prints "backstop CMD: <the error record's message>" and returns 2. */
int bs_cmd_usage_error(const char *cmd);
/* Saves a report whole (bs_report_save) or not at all; a failure is named
 * on stderr ("backstop CMD: cannot write PATH: why"). 0, or 1 then. */
int bs_cmd_save(const char *cmd, const char *path, const bs_buf *b);
/* What a command's --json and --junit reports hold: the runs (the JSON
 * report's), the kill list (mutants), a section of the command's own
 * (sweep's matrix, fuzz's findings: its key and a writer of its value),
 * and a JUnit writer of its own (NULL: bs_report_junit of the runs). */
typedef struct bs_cmd_reports {
  const bs_result *runs;
  size_t n;
  const bs_kill *kills;
  size_t nkills;
  const char *section;
  void (*section_json)(bs_buf *b, const void *arg);
  void (*junit)(bs_buf *b, const struct bs_cmd_reports *r);
  const void *arg;
} bs_cmd_reports;
/* Writes the reports asked for (json, junit: paths, NULL: none), each
 * whole or not at all (bs_cmd_save). 0, or 1 when one could not be. */
int bs_cmd_save_reports(const char *cmd, const char *json, const char *junit,
                        const bs_cmd_reports *r);
/* "unknown option '-x'" or "unexpected argument 'x'" for cmd; returns 2. */
int bs_cmd_bad_arg(const char *cmd, const char *arg);
/* --json as the only option: true; a bad option: prints and sets *rc. */
bool bs_cmd_json_flag(const char *cmd, int argc, char **argv, int *rc);

#endif
