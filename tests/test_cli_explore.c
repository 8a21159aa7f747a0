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

#include "bs_json.h"
#include "bs_mutant.h"
#include "bs_test_cli.h"
#include "bs_test_faults.h"
#include "bs_test_split.h"

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
  BS_TEST_NEEDS_FAULTS();
  assert_int_equal(backstop("sweep steady-normal --ranks 2 --cycles 2 "
                            "--point engine/send --json s.json --junit s.xml"),
                   0);
  has(out_text, "sweep steady-normal, 2 ranks, 2 cycles: 4 reaches kept by "
                "the filters; 4 swept, each transient and persistent: 8 runs");
  has(out_text, "8 sweep runs: 8 contained-and-agreed, 0 recovered, 0 "
                "vacuous, 0 known, 0 fail");
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
  BS_TEST_NEEDS_FAULTS();
  assert_int_equal(backstop("sweep steady-maincast --ranks 2 --cycles 2 "
                            "--point engine/send --rank 1 --cycle 1 "
                            "--mutant pause-not-in-finally -q"),
                   1);
  has(out_text, "repro: backstop run steady-maincast --ranks 2 --seed 0 "
                "--schedule random --cycles 2 --timeout-ms 1000 --fault "
                "name=engine/send,rank=1,cycle=1,nth=1,persistent --mutant "
                "pause-not-in-finally");
  has(out_text, "2 sweep runs: 0 contained-and-agreed, 0 recovered, 0 "
                "vacuous, 0 known, 2 fail");
  assert_int_equal(backstop("sweep steady-normal --ranks 2 --cycles 1 "
                            "--sample 3"),
                   0);
  has(out_text, "3 swept (--sample 3: ");
  has(out_text, "reaches skipped)");
}

/* engine-death's corruptions with the restore check off are what the
 * configuration allows: known (bs_known, the classifier fuzz uses too),
 * counted beside the outcomes, not failing the exit status, alike in the
 * summary, the JSON and the JUnit (skipped, valid against the schema);
 * --strict fails them. */
/* The sweep counts what it arms: engine-death's own fault takes rank 1's
 * 2nd bucket send of cycle 1 (and, persistent, every one from it: there
 * is none after), so neither run of that reach is armed again; the 1st
 * reach's two runs fire. A reach armed that never fires fails the sweep:
 * a fault of the user's (armed first) that fires at random pre-empts the
 * swept one where it fires. */
static void test_sweep_counts_what_it_arms(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  assert_int_equal(backstop("sweep engine-death --ranks 2 --point engine/send "
                            "--rank 1 --cycle 1 --junit v.xml --json v.json"),
                   0);
  has(out_text, "1 swept, each transient and persistent: 2 runs (2 more "
                "taken by its own faults: not armed again)");
  has(out_text, "swept 1 of 2 reaches (50.0%); 2 runs taken by the "
                "scenarios' own faults");
  has(out_text, "2 sweep runs: 2 contained-and-agreed, 0 recovered, 0 "
                "vacuous, 0 known, 0 fail");
  char *xml = slurp("v.xml");
  has(xml, "tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"0\"");
  free(xml);
  char *json = slurp("v.json");
  has(json, "\"swept\": 1, \"skipped\": 0, \"taken\": 2");
  free(json);
  assert_int_equal(backstop("sweep steady-normal --ranks 2 --point engine/send "
                            "--rank 0 --cycle 1 --fault "
                            "name=engine/send,rank=0,cycle=1,prob=0.5 "
                            "--junit w.xml"),
                   1);
  has(out_text, "vacuous: ");
  has(out_text, "never fired");
  xml = slurp("w.xml");
  has(xml, "<failure type=\"vacuous\"");
  free(xml);
}

