/* The backstop binary end to end (BACKSTOP_BIN, set by ctest): usage errors
 * exit 2 with one line naming the problem; catalogues parse as JSON; a
 * fault added to any scenario is judged by the invariants; a failing run
 * exits 1 and leaves JUnit and artifacts; the same seed gives the same
 * report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bs_json.h"
#include "bs_test_cli.h"
#include "bs_test_faults.h"
#include "bs_test_sanitized.h"

static int setup(void **state) {
  (void)state;
  return cli_setup("bs_cli_");
}

static int teardown(void **state) {
  (void)state;
  return cli_teardown();
}

static void usage(const char *args, const char *says) {
  assert_int_equal(backstop(args), 2);
  if (!strstr(err_text, says))
    fail_msg("backstop %s: stderr '%s' lacks '%s'", args, err_text, says);
  assert_ptr_equal(strchr(err_text, '\n'), err_text + strlen(err_text) - 1);
}

static void test_usage_errors(void **state) {
  (void)state;
  usage("run no-such-scenario", "unknown scenario 'no-such-scenario'");
  usage("run @nolabel", "unknown label '@nolabel'");
  usage("run --frobnicate", "unknown option '--frobnicate'");
  usage("run engine-death --fault name=no/such", "no/such");
  usage("run engine-death --fault name=engine/send,nth=two", "nth");
  usage("run rank-divergence --ranks 1", "needs at least 2 ranks");
  /* Its fault fires in cycle 1 and it judges the recovery in cycle 2. */
  usage("run engine-death --cycles 2",
        "engine-death needs at least 3 cycles, --cycles gave 2");
  usage("run source-joins --cycles 1",
        "source-joins needs at least 2 cycles, --cycles gave 1");
  /* Chosen by a glob, they are skipped, each said once. */
  assert_int_equal(backstop("run 'engine-*' --cycles 2 --ranks 2,3"), 2);
  assert_non_null(strstr(err_text, "skipping engine-reconnect: "
                                   "engine-reconnect needs at least 3 "
                                   "cycles, --cycles gave 2\n"));
  assert_null(strstr(err_text, " at 3 ranks"));
  assert_non_null(strstr(err_text, "the selection runs nothing"));
  usage("run steady-normal --model /no/such.model", "/no/such.model");
  usage("run steady-normal --ranks 2,x", "--ranks");
  usage("run steady-maincast --set colocate=0", "configuration rejected");
  usage("frobnicate", "unknown command 'frobnicate'");
  usage("run steady-normal --backend nccl --device host",
        "--backend nccl needs --device cuda");
  /* Issue 13: each of these was a run failure (or a silent surprise). */
  usage("run config-matrix --set ci_test=1",
        "config-matrix runs its own driver: --set ci_test=1 does not apply");
  usage("run config-matrix --fault name=copy/fail", "fires no --fault");
  usage("run steady-normal --ranks 16385",
        "--ranks: '16385' is not an integer in [1, 16384]");
  usage("run steady-normal --scale 1e9", "steady-normal: --model dense");
  usage("run steady-normal --scale 1e6",
        "a world of 4 ranks of model dense at that --scale needs ");
  usage("run steady-normal --ranks 16384 --model dense --scale 100",
        "GiB of host memory (");
  usage("run steady-normal --ranks 16384 --model dense --scale 100",
        "; the largest that fits here: ");
  /* Its stacks alone are 5 GiB of address space: refused at once, not a
   * run whose ranks never return. (A sanitizer's shadow takes more than
   * any ulimit -v leaves.) */
  if (!BS_TEST_SANITIZED) {
    assert_int_equal(backstop_after("ulimit -v 3000000 && ",
                                    "run steady-maincast --ranks 16384"),
                     2);
    assert_non_null(strstr(err_text, "GiB of address space in one process"));
    assert_non_null(strstr(err_text, "RLIMIT_AS (ulimit -v) leaves"));
  }
  usage("run steady-normal --json /nonexistent/x.json",
        "--json: cannot write /nonexistent/x.json: No such file");
  /* Checked by making them, not by access(): root may write anything. */
  usage("run steady-normal --junit /proc/x.xml",
        "--junit: cannot write /proc/x.xml");
  usage("--version extra", "unexpected argument 'extra'");
  usage("run steady-normal --junit /nonexistent/x.xml", "--junit");
  usage("run steady-normal --artifacts ''", "--artifacts: an empty folder");
  usage("run steady-normal --ranks +4", "--ranks: '+4'");
  usage("run steady-normal --seed ' -1'", "--seed: ' -1'");
  usage("run steady-normal --seed 010", "--seed: '010'");
  usage("run steady-normal --cycles 2 --fault name=copy/fail,cycle=2",
        "cycle 2 is past the last cycle of steady-normal");
  usage("run steady-normal --fault name=copy/fail,prob=0", "never fires");
  usage("", "no command given");
  /* Found by fuzz: the optimizer refused these at init, as run failures. */
  usage("run chained-optimizers --model tiny",
        "2 model chunks need as many buckets in the dense buffer, it has 1");
  usage("run steady-normal --set optimizer_cpu_offload=1",
        "optimizer_cpu_offload=1 needs precision_aware_optimizer=1");
  FILE *f = fopen("/tmp/bs_cli_nul.model", "w");
  assert_non_null(f);
  fwrite("model x\nw bf16 4\n\0junk\n", 1, 23, f);
  fclose(f);
  usage("run steady-normal --model /tmp/bs_cli_nul.model",
        "a NUL byte at offset 17");
  remove("/tmp/bs_cli_nul.model");
  usage("explain no-such", "unknown scenario 'no-such'");
}

