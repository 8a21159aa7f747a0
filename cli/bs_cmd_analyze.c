/* backstop analyze DIR: the hang report of a job's Flight Recorder dumps
 * (PyTorch's pickles, their JSON, or Backstop's own). */
#include <stdio.h>
#include <string.h>

#include "bs_cmd.h"
#include "dumps/bs_dumps.h"
#include "dumps/bs_dumps_report.h"

int bs_cmd_analyze(int argc, char **argv) {
  const char *dir = NULL, *pg = NULL;
  bs_dumps d;
  bs_dumps_verdict v;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--pg") == 0 && i + 1 < argc)
      pg = argv[++i];
    else if (argv[i][0] != '-' && !dir)
      dir = argv[i];
    else
      return bs_cmd_bad_arg("analyze", argv[i]);
  }
  if (!dir) {
    fprintf(stderr, "backstop analyze: expected the folder of the dumps "
                    "(see backstop help analyze)\n");
    return 2;
  }
  if (bs_dumps_load(dir, pg, &d) != BS_OK)
    return bs_cmd_usage_error("analyze");
  if (d.skipped) /* one line, whatever their number */
    fprintf(stderr, "backstop analyze: skipped %zu file%s that %s: %s\n",
            d.nskipped, d.nskipped == 1 ? "" : "s",
            d.nskipped == 1 ? "is not a Flight Recorder dump"
                            : "are not Flight Recorder dumps",
            d.skipped);
  if (bs_dumps_report(&d, &v) != BS_OK) {
    bs_dumps_free(&d);
    return bs_cmd_usage_error("analyze");
  }
  fputs(v.text, stdout);
  int rc = v.finding == BS_DUMPS_CLEAN ? 0 : 1;
  bs_dumps_report_verdict_free(&v);
  bs_dumps_free(&d);
  return rc;
}
