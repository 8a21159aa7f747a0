/* Options of `backstop run` / `mutants`, selectors and the run plan: good
 * input gives the right plan, bad input a one-line message naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog/bs_scenario.h"
#include "plan/bs_opts.h"
#include "plan/bs_plan.h"
#include "result/bs_result.h"

BS_SCENARIO(alpha){.name = "alpha-one",
                   .labels = "@smoke @fault",
                   .model = "tiny",
                   .cycles = 2,
                   .default_ranks = 4,
                   .min_ranks = 2};
BS_SCENARIO(beta){.name = "beta",
                  .labels = "@smokey",
                  .model = "dense",
                  .cycles = 3,
                  .default_ranks = 2,
                  .min_ranks = 1,
                  .timeout_ms = 2000,
                  .sets = BS_LIST("rematerialize=1")};
BS_SCENARIO(gamma){.name = "alpha-two",
                   .labels = "@fault",
                   .model = "tiny",
                   .cycles = 1,
                   .default_ranks = 1,
                   .min_ranks = 1};
/* Only what differs from the defaults. */
BS_SCENARIO(delta){.name = "delta-defaults", .default_ranks = 2};
BS_SCENARIO(epsilon){.name = "epsilon-no-cycles", .cycles = BS_NO_CYCLES};

/* The options parsed last (the run's part of the others'). */
static bs_opts_run o;
static bs_opts_mutants om;
static bs_opts_sweep os;
static bs_opts_fuzz of;

/* Parses a space-separated command line. */
static bs_status parse(const char *cmd, const char *line) {
  static char buf[1024];
  static char *argv[64];
  int argc = 0;
  snprintf(buf, sizeof buf, "%s", line);
  argv[argc++] = (char *)cmd;
  for (char *t = strtok(buf, " "); t; t = strtok(NULL, " "))
    argv[argc++] = t;
  bs_err_clear();
  bs_status st;
  if (strcmp(cmd, "mutants") == 0) {
    st = bs_opts_parse_mutants(argc, argv, &om);
    o = om.run;
  } else if (strcmp(cmd, "sweep") == 0) {
    st = bs_opts_parse_sweep(argc, argv, &os);
    o = os.run;
  } else if (strcmp(cmd, "fuzz") == 0) {
    st = bs_opts_parse_fuzz(argc, argv, &of);
    o = of.run;
  } else {
    st = bs_opts_parse_run(argc, argv, &o);
  }
  return st;
}

static void test_good(void **state) {
  (void)state;
  assert_int_equal(parse("run", "alpha-one --ranks 1,2,8 --seed 0x10 -j 3 "
                                "--set rematerialize=1 --fault "
                                "name=engine/send,rank=1 --mutant "
                                "same-tag-skip --cycles 0 --scale 0.5 "
                                "--timeout-ms 50 --deadline-s 2.5 -q "
                                "--json out.json --junit j.xml"),
                   BS_OK);
  assert_int_equal(o.nsel, 1);
  assert_string_equal(o.sel[0], "alpha-one");
  assert_int_equal(o.nranks, 3);
  assert_int_equal(o.ranks[2], 8);
  assert_int_equal(o.seed, 16);
  assert_int_equal(o.jobs, 3);
  assert_int_equal(o.nsets, 1);
  assert_int_equal(o.nfaults, 1);
  assert_int_equal(o.nmutants, 1);
  assert_int_equal(o.cycles, 0);
  assert_true(o.scale == 0.5);
  assert_int_equal(o.timeout_ms, 50);
  assert_true(o.deadline_s == 2.5);
  assert_int_equal(o.verbosity, -1);
  assert_string_equal(o.json, "out.json");
  assert_string_equal(o.junit, "j.xml");
  assert_string_equal(o.device, "host");
  assert_int_equal(parse("run", "--backend nccl"), BS_OK);
  assert_string_equal(o.device, "cuda");
  assert_int_equal(o.nsel, 0);
  assert_int_equal(o.cycles, -1);
  assert_string_equal(o.artifacts, "backstop-artifacts");
  assert_int_equal(parse("mutants", "--json m.json @fault"), BS_OK);
  assert_null(o.artifacts);
}

