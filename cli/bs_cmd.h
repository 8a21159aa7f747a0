/* The commands of the backstop CLI (docs/cli.md). Each returns the exit status:
 * 0 all pass, 1 something failed, 2 a usage error (one line on stderr).
 * argv[0] is the command's name. exe: the backstop binary, which engine
 * processes execute. */
#ifndef BS_CMD_H
#define BS_CMD_H

#include <stdbool.h>
#include <stdio.h>

#include "bs_buf.h"

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
/* "unknown option '-x'" or "unexpected argument 'x'" for cmd; returns 2. */
int bs_cmd_bad_arg(const char *cmd, const char *arg);
/* --json as the only option: true; a bad option: prints and sets *rc. */
bool bs_cmd_json_flag(const char *cmd, int argc, char **argv, int *rc);

#endif