static void test_catalogues(void **state) {
  (void)state;
  bs_json j;
  assert_int_equal(backstop("--version"), 0);
  assert_non_null(strstr(out_text, BS_VERSION));
  assert_int_equal(backstop("list --json"), 0);
  assert_int_equal(bs_json_parse(out_text, strlen(out_text), &j), BS_OK);
  const bs_json *s = bs_json_get(&j, "scenarios");
  assert_non_null(s);
  bool found = false;
  for (size_t i = 0; i < s->n; i++)
    found |= !strcmp(bs_json_get_str(&s->items[i], "name", ""), "engine-death");
  assert_true(found);
  bs_json_free(&j);
  assert_int_equal(backstop("faults --json"), 0);
  assert_int_equal(bs_json_parse(out_text, strlen(out_text), &j), BS_OK);
  assert_true(bs_json_get(&j, "faults")->n >= 12);
  /* Each point says which statuses it explains (engine/send: engine-dead). */
  const bs_json *send = &bs_json_get(&j, "faults")->items[0];
  assert_string_equal(bs_json_get_str(send, "name", ""), "engine/send");
  const bs_json *explains = bs_json_get(send, "explains");
  assert_true(explains && explains->n == 1);
  assert_string_equal(explains->items[0].str, "engine-dead");
  bs_json_free(&j);
  assert_int_equal(backstop("explain engine-death"), 0);
  assert_non_null(strstr(out_text, "engine/send"));
  assert_non_null(strstr(out_text, "pause-safety"));
  /* What makes the core itself catch a corrupted master (issue 13). */
  assert_int_equal(backstop("explain master-corrupt"), 0);
  assert_non_null(strstr(out_text, "master/corrupt: MainCast restore"));
  assert_non_null(strstr(out_text, "rematerialize=1 and ci_test=1"));
  assert_int_equal(backstop("faults"), 0);
  assert_non_null(strstr(out_text, "the restores of cycles 0 and 1"));
  assert_int_equal(backstop("help run"), 0);
  assert_non_null(strstr(out_text, "--deadline-s"));
}

/* A user fault on a fault-free scenario: the invariants decide. */
static void test_added_fault_judged_by_invariants(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  assert_int_equal(backstop("run steady-normal --ranks 2 --cycles 2 -q "
                            "--fault name=engine/send,rank=1,cycle=1,nth=1 "
                            "--json r.json"),
                   0);
  char path[128];
  snprintf(path, sizeof path, "%s/r.json", dir);
  char *text = slurp(path);
  assert_non_null(strstr(text, "\"status\": \"engine-dead\""));
  assert_null(strstr(text, "\"expectation\""));
  free(text);
}

