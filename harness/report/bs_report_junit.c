/* JUnit XML in the strict form of Ant's formatter (what validating
 * consumers require): a testsuite with timestamp, hostname, properties,
 * system-out and system-err; a run that failed an oracle, or whose armed
 * fault never fired (vacuous), is a <failure>, one that hung, crashed or was
 * interrupted an <error> (counted in errors), one whose failure the
 * configuration allows (known: sweep and fuzz) <skipped> with why; test names
 * are unique (a run repeated, as `--ranks 2,2` does, gets " #2"). */
#include "report/bs_report.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Why a run did not pass, for the message. */
static void failure_message(const bs_result *r, char *out, size_t n) {
  char failed[BS_DETAIL_MAX];
  bs_result_failed_oracles(r, failed, sizeof failed);
  if (r->verdict == BS_FAIL)
    snprintf(out, n, "failed oracles: %s", failed[0] ? failed : "none");
  else
    snprintf(out, n, "%s: %s", bs_result_verdict_name(r->verdict),
             r->note ? r->note : "no result");
}

/* "engine-death [ranks=4 seed=0 mutant=a,b]". */
static void base_name(bs_buf *b, const bs_result *r) {
  bs_buf_printf(b, "%s [ranks=%d seed=%llu", r->scenario, r->ranks,
                (unsigned long long)r->seed);
  for (size_t m = 0; m < r->nmutants; m++)
    bs_buf_printf(b, "%s%s", m ? "," : " mutant=", r->mutants[m]);
  bs_buf_printf(b, "]");
}

/* Whether two runs have the same base_name, without writing either. */
static bool same_name(const bs_result *a, const bs_result *b) {
  if (a->ranks != b->ranks || a->seed != b->seed ||
      a->nmutants != b->nmutants || strcmp(a->scenario, b->scenario) != 0)
    return false;
  for (size_t m = 0; m < a->nmutants; m++)
    if (strcmp(a->mutants[m], b->mutants[m]) != 0)
      return false;
  return true;
}

/* Its name, with " #k" when k-1 runs before it had the same one. */
static void test_name(bs_buf *b, const bs_result *runs, size_t i) {
  bs_buf mine = {0};
  int same = 0;
  for (size_t j = 0; j < i; j++)
    same += same_name(&runs[i], &runs[j]);
  base_name(&mine, &runs[i]);
  bs_buf_xml(b, bs_buf_str(&mine));
  if (same)
    bs_buf_printf(b, " #%d", same + 1);
  bs_buf_free(&mine);
}

