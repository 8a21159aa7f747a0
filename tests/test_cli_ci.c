/* `backstop run` as a CI job meets it (docs/cli.md, issue 22): what the machine
 * lacks is refused before anything runs; each run's artifacts folder holds
 * that run's files only; reports are whole or absent, and a failed write
 * is named and fails the exit status; repro lines carry what changes the
 * outcome; long work prints progress on stderr. Real-time cases are
 * test_cli_ci_slow's (tests/bs_test_split.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bs_mutant.h"
#include "bs_test_cli.h"
#include "bs_test_faults.h"
#include "bs_test_split.h"
#include "dev/bs_dev.h"

static int setup(void **state) {
  (void)state;
  return cli_setup("bs_ci_");
}

static int teardown(void **state) {
  (void)state;
  char cmd[160];
  snprintf(cmd, sizeof cmd, "umount %s/tm 2>/dev/null", dir);
  if (system(cmd) != 0) { /* not mounted: nothing to undo */
  }
  return cli_teardown();
}

static void has(const char *text, const char *what) {
  if (!strstr(text, what))
    fail_msg("no '%s' in:\n%s", what, text);
}

/* Whether path (inside dir) exists. */
static int exists(const char *path) {
  char full[512];
  snprintf(full, sizeof full, "%s/%s", dir, path);
  return access(full, F_OK) == 0;
}

/* A backend or device this machine lacks: exit 2 with the reason, before
 * any run (no artifacts), not a run that fails. Only where there is no GPU. */
static void test_refuses_what_is_missing(void **state) {
  (void)state;
  if (bs_dev_cuda_count() > 0)
    skip();
  assert_int_equal(backstop("run steady-normal --backend nccl --artifacts a"),
                   2);
  has(err_text, "backstop run: --backend nccl: no ");
  assert_ptr_equal(strchr(err_text, '\n'), err_text + strlen(err_text) - 1);
  assert_int_equal(backstop("run steady-normal --device cuda --artifacts a"),
                   2);
  has(err_text, "backstop run: --device cuda: no GPU here");
  assert_string_equal(out_text, "");
  assert_false(exists("a"));
}

/* A run stalled past a 1.5 s deadline, its watchdog 100 s. */
#define STALLED                                                                \
  "run steady-normal --ranks 2 --timeout-ms 100000 --fault "                   \
  "name=comm/stall,rank=0,nth=3,failinfo=60000 --deadline-s 1.5"

/* Killed at its deadline while the watchdog was within its timeout: a
 * fail that says the deadline was too short, not a hang. */
static void deadline_too_short(void) {
  has(out_text, "FAIL  steady-normal");
  has(out_text, "the deadline was shorter than the timeouts the run needed");
}

/* The repro line of a hang names the deadline that made it one, and run
 * as it is gives the same verdict (without the deadline it waited the
 * default 60 s and passed). */
static void test_repro_carries_the_deadline(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  assert_int_equal(backstop(STALLED), 1);
  deadline_too_short();
  const char *at = strstr(out_text, "repro: backstop run ");
  assert_non_null(at);
  char repro[512];
  snprintf(repro, sizeof repro, "%.*s", (int)strcspn(at, "\n"), at);
  has(repro, " --deadline-s 1.5");
  has(repro, " --timeout-ms 100000");
  has(out_text, "stopped at its 1.5 s deadline on the virtual clock");
  /* The repro line run as it is: the same verdict. */
  assert_int_equal(backstop(repro + strlen("repro: backstop ")), 1);
  deadline_too_short();
}

/* On real threads the parent's deadline, in real time, does the same
 * (label slow: 1.5 s of real time). */
static void test_real_time_deadline(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  assert_int_equal(backstop_threads(STALLED), 1);
  deadline_too_short();
  has(out_text, "killed past the 1.5 s deadline");
}

/* The run's folder, from its "artifacts: DIR/trace.json" line. */
static void run_folder(char *out, size_t n) {
  const char *at = strstr(out_text, "artifacts: ");
  assert_non_null(at);
  at += strlen("artifacts: ");
  snprintf(out, n, "%.*s", (int)(strstr(at, "/trace.json") - at), at);
}

#define FAILING                                                                \
  "run steady-maincast --ranks 2 --cycles 1 --mutant same-tag-skip"

/* A second run into the same --artifacts finds its folder emptied: a file
 * an earlier run left there is gone, and a run that passes leaves no
 * folder. Runs that differ in what they do get folders of their own. */
static void test_artifacts_folder_of_its_own(void **state) {
  (void)state;
  char folder[256], stale[300], trace[300], other[256], cmd[512];
  assert_int_equal(backstop(FAILING " --artifacts art"), 1);
  run_folder(folder, sizeof folder);
  snprintf(stale, sizeof stale, "%s/rank_7", folder);
  snprintf(trace, sizeof trace, "%s/trace.json", folder);
  /* What an earlier, wider run left. */
  snprintf(cmd, sizeof cmd, "cd %s && touch %s", dir, stale);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(backstop(FAILING " --artifacts art"), 1);
  assert_false(exists(stale));
  assert_true(exists(trace));
  /* Another deadline: another folder, the first one left as it was. */
  assert_int_equal(backstop(FAILING " --deadline-s 30 --artifacts art"), 1);
  run_folder(other, sizeof other);
  assert_string_not_equal(other, folder);
  assert_true(exists(trace));
  /* A run without options past its seed: the folder is its plain name. */
  snprintf(cmd, sizeof cmd,
           "cd %s && mkdir -p art/steady-normal-r2-s3 && "
           "touch art/steady-normal-r2-s3/report.txt",
           dir);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(backstop("run steady-normal --ranks 2 --seed 3 -q "
                            "--artifacts art"),
                   0);
  assert_false(exists("art/steady-normal-r2-s3"));
}

