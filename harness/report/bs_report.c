/* What every report shares: the summary counts, a kill list, saving. */
#include "report/bs_report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bs_summary bs_report_summarize(const bs_result *runs, size_t n) {
  bs_summary s = {.runs = n};
  for (size_t i = 0; i < n; i++) {
    s.pass += runs[i].verdict == BS_PASS;
    s.fail += runs[i].verdict == BS_FAIL;
    s.hang += runs[i].verdict == BS_HANG;
    s.crash += runs[i].verdict == BS_CRASH;
    s.vacuous += runs[i].verdict == BS_VACUOUS;
    s.known += runs[i].verdict == BS_KNOWN;
  }
  return s;
}

void bs_report_kill_free(bs_kill *k) {
  for (size_t i = 0; i < k->nkilled; i++)
    free(k->killed_by[i]);
  free(k->killed_by);
  k->killed_by = NULL;
  k->nkilled = 0;
}

bs_status bs_report_save(const char *path, const bs_buf *b) {
  if (strcmp(path, "-") == 0) {
    fputs(bs_buf_str(b), stdout);
    return BS_OK;
  }
  FILE *f = fopen(path, "w");
  if (!f)
    return bs_err_fail(BS_ERR_INVALID, NULL, "cannot write %s: %s", path,
                       strerror(errno));
  size_t n = fwrite(bs_buf_str(b), 1, b->len, f);
  if (fclose(f) != 0 || n != b->len || b->oom)
    return bs_err_fail(BS_ERR_INVALID, NULL, "cannot write %s: %s", path,
                       b->oom ? "out of memory" : strerror(errno));
  return BS_OK;
}