static void test_failure_leaves_reports(void **state) {
  (void)state;
  assert_int_equal(backstop("run steady-maincast --ranks 2 --cycles 1 -q "
                            "--mutant same-tag-skip --junit j.xml "
                            "--artifacts art"),
                   1);
  assert_non_null(strstr(out_text, "repro: backstop run steady-maincast "
                                   "--ranks 2 --seed 0 --schedule random "
                                   "--cycles 1 --mutant same-tag-skip"));
  char path[640];
  snprintf(path, sizeof path, "%s/j.xml", dir);
  char *xml = slurp(path);
  assert_non_null(strstr(xml, "failed oracles: bit-identity"));
  free(xml);
  /* The run's folder: its name, then the mark of its --cycles 1. */
  char run[256];
  run_folder_in("art", "steady-maincast-r2-s0-same-tag-skip-", run, sizeof run);
  assert_true(run[0] != '\0');
  snprintf(path, sizeof path, "%s/%s/trace.json", dir, run);
  char *trace = slurp(path);
  bs_json j;
  assert_int_equal(bs_json_parse(trace, strlen(trace), &j), BS_OK);
  assert_non_null(bs_json_get(&j, "traceEvents"));
  bs_json_free(&j);
  free(trace);
  snprintf(path, sizeof path, "%s/%s/json/rank1.flight.json", dir, run);
  struct stat sb;
  assert_int_equal(stat(path, &sb), 0);
  /* Not beside the pickles, where torchfrtrace reads (docs/cli.md). */
  snprintf(path, sizeof path, "%s/%s/rank1.flight.json", dir, run);
  assert_int_not_equal(stat(path, &sb), 0);
  snprintf(path, sizeof path, "%s/%s/rank_1", dir, run);
  assert_int_equal(stat(path, &sb), 0);
}

/* Runs args twice (-j 2, so the schedule differs) and compares the JSON
 * reports with the times blanked. */
static void same_report_twice(const char *args) {
  char *text[2];
  for (int i = 0; i < 2; i++) {
    char cmd[512], name[32];
    snprintf(name, sizeof name, "d%d.json", i);
    snprintf(cmd, sizeof cmd, "run %s -q -j 2 --artifacts art --json %s", args,
             name);
    backstop(cmd);
    text[i] = slurp(name);
    assert_true(strlen(text[i]) > 100);
    blank_times(text[i]);
  }
  assert_string_equal(text[0], text[1]);
  free(text[0]);
  free(text[1]);
}

/* Two reports of one seed diff clean apart from _ms fields: passing runs,
 * contained hangs and desyncs (whose details once embedded "contained in
 * 2.5 ms"), and failing mutant runs with hang reports and paused reads. */
static void test_same_seed_same_report(void **state) {
  (void)state;
  /* steady-normal: a run without fault points too (BS_FIU=OFF skips the
   * others, and a selection that runs nothing is a usage error) */
  same_report_twice("hash-mismatch rank-death rank-divergence slow-rank "
                    "engine-death tensor-set steady-normal --ranks 3 --seed "
                    "11");
  same_report_twice("hash-mismatch steady-offload-disaggregated --ranks 3 "
                    "--mutant local-hash-raise --mutant asleep-reads-device");
}

/* Blanks what differs between two processes of one run: the artifacts'
 * paths (run leaves them, mutants does not) and the addresses a message
 * names (0x7f...: ASLR). */
static void blank_places(char *s) {
  char *a = strstr(s, "\"artifacts\": {");
  if (a) {
    a += strlen("\"artifacts\": {");
    char *end = strchr(a, '}');
    memmove(a, end, strlen(end) + 1);
  }
  for (char *p = s; (p = strstr(p, "0x")); p += 2) {
    size_t len = strspn(p + 2, "0123456789abcdef");
    memmove(p + 2, p + 2 + len, strlen(p + 2 + len) + 1);
  }
}

/* The run object of a JSON report whose repro line is repro, its times
 * and places blanked (caller frees). */
static char *run_object(const char *report, const char *repro) {
  char key[600];
  snprintf(key, sizeof key, "\"repro\": \"%s\"", repro);
  const char *at = strstr(report, key);
  assert_non_null(at);
  const char *from = at;
  while (from > report && strncmp(from, "\n    {\n", 7) != 0)
    from--;
  const char *to = strstr(at, "\n    }");
  assert_non_null(to);
  char *s = strndup(from, (size_t)(to - from));
  blank_times(s);
  blank_places(s);
  return s;
}

/* Runs share a worker process (-j 1: one) that must be for each as a
 * fresh child: the kill matrix of two scenarios (the fixed core's runs
 * and every mutant's, failing ones among them: engine deaths, paused
 * reads that unwind a rank and retire their worker) in one worker gives
 * the report bytes of each run of the second (each right after one of the
 * first in the worker) as that run gives them in a command of its own
 * (the tiny model: the same 13 passing and 4 failing runs as its own). */
