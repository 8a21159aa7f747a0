/* The rank pool (BS_RANK_POOL=1, harness/run/bs_pool.h) with the sim's
 * process-per-rank runs (--spawn -j 1), as NCCL runs on a shared GPU use
 * it: the same report bytes as without it, run after run in the same
 * processes (a mutant's run, then the fixed core's, whose verdicts a
 * mutant left armed would change; a run whose fault fired, then a clean
 * one); a hang past the deadline still dumps every rank. That a signal to
 * backstop ends every worker: test_cli_signals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ctype.h>

#include "bs_mutant.h"
#include "bs_test_cli.h"
#include "bs_test_faults.h"

static int setup(void **state) {
  (void)state;
  unsetenv("BS_RANK_POOL");
  return cli_setup("bs_pool_");
}

static int teardown(void **state) {
  (void)state;
  unsetenv("BS_RANK_POOL");
  int rc = cli_teardown();
  out_text = err_text = NULL; /* freed: the next test's run frees them */
  return rc;
}

/* Blanks what differs between two processes of one seed besides _ms
 * fields: addresses ("0x7f..."), which a crash's detail may quote. */
static void blank_addresses(char *s) {
  for (char *p = s; (p = strstr(p, "0x")); p++) {
    char *v = p + 2;
    size_t len = 0;
    while (isxdigit((unsigned char)v[len]))
      len++;
    memmove(v, v + len, strlen(v + len) + 1);
  }
}

static char *report(const char *path) {
  char *s = slurp(path);
  blank_times(s);
  blank_addresses(s);
  return s;
}

/* The runs of args, each in fresh processes and then in the pool: the
 * same report (json), and the pool's line on stderr; its workers, fewer
 * than the runs' processes (some were kept for a later run). Returns
 * how many workers the pool forked. */
static int same_in_pool(const char *args, int runs, int ranks) {
  char cmd[512], line[96];
  snprintf(cmd, sizeof cmd, "%s --spawn -j 1 --json plain.json", args);
  int rc = backstop(cmd);
  char *plain = strdup(out_text);
  setenv("BS_RANK_POOL", "1", 1);
  snprintf(cmd, sizeof cmd, "%s --spawn -j 1 --json pool.json", args);
  int pool_rc = backstop(cmd);
  unsetenv("BS_RANK_POOL");
  /* Which runs differ, when they do (real processes on real time). */
  if (pool_rc != rc)
    fail_msg("exit %d without the pool:\n%s\nexit %d in it:\n%s", rc, plain,
             pool_rc, out_text);
  free(plain);
  snprintf(line, sizeof line, "backstop: rank pool: %d runs on ", runs);
  const char *at = strstr(err_text, line);
  assert_non_null(at);
  int forked = atoi(at + strlen(line));
  assert_true(forked >= ranks && forked < runs * ranks);
  char *a = report("plain.json"), *b = report("pool.json");
  assert_true(strlen(a) > 100);
  assert_string_equal(a, b);
  free(a);
  free(b);
  return forked;
}

/* Each mutant's run, then the fixed core's, in workers kept from run to
 * run (a mutant's run that passes keeps them): a mutant that outlived its
 * run would fail the fixed core's, or change another mutant's verdict. */
static void test_mutants_then_core(void **state) {
  (void)state;
  same_in_pool("mutants frozen-params --ranks 2", BS_MUT_COUNT + 1, 2);
}

/* A run whose fault fired (its workers replaced) between clean ones, and a
 * process's death: the same verdicts and bytes. */
static void test_after_a_fault(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  same_in_pool("run steady-normal rank-death engine-death steady-maincast "
               "--ranks 4",
               4, 4);
}

/* Every fault scenario, its faults firing, run by run in the same
 * workers: a run that contained its fault keeps them (what a fault left
 * in a process would change a later run's bytes), and only a rank's
 * death or a failure costs a fresh one. */
static void test_fault_runs_keep_workers(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  same_in_pool("run @fault --ranks 2", 18, 2);
  /* engine-death kills engines, never a rank: three runs, two workers. */
  assert_int_equal(same_in_pool("run engine-death --ranks 2 --repeat 3", 3, 2),
                   2);
  char *json = slurp("pool.json"); /* each run's fault fired */
  size_t fired = 0;
  for (const char *at = json; (at = strstr(at, "\"fired_total\": 1")); at++)
    fired++;
  assert_int_equal(fired, 3);
  free(json);
}

/* Past the deadline the parent asks the run's child, which asks worker 0,
 * which asks the others: every rank's flight recorder is in the
 * artifacts, and the verdict is the one without the pool. */
static void test_hang_dumps(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  setenv("BS_RANK_POOL", "1", 1);
  assert_int_equal(backstop("run steady-normal --ranks 4 --fault "
                            "name=comm/stall,rank=3,nth=3,failinfo=60000 "
                            "--timeout-ms 100000 --deadline-s 2 --spawn -j 1 "
                            "--artifacts art --json s.json"),
                   1);
  unsetenv("BS_RANK_POOL");
  assert_non_null(strstr(err_text, "backstop: rank pool: 1 runs on "));
  assert_non_null(strstr(out_text, "after dumping its ranks' flight"));
  char *json = slurp("s.json");
  assert_non_null(strstr(json, "\"verdict\": \"fail\""));
  assert_non_null(strstr(json, "/rank_3\""));
  assert_non_null(strstr(json, "/rank_0\""));
  free(json);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_mutants_then_core, setup, teardown),
      cmocka_unit_test_setup_teardown(test_after_a_fault, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fault_runs_keep_workers, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_hang_dumps, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
