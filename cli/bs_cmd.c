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