static void test_shared_worker_as_fresh(void **state) {
  (void)state;
  backstop("mutants engine-death steady-offload-disaggregated --ranks 2 "
           "--model tiny -j 1 --json m.json");
  char *matrix = slurp("m.json");
  const char *p = matrix;
  int runs = 0;
  while ((p = strstr(p, "\"repro\": \"backstop run steady-offload"))) {
    char repro[600], cmd[700];
    p += strlen("\"repro\": \"");
    snprintf(repro, sizeof repro, "%.*s", (int)strcspn(p, "\""), p);
    snprintf(cmd, sizeof cmd, "%s -q --json one.json",
             repro + strlen("backstop "));
    backstop(cmd);
    char *alone = slurp("one.json");
    char *a = run_object(alone, repro), *b = run_object(matrix, repro);
    assert_string_equal(a, b);
    free(a);
    free(b);
    free(alone);
    runs++;
  }
  assert_true(runs >= 13);
  free(matrix);
}

static bs_json *parse_file(const char *name, bs_json *j) {
  char *text = slurp(name);
  assert_int_equal(bs_json_parse(text, strlen(text), j), BS_OK);
  free(text);
  return j;
}

static const bs_json *first_run(const bs_json *report) {
  const bs_json *runs = bs_json_get(report, "runs");
  assert_true(runs && runs->n > 0);
  return &runs->items[0];
}

/* An armed fault that never fired: vacuous, exit 1, and every report says
 * which fault and how often its point was reached (issue 13's command). */
static void test_vacuous_verdict(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  static const char says[] = "name=engine/send,rank=4,cycle=2,nth=3 never "
                             "fired: its point was reached 1 time on rank 4 "
                             "in cycle 2";
  assert_int_equal(backstop("run steady-maincast --ranks 5 --cycles 3 --fault "
                            "name=engine/send,rank=4,cycle=2,nth=3 --mutant "
                            "pause-not-in-finally --json v.json --junit "
                            "v.xml --artifacts art"),
                   1);
  assert_non_null(strstr(out_text, "VACUOUS steady-maincast"));
  assert_non_null(strstr(out_text, says));
  assert_non_null(strstr(out_text, "1 runs: 0 passed, 0 failed, 1 vacuous"));
  bs_json j;
  const bs_json *run = first_run(parse_file("v.json", &j));
  assert_string_equal(bs_json_get_str(run, "verdict", ""), "vacuous");
  assert_non_null(strstr(bs_json_get_str(run, "note", ""), says));
  const bs_json *armed = bs_json_get(run, "armed");
  assert_true(armed && armed->n == 1);
  assert_int_equal(bs_json_get_num(&armed->items[0], "reached", -1), 1);
  assert_int_equal(bs_json_get(&armed->items[0], "fired")->n, 0);
  assert_int_equal(bs_json_get_num(bs_json_get(&j, "summary"), "vacuous", -1),
                   1);
  bs_json_free(&j);
  char *xml = slurp("v.xml");
  assert_non_null(strstr(xml, "<failure type=\"vacuous\""));
  assert_non_null(strstr(xml, "reached 1 time on rank 4 in cycle 2"));
  free(xml);
  /* nth=1 fires: the JSON lists the firing, the run passes. */
  assert_int_equal(backstop("run steady-maincast --ranks 5 --cycles 3 -q "
                            "--fault name=engine/send,rank=4,cycle=2,nth=1 "
                            "--json f.json"),
                   0);
  armed = bs_json_get(first_run(parse_file("f.json", &j)), "armed");
  const bs_json *fired = bs_json_get(&armed->items[0], "fired");
  assert_true(fired && fired->n == 1);
  assert_string_equal(bs_json_get_str(&fired->items[0], "point", ""),
                      "engine/send");
  assert_int_equal(bs_json_get_num(&fired->items[0], "rank", -1), 4);
  assert_int_equal(bs_json_get_num(&fired->items[0], "cycle", -1), 2);
  assert_int_equal(bs_json_get_num(&fired->items[0], "nth", -1), 1);
  bs_json_free(&j);
}

/* Faults armed through libfiu's fiu-run are reported too: fired, or never
 * (vacuous). */