static void bad(const char *cmd, const char *line, const char *says) {
  assert_int_equal(parse(cmd, line), BS_ERR_INVALID);
  if (!strstr(bs_err()->message, says))
    fail_msg("'%s': message '%s' lacks '%s'", line, bs_err()->message, says);
  assert_null(strchr(bs_err()->message, '\n'));
}

static void test_bad(void **state) {
  (void)state;
  bad("run", "--frobnicate", "unknown option '--frobnicate'");
  bad("run", "-x", "unknown option '-x'");
  bad("run", "--ranks", "option '--ranks' needs a value");
  bad("run", "--ranks 0", "--ranks: '0' is not an integer in [1, 16384]");
  bad("run", "--ranks 16385",
      "--ranks: '16385' is not an integer in [1, 16384]");
  bad("run", "--ranks 2,,4", "--ranks: '2,,4'");
  bad("run", "--ranks 4x", "'4x'");
  bad("run", "--backend mpi", "--backend: 'mpi' is not sim or nccl");
  bad("run", "--device tpu", "--device: 'tpu'");
  bad("run", "--seed -1", "--seed: '-1'");
  bad("run", "--seed 010", "--seed: '010'"); /* not octal */
  bad("run", "--seed 0x", "--seed: '0x'");
  bad("run", "--ranks +4", "--ranks: '+4'");
  bad("run", "--cycles 03", "--cycles: '03'");
  bad("run", "--artifacts=", "--artifacts: an empty folder name");
  bad("run", "--json /no/such/dir/r.json",
      "--json: cannot write /no/such/dir/r.json: No such file");
  bad("run", "--scale 0", "--scale: '0' is not a number in (0, 1e+09]");
  bad("run", "--cycles many", "--cycles: 'many'");
  bad("run", "-j 0", "-j: '0'");
  bad("run", "--deadline-s inf", "--deadline-s: 'inf'");
  bad("run", "--set nosuchkey=1", "--set nosuchkey=1: unknown configuration");
  bad("run", "--set colocate=maybe", "--set colocate=maybe");
  bad("run", "--fault name=no/such", "--fault: ");
  bad("run", "--fault name=engine/send,nth=x", "--fault: ");
  bad("run", "--mutant no-such-bug", "--mutant: unknown mutant 'no-such-bug'");
  bad("mutants", "--mutant same-tag-skip", "not an option of mutants");
  bs_err_clear();
}

/* Every output is checked before anything runs, by making it (as root
 * too: access() says yes to anything there). */
static void test_outputs(void **state) {
  (void)state;
  char dir[] = "/tmp/bs_test_outputs_XXXXXX", file[64], line[160];
  assert_non_null(mkdtemp(dir));
  snprintf(file, sizeof file, "%s/f", dir);
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fclose(f);
  bad("run", "--junit /proc/x.xml", "--junit: cannot write /proc/x.xml");
  snprintf(line, sizeof line, "--json %s", dir);
  bad("run", line, "a folder");
  snprintf(line, sizeof line, "--artifacts %s", file);
  bad("run", line, "is a file, not a folder");
  bad("run", "--artifacts /proc/no/such", "--artifacts: cannot create /proc/");
  /* A folder that is not there is made and removed again; a file that is
   * there is kept as it was. */
  snprintf(line, sizeof line, "--artifacts %s/a/b --json %s", dir, file);
  assert_int_equal(parse("run", line), BS_OK);
  snprintf(line, sizeof line, "%s/a", dir);
  assert_int_equal(access(line, F_OK), -1);
  assert_int_equal(access(file, F_OK), 0);
  assert_int_equal(unlink(file), 0);
  assert_int_equal(rmdir(dir), 0);
  assert_int_equal(parse("run", "--json -"), BS_OK);
  bs_err_clear();
}

/* Every number option has a bound, named in its error (issue 22: a
 * deadline of 1e300 s overflowed the runner's wait into an endless one). */