static void test_sweep_known(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  static const char *const sweep =
      "sweep engine-death --ranks 2 --point restore/bitflip --point "
      "backup/corrupt";
  char cmd[256];
  snprintf(cmd, sizeof cmd, "%s --json k.json --junit k.xml -j 2", sweep);
  setenv("BS_PROGRESS_S", "0", 1); /* a line every run */
  assert_int_equal(backstop(cmd), 0);
  unsetenv("BS_PROGRESS_S");
  /* The progress line counts as the summary does: known is no failure. */
  assert_null(strstr(err_text, " 1 failed,"));
  has(err_text, "sweep: 32/32 runs, ");
  has(out_text, "32 sweep runs: 16 contained-and-agreed, 0 recovered, 0 "
                "vacuous, 16 known, 0 fail");
  has(out_text, "swept 16 of 16 reaches (100.0%)");
  char *text = slurp("k.json");
  bs_json j;
  assert_int_equal(bs_json_parse(text, strlen(text), &j), BS_OK);
  free(text);
  const bs_json *sum = bs_json_get(&j, "summary");
  assert_int_equal(bs_json_get_num(sum, "known", -1), 16);
  assert_int_equal(bs_json_get_num(sum, "pass", -1), 16);
  assert_int_equal(bs_json_get_num(sum, "fail", -1), 0);
  const bs_json *pts =
      bs_json_get(&bs_json_get(&j, "sweep")->items[0], "points");
  double known = 0;
  for (size_t i = 0; pts && i < pts->n; i++)
    known += bs_json_get_num(&pts->items[i], "known", 0);
  assert_int_equal(known, 16);
  bs_json_free(&j);
  char *xml = slurp("k.xml");
  has(xml, "tests=\"32\" failures=\"0\" errors=\"0\" skipped=\"16\"");
  has(xml, "<skipped message=\"known: a corrupted restore reached the "
           "weights with the core's SHA256 restore check off");
  free(xml);
  if (system("command -v xmllint >/dev/null 2>&1") == 0) {
    snprintf(cmd, sizeof cmd,
             "xmllint --noout --schema %s/junit-ant.xsd %s/k.xml 2>/dev/null",
             BS_TEST_DATA, dir);
    assert_int_equal(system(cmd), 0);
  }
  snprintf(cmd, sizeof cmd, "%s --strict -q", sweep);
  assert_int_equal(backstop(cmd), 1);
  has(out_text, "0 known, 16 fail");
}

/* A selection that runs nothing is a usage error, not a pass. */
static void test_nothing_to_run(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  assert_int_equal(backstop("sweep steady-normal --ranks 2 --rank 99"), 2);
  has(err_text, "the selection runs nothing: --point, --rank and --cycle "
                "keep no reach of it");
  assert_int_equal(backstop("run 'comm-*' --ranks 1"), 2);
  has(err_text, "backstop run: the selection runs nothing: every scenario "
                "it selects was skipped");
}

/* The same seed draws the same runs and gives the same report, whatever
 * order the runs finish in. */
static void test_fuzz_same_seed(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  char *text[2];
  int rc[2];
  for (int i = 0; i < 2; i++) {
    char cmd[128], name[16];
    snprintf(name, sizeof name, "f%d.json", i);
    snprintf(cmd, sizeof cmd, "fuzz --seed 5 --runs 12 -j 4 -q --json %s",
             name);
    rc[i] = backstop(cmd);
    text[i] = slurp(name);
    blank_times(text[i]);
  }
  assert_int_equal(rc[0], rc[1]);
  has(text[0], "\"fuzz\": {\"seed\": 5, \"runs\": 12,");
  assert_string_equal(text[0], text[1]);
  free(text[0]);
  free(text[1]);
}

/* Seed 1's 100 runs on the fixed core leave no failure unexplained (exit
 * 0), and with faults drawn from what each configuration's counting run
 * reached at most 10 are vacuous (no drawn fault fired; draws from the
 * whole catalogue left some 20 so); the counting runs are said. */
static void test_fuzz_draws_reached(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  bs_json j;
  assert_int_equal(backstop("fuzz --seed 1 --runs 100 -j 4 --json v.json"), 0);
  has(out_text, "counting runs: ");
  char *text = slurp("v.json");
  assert_int_equal(bs_json_parse(text, strlen(text), &j), BS_OK);
  free(text);
  const bs_json *f = bs_json_get(&j, "fuzz");
  double counting = bs_json_get_num(f, "counting_runs", -1);
  double sum = 0;
  static const char *const verdicts[] = {"pass", "vacuous", "fail", "hang",
                                         "crash"};
  for (size_t i = 0; i < 5; i++)
    sum += bs_json_get_num(f, verdicts[i], -1);
  assert_int_equal(sum, 100);
  if (bs_json_get_num(f, "vacuous", -1) > 10)
    fail_msg("%g of 100 runs vacuous:\n%s", bs_json_get_num(f, "vacuous", -1),
             out_text);
  assert_true(counting >= 1 && counting <= 100);
  /* None of these configurations fails without a drawn fault on the
   * fixed core (a few of 2,000 runs' do: known truths). */
  assert_int_equal(bs_json_get_num(f, "counting_failed", -1), 0);
  bs_json_free(&j);
}