static void test_fiu_run_faults_reported(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  if (access("/usr/bin/fiu-run", X_OK) != 0)
    skip();
  char cmd[600];
  static const char env[] =
      "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 "
      "/usr/bin/fiu-run -f ''";
  snprintf(cmd, sizeof cmd,
           "cd %s && %s -c 'enable name=engine/send/r1' '%s' run "
           "steady-normal --ranks 2 --cycles 1 -q --json e.json >/dev/null",
           dir, env, getenv("BACKSTOP_BIN"));
  assert_int_equal(system(cmd), 0);
  bs_json j;
  const bs_json *armed =
      bs_json_get(first_run(parse_file("e.json", &j)), "armed");
  assert_true(armed && armed->n == 1);
  assert_string_equal(bs_json_get_str(&armed->items[0], "spec", ""),
                      "fiu-run: enable name=engine/send/r1");
  assert_true(bs_json_get_bool(&armed->items[0], "external", false));
  assert_true(bs_json_get_num(&armed->items[0], "fired_total", 0) >= 1);
  bs_json_free(&j);
  snprintf(cmd, sizeof cmd,
           "cd %s && %s -c 'enable name=engine/send/r7' '%s' run "
           "steady-normal --ranks 2 --cycles 1 -q >/dev/null",
           dir, env, getenv("BACKSTOP_BIN"));
  int ws = system(cmd);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 1);
}

/* The rank's outcome and phase of a one-rank run's report. */
static void outcome_is(const char *args, const char *status,
                       const char *phase) {
  char cmd[512];
  bs_json j;
  snprintf(cmd, sizeof cmd, "run %s -q --json o.json", args);
  assert_int_equal(backstop(cmd), 0);
  const bs_json *o =
      bs_json_get(first_run(parse_file("o.json", &j)), "rank_outcomes");
  assert_true(o && o->n == 1);
  assert_string_equal(bs_json_get_str(&o->items[0], "status", ""), status);
  assert_string_equal(bs_json_get_str(&o->items[0], "phase", ""), phase);
  bs_json_free(&j);
}

/* The agreement all-gather swapped on every rank (comm/diverge) must not
 * read as all-OK: a rank's result is never better than its own status
 * (issue 13's repros; the step's and the resume's injected failures stay). */
static void test_agree_keeps_own_failure(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  outcome_is("step-failure --ranks 1 --cycles 2 --fault "
             "name=comm/diverge,failinfo=0",
             "out-of-memory", "train_step");
  outcome_is("resume-oom --ranks 1 --cycles 2 --fault "
             "name=comm/diverge,failinfo=0",
             "fatal-exit", "wake_up");
}

/* Issue 13's findings on the fixed core: a tensor dropped on every rank is
 * caught by the sync itself (update_weights fails alike), a fault with
 * nth=1 is the ranks' first reach, not the framework's setup, and a swap
 * on every rank explains the corruption it causes. */
static void test_findings_fixed(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  outcome_is("steady-normal --ranks 1 --cycles 1 --fault name=sync/tensor_set",
             "tensor-set-mismatch", "update_weights");
  outcome_is("steady-normal --ranks 1 --cycles 1 --fault name=copy/fail,nth=1",
             "copy-failed", "init");
  assert_int_equal(backstop("run hdo-replay --ranks 2 --cycles 1 -q --fault "
                            "name=comm/diverge,nth=4"),
                   0);
  /* Found by fuzz: a trainer that neither offloads nor colocates does not
   * sleep between cycles (the driver slept it, and it had no backup). */
  assert_int_equal(backstop("run tensor-set --ranks 2 --cycles 2 -q --set "
                            "offload_train=0 --set colocate=0"),
                   0);
  /* Found by fuzz: the agreement's own exchange swapped on every rank
   * (its fingerprints agree) read as all-ok on the rank whose peer failed;
   * every rank now finds the records garbled and fails alike (rank 0's
   * ok record is all zeros: the others' slots tell). */
  assert_int_equal(backstop("run steady-normal --ranks 2 --cycles 1 -q "
                            "--fault name=comm/diverge,cycle=0 --fault "
                            "name=copy/fail,rank=0,nth=1"),
                   0);
  assert_int_equal(backstop("run steady-lora --ranks 2 --cycles 1 -q --fault "
                            "name=comm/diverge,cycle=0"),
                   0);
  /* The plan validates under the run's mutants, as the run does. */
  assert_int_equal(backstop("run steady-maincast --ranks 1 --cycles 1 -q "
                            "--set offload_target=disk --mutant "
                            "disk-offload-accepted"),
                   0);
}

