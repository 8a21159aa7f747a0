#include "report/bs_report.h"

#include <stdio.h>

/* Why a run did not pass, for the failure message. */
static void failure_message(const bs_result *r, char *out, size_t n) {
  char failed[BS_DETAIL_MAX];
  bs_result_failed_oracles(r, failed, sizeof failed);
  if (r->verdict == BS_FAIL)
    snprintf(out, n, "failed oracles: %s", failed[0] ? failed : "none");
  else
    snprintf(out, n, "%s: %s", bs_result_verdict_name(r->verdict),
             r->note ? r->note : "no result");
}

static void testcase(bs_buf *b, const bs_result *r) {
  bs_buf_printf(b, "    <testcase classname=\"backstop.");
  bs_buf_xml(b, r->scenario);
  bs_buf_printf(b, "\" name=\"");
  bs_buf_xml(b, r->scenario);
  bs_buf_printf(b, " [ranks=%d seed=%llu%s%s]\" time=\"%.3f\"", r->ranks,
                (unsigned long long)r->seed, r->nmutants ? " mutant=" : "",
                r->nmutants ? r->mutants[0] : "", r->duration_ms / 1e3);
  if (r->verdict == BS_PASS) {
    bs_buf_printf(b, "/>\n");
    return;
  }
  char msg[BS_DETAIL_MAX + 64];
  failure_message(r, msg, sizeof msg);
  bs_buf_printf(b, ">\n      <failure type=\"%s\" message=\"",
                bs_result_verdict_name(r->verdict));
  bs_buf_xml(b, msg);
  bs_buf_printf(b, "\">");
  for (size_t i = 0; i < r->noracles; i++)
    if (!r->oracles[i].ok) {
      bs_buf_xml(b, r->oracles[i].name);
      bs_buf_printf(b, ": ");
      bs_buf_xml(b, r->oracles[i].detail);
      bs_buf_printf(b, "\n");
    }
  bs_buf_printf(b, "repro: ");
  bs_buf_xml(b, r->repro);
  bs_buf_printf(b, "</failure>\n    </testcase>\n");
}

void bs_report_junit(bs_buf *b, const bs_result *runs, size_t n) {
  bs_summary s = bs_report_summarize(runs, n);
  double total = 0;
  for (size_t i = 0; i < n; i++)
    total += runs[i].duration_ms;
  bs_buf_printf(b,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<testsuites tests=\"%zu\" failures=\"%zu\">\n"
                "  <testsuite name=\"backstop\" tests=\"%zu\" "
                "failures=\"%zu\" errors=\"0\" skipped=\"0\" "
                "time=\"%.3f\">\n",
                s.runs, s.runs - s.pass, s.runs, s.runs - s.pass, total / 1e3);
  for (size_t i = 0; i < n; i++)
    testcase(b, &runs[i]);
  bs_buf_printf(b, "  </testsuite>\n</testsuites>\n");
}
