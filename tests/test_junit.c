/* JUnit XML that the strict Ant schema accepts (tests/data/junit-ant.xsd,
 * checked with xmllint): a pass, a failed oracle, a hang and a world size
 * given twice, each test case named once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bs_mutant.h"
#include "bs_test_cli.h"
#include "report/bs_report.h"

static int count(const char *s, const char *what) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
    n++;
  return n;
}

/* A hang's result by hand: the fixed core's watchdog ends every wait a
 * run can make, so no run of it hangs (one cut off by its deadline while
 * its watchdog was within its timeout is a fail). */
static void write_hang(const char *name) {
  bs_result r = {.ranks = 4, .verdict = BS_HANG, .detect_ms = -1};
  bs_buf b = {0};
  char path[256];
  snprintf(r.scenario, sizeof r.scenario, "steady-normal");
  r.note = strdup("killed past the 1 s deadline");
  r.repro = strdup("backstop run steady-normal --ranks 4 --seed 0");
  bs_report_junit(&b, &r, 1);
  snprintf(path, sizeof path, "%s/%s", dir, name);
  assert_int_equal(bs_report_save(path, &b), BS_OK);
  bs_buf_free(&b);
  bs_result_free(&r);
}

static void test_junit_valid(void **state) {
  (void)state;
  assert_int_equal(backstop("run steady-normal --ranks 2,2 -q --junit a.xml"),
                   0);
  assert_int_equal(backstop("run steady-maincast hash-mismatch --ranks 2 -q "
                            "--mutant same-tag-skip --junit b.xml"),
                   1);
  write_hang("c.xml");
  /* mutants --junit: the fixed core's runs, then a test per mutant; the
   * mutants steady-normal alone does not catch survive (failures). */
  assert_int_equal(backstop("mutants steady-normal -q --junit d.xml"), 1);
  char *d = slurp("d.xml");
  assert_non_null(strstr(d, "<testcase classname=\"backstop.mutants\" "
                            "name=\"pause-not-in-finally\" time=\""));
  assert_int_equal(count(d, "classname=\"backstop.mutants\""), BS_MUT_COUNT);
  assert_true(count(d, "<failure type=\"survived\"") > 0);
  free(d);
  char *a = slurp("a.xml"), *c = slurp("c.xml");
  /* --ranks 2,2: the same run twice, two names. */
  assert_non_null(strstr(a, "name=\"steady-normal [ranks=2 seed=0]\""));
  assert_non_null(strstr(a, "name=\"steady-normal [ranks=2 seed=0] #2\""));
  assert_int_equal(count(a, "<testcase "), 2);
  /* A hang is an error, counted. */
  assert_non_null(strstr(c, "errors=\"1\""));
  assert_non_null(strstr(c, "<error type=\"hang\""));
  assert_int_equal(count(c, "<failure"), 0);
  free(a);
  free(c);
  if (system("command -v xmllint >/dev/null 2>&1") != 0)
    skip(); /* ci/setup.sh installs it (libxml2-utils) */
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "cd %s && xmllint --noout --schema %s/junit-ant.xsd a.xml b.xml "
           "c.xml d.xml",
           dir, BS_TEST_DATA);
  assert_int_equal(system(cmd), 0);
}

static int setup(void **state) {
  (void)state;
  return cli_setup("bs_junit_");
}

static int teardown(void **state) {
  (void)state;
  return cli_teardown();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_junit_valid),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
