/* What every command shares: usage errors and the lone --json flag. */
#include <stdio.h>
#include <string.h>

#include "bs_cmd.h"
#include "bs_err.h"
#include "report/bs_report.h"

int bs_cmd_usage_error(const char *cmd) {
  fprintf(stderr, "backstop %s: %s\n", cmd, bs_err()->message);
  bs_err_clear();
  return 2;
}

int bs_cmd_save(const char *cmd, const char *path, const bs_buf *b) {
  if (bs_report_save(path, b) == BS_OK)
    return 0;
  fprintf(stderr, "backstop %s: %s\n", cmd, bs_err()->message);
  bs_err_clear();
  return 1;
}

int bs_cmd_save_reports(const char *cmd, const char *json, const char *junit,
                        const bs_cmd_reports *r) {
  int rc = 0;
  bs_buf b = {0}, m = {0};
  if (json) {
    bs_report_json(&b, r->runs, r->n, r->kills, r->nkills);
    if (r->section) {
      r->section_json(&m, r->arg);
      bs_report_json_add(&b, r->section, bs_buf_str(&m));
    }
    rc |= bs_cmd_save(cmd, json, &b);
  }
  bs_buf_free(&b);
  bs_buf_free(&m);
  if (junit) {
    if (r->junit)
      r->junit(&b, r);
    else
      bs_report_junit(&b, r->runs, r->n);
    rc |= bs_cmd_save(cmd, junit, &b);
  }
  bs_buf_free(&b);
  return rc;
}

int bs_cmd_bad_arg(const char *cmd, const char *arg) {
  fprintf(stderr, "backstop %s: %s '%s' (see backstop help %s)\n", cmd,
          arg[0] == '-' ? "unknown option or a value missing after"
                        : "unexpected argument",
          arg, cmd);
  return 2;
}

bool bs_cmd_json_flag(const char *cmd, int argc, char **argv, int *rc) {
  bool json = false;
  *rc = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0) {
      json = true;
      continue;
    }
    fprintf(stderr, "backstop %s: unknown %s '%s' (see backstop help %s)\n",
            cmd, argv[i][0] == '-' ? "option" : "argument", argv[i], cmd);
    *rc = 2;
  }
  return json;
}