static void problem(bs_buf *b, const bs_result *r) {
  bool failure = r->verdict == BS_FAIL || r->verdict == BS_VACUOUS;
  const char *tag = failure ? "failure" : "error";
  char msg[BS_DETAIL_MAX + 64];
  failure_message(r, msg, sizeof msg);
  bs_buf_printf(b, "      <%s type=\"%s\" message=\"", tag,
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
  bs_buf_printf(b, "</%s>\n", tag);
}

static void testcase(bs_buf *b, const bs_result *runs, size_t i) {
  const bs_result *r = &runs[i];
  bs_buf_printf(b, "    <testcase classname=\"backstop.");
  bs_buf_xml(b, r->scenario);
  bs_buf_printf(b, "\" name=\"");
  test_name(b, runs, i);
  bs_buf_printf(b, "\" time=\"%.3f\"", r->duration_ms / 1e3);
  if (r->verdict == BS_PASS) {
    bs_buf_printf(b, "/>\n");
    return;
  }
  if (r->verdict == BS_KNOWN) {
    bs_buf_printf(b, ">\n      <skipped message=\"known: ");
    bs_buf_xml(b, r->note ? r->note : "");
    bs_buf_printf(b, "\"/>\n    </testcase>\n");
    return;
  }
  bs_buf_printf(b, ">\n");
  problem(b, r);
  bs_buf_printf(b, "    </testcase>\n");
}

/* When and where: the report's writing, in UTC; this host. */
static void when_where(char *stamp, size_t ns, char *host, size_t nh) {
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(stamp, ns, "%Y-%m-%dT%H:%M:%S", &tm);
  if (gethostname(host, nh) != 0 || !host[0])
    snprintf(host, nh, "localhost");
  host[nh - 1] = '\0';
}

/* The counts a suite's header states. */
typedef struct counts {
  size_t tests, failures, errors, skipped;
  double secs;
} counts;

static void suite_open(bs_buf *b, const counts *c) {
  char stamp[32], host[256];
  when_where(stamp, sizeof stamp, host, sizeof host);
  bs_buf_printf(b,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<testsuites>\n"
                "  <testsuite name=\"backstop\" package=\"backstop\" "
                "id=\"0\" timestamp=\"%s\" hostname=\"",
                stamp);
  bs_buf_xml(b, host);
  bs_buf_printf(b,
                "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
                "skipped=\"%zu\" time=\"%.3f\">\n"
                "    <properties>\n"
                "      <property name=\"backstop.version\" value=\"%s\"/>\n"
                "    </properties>\n",
                c->tests, c->failures, c->errors, c->skipped, c->secs,
                BS_VERSION);
}

static void suite_close(bs_buf *b) {
  bs_buf_printf(b, "    <system-out/>\n    <system-err/>\n"
                   "  </testsuite>\n</testsuites>\n");
}

static counts runs_counts(const bs_result *runs, size_t n) {
  bs_summary s = bs_report_summarize(runs, n);
  counts c = {.tests = s.runs,
              .failures = s.fail + s.vacuous,
              .errors = s.hang + s.crash + s.interrupted,
              .skipped = s.known};
  for (size_t i = 0; i < n; i++)
    c.secs += runs[i].duration_ms / 1e3;
  return c;
}

void bs_report_junit(bs_buf *b, const bs_result *runs, size_t n) {
  counts c = runs_counts(runs, n);
  suite_open(b, &c);
  for (size_t i = 0; i < n; i++)
    testcase(b, runs, i);
  suite_close(b);
}

/* One mutant as a test: it passes when a scenario killed it. */
static void mutant_case(bs_buf *b, const bs_kill *k, double secs) {
  bs_buf_printf(b, "    <testcase classname=\"backstop.mutants\" name=\"");
  bs_buf_xml(b, k->name);
  bs_buf_printf(b, "\" time=\"%.3f\"", secs);
  if (!k->survived && !k->untested && !k->interrupted) {
    bs_buf_printf(b, "/>\n");
    return;
  }
  if (k->interrupted) {
    bs_buf_printf(b, ">\n      <error type=\"interrupted\" message=\"a "
                     "signal cut its runs short\">interrupted</error>\n"
                     "    </testcase>\n");
    return;
  }
  if (k->untested) {
    bs_buf_printf(b, ">\n      <skipped message=\"untested: ");
    bs_buf_xml(b, k->untested);
    bs_buf_printf(b, "\"/>\n    </testcase>\n");
    return;
  }
  bs_buf_printf(b, ">\n      <failure type=\"survived\" message=\"no scenario "
                   "caught it\">survived</failure>\n    </testcase>\n");
}

void bs_report_junit_mutants(bs_buf *b, const bs_result *fixed, size_t nfixed,
                             const bs_kill *kills, const double *secs,
                             size_t nkills) {
  counts c = runs_counts(fixed, nfixed);
  c.tests += nkills;
  for (size_t m = 0; m < nkills; m++) {
    c.failures += kills[m].survived;
    c.errors += kills[m].interrupted;
    c.skipped += kills[m].untested != NULL;
    c.secs += secs[m];
  }
  suite_open(b, &c);
  for (size_t i = 0; i < nfixed; i++)
    testcase(b, fixed, i);
  for (size_t m = 0; m < nkills; m++)
    mutant_case(b, &kills[m], secs[m]);
  suite_close(b);
}