static void test_number_bounds(void **state) {
  (void)state;
  bad("run", "--deadline-s 1e300",
      "--deadline-s: '1e300' is not a number in "
      "(0, 1e+07]");
  bad("run", "--deadline-s 4294967296", "--deadline-s: '4294967296'");
  bad("run", "--deadline-s 0", "(0, 1e+07]");
  bad("run", "--scale 1e10", "--scale: '1e10' is not a number in (0, 1e+09]");
  bad("run", "--timeout-ms 2147483648",
      "--timeout-ms: '2147483648' is not an integer in [1, 2147483647]");
  bad("run", "--cycles 100001", "[0, 100000]");
  bad("run", "--repeat 1001",
      "--repeat: '1001' is not an integer in [1, "
      "1000]");
  bad("run", "-j 257", "-j: '257' is not an integer in [1, 256]");
  bad("run", "--seed 18446744073709551616", "--seed: '18446744073709551616'");
  bad("fuzz", "--runs 100000001",
      "--runs: '100000001' is not an integer in [1, 100000000]");
  bad("fuzz", "--runs 99999999999999999999", "--runs: ");
  bad("fuzz", "--time-s 1e8", "--time-s: '1e8' is not a number in (0, 1e+07]");
  bad("fuzz", "--max-ranks 16385", "[1, 16384]");
  bad("fuzz", "--shrink-max 100001", "[1, 100000]");
  bad("sweep", "--sample 100000001", "[1, 100000000]");
  bad("sweep", "--rank 16384",
      "--rank: '16384' is not an integer in [0, 16383]");
  bad("sweep", "--cycle 100001", "[0, 100000]");
  assert_int_equal(parse("run", "--deadline-s 3e6"), BS_OK);
  assert_true(o.deadline_s == 3e6);
  bs_err_clear();
}

static void test_select(void **state) {
  (void)state;
  const bs_scenario *out[BS_SCENARIO_MAX];
  size_t n;
  static const char *const sel1[] = {"@smoke"};
  assert_int_equal(bs_scenario_select(sel1, 1, out, &n), BS_OK);
  assert_int_equal(n, 1); /* @smokey is another label */
  assert_string_equal(out[0]->name, "alpha-one");
  static const char *const sel2[] = {"beta", "alpha-*", "@fault"};
  assert_int_equal(bs_scenario_select(sel2, 3, out, &n), BS_OK);
  assert_int_equal(n, 3); /* each once, in catalogue order */
  assert_string_equal(out[0]->name, "alpha-one");
  assert_string_equal(out[1]->name, "alpha-two");
  assert_string_equal(out[2]->name, "beta");
  static const char *const sel3[] = {"beta", "nope*"};
  bs_err_clear();
  assert_int_equal(bs_scenario_select(sel3, 2, out, &n), BS_ERR_INVALID);
  assert_string_equal(bs_err()->message,
                      "unknown scenario 'nope*' (see backstop list)");
  static const char *const sel4[] = {"@nolabel"};
  bs_err_clear();
  assert_int_equal(bs_scenario_select(sel4, 1, out, &n), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "unknown label '@nolabel'"));
  bs_err_clear();
  char spec[64];
  bs_scenario_fault_expand("name=engine/send,rank={last},nth=2", 8, spec,
                           sizeof spec);
  assert_string_equal(spec, "name=engine/send,rank=7,nth=2");
}

static void test_plan(void **state) {
  (void)state;
  bs_plan p;
  const bs_run *runs;
  assert_int_equal(parse("run", "alpha-* beta --ranks 2,3 --seed 5"), BS_OK);
  assert_int_equal(bs_plan_runs(&o, "/bin/backstop", &p), BS_OK);
  runs = p.runs;
  assert_int_equal(p.n, 6);
  assert_string_equal(runs[0].scn->name, "alpha-one");
  assert_int_equal(runs[0].ranks, 2);
  assert_int_equal(runs[1].ranks, 3);
  assert_string_equal(runs[4].scn->name, "beta");
  assert_string_equal(runs[4].model_name, "dense");
  assert_ptr_equal(runs[4].model, runs[5].model); /* loaded once */
  assert_true(runs[4].config.rematerialize);      /* beta's own --set */
  assert_int_equal(runs[4].cycles, 3);
  assert_int_equal(runs[4].seed, 5);
  assert_string_equal(runs[4].exe, "/bin/backstop");
  bs_plan_free(&p);
  /* no selector: the default suite at each scenario's default size */
  assert_int_equal(parse("run", ""), BS_OK);
  assert_int_equal(bs_plan_runs(&o, "b", &p), BS_OK);
  assert_int_equal(p.n, 1);
  assert_int_equal(p.runs[0].ranks, 4);
  bs_plan_free(&p);
  /* in a matrix, sizes below a scenario's minimum are skipped */
  assert_int_equal(parse("run", "alpha-one beta --ranks 1,2"), BS_OK);
  assert_int_equal(bs_plan_runs(&o, "b", &p), BS_OK);
  assert_int_equal(p.n, 3);
  assert_string_equal(p.runs[0].scn->name, "alpha-one");
  assert_int_equal(p.runs[0].ranks, 2);
  bs_plan_free(&p);
  assert_int_equal(parse("run", "alpha-one --ranks 1"), BS_OK);
  assert_int_equal(bs_plan_runs(&o, "b", &p), BS_ERR_INVALID);
  assert_string_equal(bs_err()->message,
                      "alpha-one needs at least 2 ranks, --ranks gave 1");
  assert_null(p.runs);
  assert_int_equal(parse("run", "beta --fault name=engine/send,rank=2"), BS_OK);
  assert_int_equal(bs_plan_runs(&o, "b", &p), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "rank 2 is outside the world"));
  /* beta's rematerialize=1 with colocate=0 is rejected by validation */
  assert_int_equal(parse("run", "beta --set colocate=0"), BS_OK);
  assert_int_equal(bs_plan_runs(&o, "b", &p), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "beta: configuration rejected"));
  assert_int_equal(parse("run", "nothing-here"), BS_OK);
  assert_int_equal(bs_plan_runs(&o, "b", &p), BS_ERR_INVALID);
  assert_int_equal(parse("run", "alpha-one --model /no/such/file.model"),
                   BS_OK);
  assert_int_equal(bs_plan_runs(&o, "b", &p), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "--model /no/such/file.model"));
  bs_err_clear();
}