/* The scenarios that target mutant m (list --json), as fuzz selectors;
 * "*" when none does. */
static void targets_of(const bs_json *list, const char *m, char *out,
                       size_t n) {
  const bs_json *s = bs_json_get(list, "scenarios");
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; s && i < s->n; i++) {
    const bs_json *t = bs_json_get(&s->items[i], "targets");
    for (size_t k = 0; t && k < t->n; k++)
      if (!strcmp(t->items[k].str, m))
        len += (size_t)snprintf(out + len, n - len, " %s",
                                bs_json_get_str(&s->items[i], "name", ""));
  }
  if (!len)
    snprintf(out, n, " '*'");
}

/* Against every mutant, fuzz finds a failure, reproduces it and shrinks it
 * to a smaller repro: seed 1, 8 runs drawn from the scenarios that target
 * the mutant (all scenarios for one that none targets), 4 shrink runs at
 * most (a whole shrink takes some 20-45), a 300 ms watchdog (a mutant's
 * hang is found sooner; a spurious one still fails). */
static void test_fuzz_finds_every_mutant(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  bs_json list, r;
  assert_int_equal(backstop("list --json"), 0);
  assert_int_equal(bs_json_parse(out_text, strlen(out_text), &list), BS_OK);
  for (int m = 0; m < BS_MUT_COUNT; m++) {
    const char *name = bs_mutant_name((bs_mutant)m);
    char sel[512], cmd[768];
    targets_of(&list, name, sel, sizeof sel);
    snprintf(cmd, sizeof cmd,
             "fuzz%s --mutant %s --seed 1 --runs 8 --shrink-max 4 -j 4 "
             "--timeout-ms 300 -q --json m.json",
             sel, name);
    /* An ordering mutant's race is a schedule's: found, reproduced and
     * shrunk on the scheduled worlds every run has by default. */
    if (backstop(cmd) != 1)
      fail_msg("backstop %s: no unexplained finding:\n%s", cmd, out_text);
    char *text = slurp("m.json");
    assert_int_equal(bs_json_parse(text, strlen(text), &r), BS_OK);
    free(text);
    const bs_json *f = bs_json_get(bs_json_get(&r, "fuzz"), "findings");
    assert_true(f && f->n >= 1);
    assert_true(bs_json_get_bool(&f->items[0], "reproduced", false));
    assert_true(bs_json_get_num(&f->items[0], "shrink_runs", 0) >= 1);
    has(bs_json_get_str(&f->items[0], "minimal", ""), name);
    bs_json_free(&r);
  }
  bs_json_free(&list);
}

static void test_explore_usage(void **state) {
  (void)state;
  usage("sweep", "name the scenario to sweep");
  usage("sweep steady-normal --point no/such", "--point: unknown fault point");
  usage("sweep steady-normal --sample 0", "--sample: '0'");
  usage("run steady-normal --point copy/fail", "an option of backstop sweep");
  usage("run steady-normal --runs 3", "an option of backstop fuzz");
  usage("fuzz --runs 3 --time-s 1", "give one budget");
  usage("fuzz --ranks 2", "--ranks (fuzz draws it");
  usage("fuzz --fault name=copy/fail", "--fault (fuzz draws the faults)");
  usage("fuzz --scale 2", "--scale (fuzz runs the models it draws");
  usage("fuzz no-such-scenario", "unknown scenario");
  usage("sweep steady-normal --shrink-max 3", "an option of backstop fuzz");
  usage("run steady-normal --strict", "--strict: an option of backstop fuzz");
  usage("sweep steady-normal --sample 101%", "--sample: '101'");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sweep_fixed_core),
      cmocka_unit_test(test_sweep_finds_mutant),
      cmocka_unit_test(test_sweep_known),
      cmocka_unit_test(test_sweep_counts_what_it_arms),
      cmocka_unit_test(test_nothing_to_run),
      cmocka_unit_test(test_fuzz_same_seed),
      cmocka_unit_test(test_fuzz_draws_reached),
      cmocka_unit_test(test_fuzz_finds_every_mutant),
      cmocka_unit_test(test_explore_usage),
  };
  /* Fuzz campaigns, many runs each: test_cli_explore_slow, label repeat. */
  static const char *const campaigns[] = {"test_fuzz_same_seed",
                                          "test_fuzz_draws_reached",
                                          "test_fuzz_finds_every_mutant", NULL};
  return BS_TEST_RUN_SPLIT(tests, campaigns, setup, teardown);
}