/* A contained hang: the report is printed and kept with the artifacts. */
static void test_hang_report_shown_and_kept(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  assert_int_equal(backstop("run hash-mismatch --ranks 3 --mutant "
                            "local-hash-raise --artifacts art2 --json h.json"),
                   1);
  assert_non_null(strstr(out_text, "| backstop: rank-dead at collective #"));
  assert_non_null(strstr(out_text, "missing from #"));
  char path[192];
  snprintf(path, sizeof path,
           "%s/art2/hash-mismatch-r3-s0-local-hash-raise/report.txt", dir);
  char *report = slurp(path);
  assert_non_null(strstr(report, "rank 2: exited after #"));
  free(report);
  snprintf(path, sizeof path, "%s/h.json", dir);
  char *json = slurp(path);
  assert_non_null(strstr(json, "report.txt\""));
  free(json);
}

/* `hang` is for a wait the watchdog should have ended: every rank skipping
 * an init waits out twice the 10 s default timeout, so a 2 s deadline ends
 * the run first (on its virtual clock: at once). That is said before
 * running and in the verdict (a fail: the deadline was too short), and
 * with a short timeout the run passes. */
static void test_deadline_before_watchdog(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  assert_int_equal(backstop("run steady-normal --ranks 2 --cycles 1 "
                            "--fault name=comm/init_skip --deadline-s "
                            "2 --json d.json --artifacts art3"),
                   1);
  assert_non_null(strstr(err_text, "warning: steady-normal: --deadline-s 2 "
                                   "is shorter than the 20000 ms its faults "
                                   "make it wait (comm/init_skip"));
  assert_non_null(strstr(out_text, "FAIL  steady-normal"));
  assert_null(strstr(out_text, "HANG"));
  assert_non_null(strstr(out_text, "FAIL liveness         stopped at the 2 "
                                   "s deadline while the watchdog was within "
                                   "its 10000 ms timeout"));
  assert_non_null(strstr(out_text, "stopped at its 2 s deadline on the "
                                   "virtual clock"));
  assert_non_null(strstr(out_text, "the deadline was shorter than the "
                                   "timeouts the run needed"));
  char *json = slurp("d.json");
  assert_non_null(strstr(json, "\"verdict\": \"fail\""));
  free(json);
  assert_int_equal(backstop("run steady-normal --ranks 2 --cycles 1 --fault "
                            "name=comm/init_skip --timeout-ms 200 "
                            "--deadline-s 5"),
                   0);
  assert_null(strstr(err_text, "warning"));
}

/* A copy fault on every rank fails the ranks' own copies (agreed and
 * explained), never the driver's reference weights before the world runs. */
static void test_copy_fault_spares_the_reference(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  assert_int_equal(
      backstop(
          "run steady-normal --ranks 2 --cycles 1 -v --fault name=copy/fail"),
      0);
  assert_non_null(strstr(out_text, "all 2 ranks: copy-failed in init"));
}

/* Without fault points (BS_FIU=OFF) a scenario that arms faults is left
 * out of the run and the reports, saying why; what ran decides the exit
 * status; --fault is refused. With them nothing is skipped. */
static void test_fault_scenarios_without_faults(void **state) {
  (void)state;
  assert_int_equal(
      backstop("run engine-death steady-normal --ranks 2 --json s.json"), 0);
  char *json = slurp("s.json");
  assert_non_null(strstr(json, "\"scenario\": \"steady-normal\""));
#ifdef FIU_ENABLE
  assert_null(strstr(err_text, "skipping"));
  assert_non_null(strstr(json, "\"scenario\": \"engine-death\""));
  assert_non_null(strstr(out_text, "2 runs: 2 passed"));
#else
  assert_string_equal(err_text, "backstop: skipping engine-death: needs fault "
                                "points (built with BS_FIU=OFF)\n");
  assert_null(strstr(json, "engine-death"));
  assert_non_null(strstr(out_text, "1 runs: 1 passed"));
  usage("run steady-normal --fault name=engine/send",
        "--fault name=engine/send: this build has no fault points");
#endif
  free(json);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_usage_errors),
      cmocka_unit_test(test_fault_scenarios_without_faults),
      cmocka_unit_test(test_catalogues),
      cmocka_unit_test(test_added_fault_judged_by_invariants),
      cmocka_unit_test(test_failure_leaves_reports),
      cmocka_unit_test(test_same_seed_same_report),
      cmocka_unit_test(test_shared_worker_as_fresh),
      cmocka_unit_test(test_hang_report_shown_and_kept),
      cmocka_unit_test(test_copy_fault_spares_the_reference),
      cmocka_unit_test(test_deadline_before_watchdog),
      cmocka_unit_test(test_vacuous_verdict),
      cmocka_unit_test(test_fiu_run_faults_reported),
      cmocka_unit_test(test_agree_keeps_own_failure),
      cmocka_unit_test(test_findings_fixed),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