/* Every "<label>: <done>[/<total>] runs" line of stderr: how many, and
 * none past its total; *totals: how many had one. */
static int progress_lines(const char *label, int *totals) {
  char head[64];
  int n = 0;
  *totals = 0;
  snprintf(head, sizeof head, "%s: ", label);
  for (const char *p = err_text; (p = strstr(p, head)); p += strlen(head)) {
    if (p != err_text && p[-1] != '\n')
      continue;
    unsigned long done = 0, total = 0;
    int k = sscanf(p + strlen(head), "%lu/%lu runs", &done, &total);
    if (k < 1) /* another phase's line ("sweep: counting: ...") */
      continue;
    if (k == 2) {
      if (done > total)
        fail_msg("progress past its total: %.60s", p);
      (*totals)++;
    }
    n++;
  }
  return n;
}

/* Long work in a CI log (stderr a pipe): plain progress lines on stderr
 * (every run here: BS_PROGRESS_S=0), done never past total; a time budget
 * shows what is left, not a total it would outgrow. */
static void test_progress_on_stderr(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  int totals;
  /* The verdicts are not what is checked here (a loaded machine may trip
   * the sweep's 1 s watchdog): 0 or 1, never a usage error. */
  assert_true(backstop_after("BS_PROGRESS_S=0 ",
                             "sweep steady-normal --ranks 2 --sample 4") <= 1);
  assert_true(progress_lines("sweep", &totals) >= 8);
  has(err_text, "sweep: 8/8 runs, eta 0 s, ");
  assert_true(backstop_after("BS_PROGRESS_S=0 ", "fuzz --seed 1 --runs 6") <=
              1);
  assert_true(progress_lines("fuzz", &totals) >= 6);
  has(err_text, "fuzz: 6/6 runs, eta 0 s, of 6 judged: ");
  /* A big suite: run and mutants too, when their lines are not redrawn. */
  assert_true(backstop_after("BS_PROGRESS_S=0 ", "run @fault -q") <= 1);
  assert_true(progress_lines("run", &totals) >= 2);
  has(err_text, " vacuous\n");
}

/* A time budget (real time: label slow) shows what is left, not a total
 * it would outgrow. */
static void test_time_budget_progress(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  int totals;
  assert_true(backstop_after("BS_PROGRESS_S=0 ", "fuzz --seed 1 --time-s 1") <=
              1);
  assert_true(progress_lines("fuzz", &totals) >= 1);
  assert_int_equal(totals, 0);
  has(err_text, " s left, of ");
}

/* A full disk (an 8 KiB tmpfs): the JSON report does not fit and is not
 * there at all (no torn file, no temporary left), the JUnit that fits is
 * whole, the failure is named and the exit status says so. */
static void test_reports_whole_or_absent(void **state) {
  (void)state;
  char cmd[256];
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s/tm && mount -t tmpfs -o size=8k tmpfs %s/tm "
           "2>/dev/null",
           dir, dir);
  if (system(cmd) != 0) {
    print_message("skip: cannot mount a tmpfs here (needs root)\n");
    skip();
  }
  assert_int_equal(backstop("run steady-normal --ranks 2 --cycles 1 "
                            "--repeat 20 -q --json tm/r.json --junit tm/r.xml"),
                   1);
  has(err_text, "backstop run: cannot write tm/r.json: No space left");
  has(out_text, "20 runs: "); /* each judged; only the JSON was lost */
  assert_false(exists("tm/r.json"));
  char *xml = slurp("tm/r.xml");
  has(xml, "</testsuites>\n");
  free(xml);
  snprintf(cmd, sizeof cmd, "ls -a %s/tm | grep -q tmp", dir);
  assert_int_not_equal(system(cmd), 0);
}

/* An artifacts folder that cannot be made is a usage error before
 * anything runs; a run's own folder that cannot be made (every mutant in
 * its name: longer than a file name may be) is named as the run ends, on
 * stderr and in its line. */
static void test_unwritten_artifacts_named(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "touch %s/afile", dir);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(backstop("run steady-normal --artifacts afile/sub"), 2);
  has(err_text, "--artifacts: cannot create afile/sub: Not a directory\n");
  int len = snprintf(cmd, sizeof cmd,
                     "run steady-offload-disaggregated --ranks 2 --cycles 1 "
                     "--fault name=engine/send,rank=1,nth=999 --artifacts "
                     "arts");
  for (int m = 0; m < BS_MUT_COUNT; m++)
    len += snprintf(cmd + len, sizeof cmd - (size_t)len, " --mutant %s",
                    bs_mutant_name((bs_mutant)m));
  assert_int_equal(backstop(cmd), 1);
  has(out_text, "artifacts: cannot create arts/steady-offload-disaggregated-");
  has(err_text, ": artifacts: cannot create arts/");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refuses_what_is_missing),
      cmocka_unit_test(test_repro_carries_the_deadline),
      cmocka_unit_test(test_real_time_deadline),
      cmocka_unit_test(test_artifacts_folder_of_its_own),
      cmocka_unit_test(test_progress_on_stderr),
      cmocka_unit_test(test_time_budget_progress),
      cmocka_unit_test(test_reports_whole_or_absent),
      cmocka_unit_test(test_unwritten_artifacts_named),
  };
  static const char *const slow[] = {"test_real_time_deadline",
                                     "test_time_budget_progress", NULL};
  return BS_TEST_RUN_SPLIT(tests, slow, setup, teardown);
}
