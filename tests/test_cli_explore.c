/* sweep and fuzz through the backstop binary (BACKSTOP_BIN, set by ctest):
 * the matrix and its reports, a repro line for every failing reach, the
 * usage errors of their options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_test_cli.h"
#include "util/bs_json.h"

static int setup(void **state) {
  (void)state;
  return cli_setup("bs_explore_");
}

static int teardown(void **state) {
  (void)state;
  return cli_teardown();
}

static void has(const char *text, const char *says) {
  if (!strstr(text, says))
    fail_msg("output lacks '%s':\n%s", says, text);
}

static void usage(const char *args, const char *says) {
  assert_int_equal(backstop(args), 2);
  has(err_text, says);
  assert_ptr_equal(strchr(err_text, '\n'), err_text + strlen(err_text) - 1);
}

/* Every reach of engine/send on the fixed core: contained, in the matrix
 * and in the JSON's sweep section, one run per reach and mode. */
static void test_sweep_fixed_core(void **state) {
  (void)state;
  assert_int_equal(backstop("sweep steady-normal --ranks 2 --cycles 2 "
                            "--point engine/send --json s.json --junit s.xml"),
                   0);
  has(out_text, "sweep steady-normal, 2 ranks, 2 cycles: 4 reaches kept by "
                "the filters; 4 swept, each transient and persistent: 8 runs");
  has(out_text, "8 sweep runs: 8 contained-and-agreed, 0 recovered, 0 "
                "vacuous, 0 fail");
  char *text = slurp("s.json");
  bs_json j;
  assert_int_equal(bs_json_parse(text, strlen(text), &j), BS_OK);
  free(text);
  assert_int_equal(bs_json_get(&j, "runs")->n, 8);
  const bs_json *sw = bs_json_get(&j, "sweep");
  assert_true(sw && sw->n == 1);
  const bs_json *points = bs_json_get(&sw->items[0], "points");
  assert_true(points && points->n == 1);
  assert_int_equal(bs_json_get_num(&points->items[0], "reaches", 0), 4);
  assert_int_equal(
      bs_json_get_num(&points->items[0], "contained-and-agreed", 0), 8);
  bs_json_free(&j);
  char *xml = slurp("s.xml");
  has(xml, "tests=\"8\" failures=\"0\"");
  free(xml);
}

/* Against a mutant every reach fails, each with its repro line; a sample
 * says how many reaches it skipped. */
static void test_sweep_finds_mutant(void **state) {
  (void)state;
  assert_int_equal(backstop("sweep steady-maincast --ranks 2 --cycles 2 "
                            "--point engine/send --rank 1 --cycle 1 "
                            "--mutant pause-not-in-finally -q"),
                   1);
  has(out_text, "repro: backstop run steady-maincast --ranks 2 --seed 0 "
                "--cycles 2 --timeout-ms 1000 --fault "
                "name=engine/send,rank=1,cycle=1,nth=1,persistent --mutant "
                "pause-not-in-finally");
  has(out_text, "2 sweep runs: 0 contained-and-agreed, 0 recovered, 0 "
                "vacuous, 2 fail");
  assert_int_equal(backstop("sweep steady-normal --ranks 2 --cycles 1 "
                            "--sample 3"),
                   0);
  has(out_text, "3 swept (--sample 3: ");
  has(out_text, "reaches skipped)");
}

static void test_explore_usage(void **state) {
  (void)state;
  usage("sweep", "name the scenario to sweep");
  usage("sweep steady-normal --point no/such", "--point: unknown fault point");
  usage("sweep steady-normal --sample 0", "--sample: '0'");
  usage("run steady-normal --point copy/fail", "an option of backstop sweep");
  usage("run steady-normal --runs 3", "an option of backstop fuzz");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sweep_fixed_core),
      cmocka_unit_test(test_sweep_finds_mutant),
      cmocka_unit_test(test_explore_usage),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