/* Plans "SEL [--timeout-ms T]" and returns the first run's watchdog and
 * whether its repro command names --timeout-ms. */
static int planned_timeout(const char *line, bool *in_repro) {
  bs_plan p;
  bs_buf b = {0};
  assert_int_equal(parse("run", line), BS_OK);
  assert_int_equal(bs_plan_runs(&o, "b", &p), BS_OK);
  assert_true(p.n >= 1);
  int ms = p.runs[0].timeout_ms;
  bs_result_repro(&p.runs[0], &b);
  *in_repro = strstr(bs_buf_str(&b), "--timeout-ms") != NULL;
  bs_buf_free(&b);
  bs_plan_free(&p);
  return ms;
}

/* A scenario's own watchdog applies unless the user gives --timeout-ms; the
 * repro names the option only when it differs from the scenario's. */
/* Registration fills what a descriptor leaves out; stated fields stay. */
static void test_scenario_defaults(void **state) {
  (void)state;
  const bs_scenario *d = bs_scenario_find("delta-defaults");
  assert_non_null(d);
  assert_string_equal(d->model, BS_SCENARIO_MODEL);
  assert_int_equal(d->cycles, BS_SCENARIO_CYCLES);
  assert_int_equal(d->default_ranks, 2);
  assert_int_equal(d->min_ranks, BS_SCENARIO_MIN_RANKS);
  assert_int_equal(bs_scenario_find("epsilon-no-cycles")->cycles, 0);
  assert_int_equal(bs_scenario_find("epsilon-no-cycles")->default_ranks,
                   BS_SCENARIO_RANKS);
  const bs_scenario *b = bs_scenario_find("beta");
  assert_string_equal(b->model, "dense");
  assert_int_equal(b->default_ranks, 2);
  assert_int_equal(bs_scenario_find("alpha-two")->cycles, 1);
}

static void test_scenario_timeout(void **state) {
  (void)state;
  bool repro;
  assert_int_equal(planned_timeout("beta", &repro), 2000);
  assert_false(repro);
  assert_int_equal(planned_timeout("beta --timeout-ms 500", &repro), 500);
  assert_true(repro);
  assert_int_equal(planned_timeout("beta --timeout-ms 2000", &repro), 2000);
  assert_false(repro);
  assert_int_equal(planned_timeout("alpha-one", &repro), 0);
  assert_false(repro);
  assert_int_equal(planned_timeout("alpha-one --timeout-ms 70", &repro), 70);
  assert_true(repro);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_good),
      cmocka_unit_test(test_bad),
      cmocka_unit_test(test_outputs),
      cmocka_unit_test(test_number_bounds),
      cmocka_unit_test(test_select),
      cmocka_unit_test(test_plan),
      cmocka_unit_test(test_scenario_defaults),
      cmocka_unit_test(test_scenario_timeout),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
