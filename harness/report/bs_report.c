/* What every report shares: the summary counts, a kill list, saving. */
#include "report/bs_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_file.h"

bs_summary bs_report_summarize(const bs_result *runs, size_t n) {
  bs_summary s = {.runs = n};
  for (size_t i = 0; i < n; i++) {
    s.pass += runs[i].verdict == BS_PASS;
    s.fail += runs[i].verdict == BS_FAIL;
    s.hang += runs[i].verdict == BS_HANG;
    s.crash += runs[i].verdict == BS_CRASH;
    s.vacuous += runs[i].verdict == BS_VACUOUS;
    s.interrupted += runs[i].verdict == BS_INTERRUPTED;
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
  if (strcmp(path, "-") == 0)
    return fputs(bs_buf_str(b), stdout) < 0 || fflush(stdout) != 0
               ? bs_err_fail(BS_ERR_INVALID, NULL, "cannot write stdout")
               : BS_OK;
  if (b->oom)
    return bs_err_fail(BS_ERR_INVALID, NULL, "cannot write %s: out of memory",
                       path);
  /* A temporary beside it, renamed once whole: a full disk leaves the old
   * file or none, never a torn one. */
  return bs_file_publish(path, bs_buf_str(b), b->len);
}
