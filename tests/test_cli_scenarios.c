/* The scenario catalogue through the backstop binary (BACKSTOP_BIN, set by
 * ctest): every scenario is well-formed at every world size it admits (its
 * labels, settings, fault specs, model and mutant targets), the default
 * suite kills every mutant and arms the important fault points, and the
 * expectations of the fault scenarios pass on the fixed core and fail
 * where the core's check is taken away or the setup changes, and checks a
 * scenario records show up as oracles in the reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bs_fault_control.h"
#include "bs_fault_parse.h"
#include "bs_json.h"
#include "bs_mutant.h"
#include "bs_test_cli.h"
#include "bs_test_faults.h"
#include "catalog/bs_scenario.h"
#include "model/bs_config.h"
#include "model/bs_config_parse.h"
#include "model/bs_model.h"
#include "model/bs_model_parse.h"
#include "oracles/bs_oracle.h"

#define MAX_RANKS 64

static bs_json catalogue; /* `backstop list --json` */

static int setup(void **state) {
  (void)state;
  if (cli_setup("bs_scn_") != 0 || backstop("list --json") != 0)
    return -1;
  /* A scenario dropped as a duplicate name is reported on stderr. */
  if (err_text[0]) {
    fprintf(stderr, "backstop list: %s", err_text);
    return -1;
  }
  return bs_json_parse(out_text, strlen(out_text), &catalogue) == BS_OK ? 0
                                                                        : -1;
}

static int teardown(void **state) {
  (void)state;
  bs_json_free(&catalogue);
  return cli_teardown();
}

static const bs_json *scenarios(void) {
  const bs_json *s = bs_json_get(&catalogue, "scenarios");
  assert_non_null(s);
  assert_int_equal(s->type, BS_JARR);
  assert_true(s->n > 0);
  return s;
}

static bool has_label(const bs_json *s, const char *label) {
  char labels[256];
  snprintf(labels, sizeof labels, " %s ", bs_json_get_str(s, "labels", ""));
  char want[64];
  snprintf(want, sizeof want, " %s ", label);
  return strstr(labels, want) != NULL;
}

static const bs_json *list_of(const bs_json *s, const char *key) {
  const bs_json *l = bs_json_get(s, key);
  assert_non_null(l);
  assert_int_equal(l->type, BS_JARR);
  return l;
}

static void check_labels(const bs_json *s, const char *name) {
  static const char *const known[] = {"@smoke", "@fault", "@mutant-target"};
  char labels[256];
  snprintf(labels, sizeof labels, "%s", bs_json_get_str(s, "labels", ""));
  for (char *save = NULL, *t = strtok_r(labels, " ", &save); t;
       t = strtok_r(NULL, " ", &save)) {
    bool ok = false;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
      ok |= strcmp(t, known[i]) == 0;
    if (!ok)
      fail_msg("%s: unknown label '%s'", name, t);
  }
  if (has_label(s, "@fault") != (list_of(s, "faults")->n > 0))
    fail_msg("%s: @fault exactly when it arms faults", name);
  if (has_label(s, "@mutant-target") != (list_of(s, "targets")->n > 0))
    fail_msg("%s: @mutant-target exactly when it names targets", name);
}

/* Each fault spec, {last} filled, parses and names a rank in the world. */
static void check_faults(const bs_json *s, const char *name, int ranks) {
  const bs_json *f = list_of(s, "faults");
  for (size_t i = 0; i < f->n; i++) {
    char spec[256];
    bs_fault_spec p;
    bs_scenario_fault_expand(f->items[i].str, ranks, spec, sizeof spec);
    if (bs_fault_spec_parse(spec, &p) != BS_OK)
      fail_msg("%s at %d ranks: %s: %s", name, ranks, spec, bs_err()->message);
    if (p.rank >= ranks)
      fail_msg("%s at %d ranks: %s targets rank %d", name, ranks, spec, p.rank);
  }
}

static void check_sets(const bs_json *s, const char *name) {
  const bs_json *kv = list_of(s, "sets");
  bs_config cfg;
  bs_config_defaults(&cfg);
  for (size_t i = 0; i < kv->n; i++)
    if (bs_config_set_kv(&cfg, kv->items[i].str) != BS_OK)
      fail_msg("%s: --set %s: %s", name, kv->items[i].str, bs_err()->message);
  if (bs_config_validate(&cfg, (bs_mutants){0}) != BS_OK)
    fail_msg("%s: configuration rejected: %s", name, bs_err()->message);
}

static void check_targets(const bs_json *s, const char *name) {
  const bs_json *t = list_of(s, "targets");
  for (size_t i = 0; i < t->n; i++)
    if (bs_mutant_parse(t->items[i].str) < 0)
      fail_msg("%s: unknown mutant target '%s'", name, t->items[i].str);
}

static void test_every_scenario_well_formed(void **state) {
  (void)state;
  const bs_json *all = scenarios();
  for (size_t i = 0; i < all->n; i++) {
    const bs_json *s = &all->items[i];
    const char *name = bs_json_get_str(s, "name", "");
    int lo = (int)bs_json_get_num(s, "min_ranks", 0);
    int dflt = (int)bs_json_get_num(s, "default_ranks", 0);
    bs_model_spec m;
    assert_true(name[0]);
    if (!bs_json_get_str(s, "summary", "")[0])
      fail_msg("%s: no summary", name);
    if (lo < 1 || lo > dflt || dflt > MAX_RANKS)
      fail_msg("%s: ranks %d..%d by default %d", name, lo, MAX_RANKS, dflt);
    if (bs_json_get_num(s, "min_cycles", -1) < 0 ||
        bs_json_get_num(s, "min_cycles", -1) > bs_json_get_num(s, "cycles", 0))
      fail_msg("%s: %g cycles by default, at least %g", name,
               bs_json_get_num(s, "cycles", 0),
               bs_json_get_num(s, "min_cycles", -1));
    if (bs_model_load(bs_json_get_str(s, "model", ""), 1.0, &m) != BS_OK)
      fail_msg("%s: model: %s", name, bs_err()->message);
    bs_model_free(&m);
    check_labels(s, name);
    check_sets(s, name);
    check_targets(s, name);
    for (int r = lo; r <= MAX_RANKS; r++)
      check_faults(s, name, r);
  }
}

static void expect_line(const char *text, const char *name, const char *a,
                        const char *b) {
  char want[768];
  snprintf(want, sizeof want, "%s%s", a, b);
  if (!strstr(text, want))
    fail_msg("explain %s lacks '%s'", name, want);
}

/* explain's fault, mutant and oracle lines are the catalogues' own. */
static void check_explain(const bs_json *s, const char *name) {
  char args[128], line[256];
  snprintf(args, sizeof args, "explain %s", name);
  assert_int_equal(backstop(args), 0);
  const bs_json *f = list_of(s, "faults");
  for (size_t i = 0; i < f->n; i++) {
    bs_fault_spec p;
    char spec[256];
    bs_scenario_fault_expand(f->items[i].str, MAX_RANKS, spec, sizeof spec);
    assert_int_equal(bs_fault_spec_parse(spec, &p), BS_OK);
    const bs_fault_point *fp = bs_fault_catalogue_find(p.name);
    snprintf(line, sizeof line, "    %s: ", p.name);
    expect_line(out_text, name, line, fp->where);
    expect_line(out_text, name,
                "    explains: ", bs_status_name(fp->explains[0]));
  }
  const bs_json *t = list_of(s, "targets");
  for (size_t i = 0; i < t->n; i++) {
    bs_mutant m = (bs_mutant)bs_mutant_parse(t->items[i].str);
    snprintf(line, sizeof line, "  %s (%s): ", bs_mutant_name(m),
             bs_mutant_origin(m));
    expect_line(out_text, name, line, bs_mutant_effect(m));
  }
  for (const bs_oracle *o = bs_oracle_list(); o->name; o++) {
    snprintf(line, sizeof line, "  %-17s ", o->name);
    expect_line(out_text, name, line, o->what);
  }
}

static void test_explain_from_catalogues(void **state) {
  (void)state;
  const bs_json *all = scenarios();
  for (size_t i = 0; i < all->n; i++)
    check_explain(&all->items[i], bs_json_get_str(&all->items[i], "name", ""));
}

/* `backstop run` with no selector runs @smoke, and ci/run.sh runs that:
 * it must kill every mutant and arm the fault points the fixed core is
 * required to survive (docs/behavior.md §7, §9). */
static bool smoke_arms(const char *point) {
  const bs_json *all = scenarios();
  for (size_t i = 0; i < all->n; i++) {
    const bs_json *f = list_of(&all->items[i], "faults");
    for (size_t k = 0; k < f->n && has_label(&all->items[i], "@smoke"); k++) {
      bs_fault_spec p;
      char spec[256];
      bs_scenario_fault_expand(f->items[k].str, MAX_RANKS, spec, sizeof spec);
      if (bs_fault_spec_parse(spec, &p) == BS_OK &&
          bs_fault_spec_matches(p.name, point))
        return true;
    }
  }
  return false;
}

/* Whether a scenario of label (NULL: any) targets mutant. */
static bool targeted(const char *mutant, const char *label) {
  const bs_json *all = scenarios();
  for (size_t i = 0; i < all->n; i++) {
    const bs_json *t = list_of(&all->items[i], "targets");
    bool of = !label || has_label(&all->items[i], label);
    for (size_t k = 0; k < t->n && of; k++)
      if (strcmp(t->items[k].str, mutant) == 0)
        return true;
  }
  return false;
}

static void test_default_suite_covers(void **state) {
  (void)state;
  static const char *const points[] = {
      "engine/send",      "restore/bitflip", "backup/corrupt", "master/corrupt",
      "backup/pin_alloc", "region/resume",   "comm/rank_exit", "comm/stall",
      "comm/diverge",     "sync/tensor_set", "optimizer/step", "dev/alloc"};
  for (size_t i = 0; i < sizeof points / sizeof points[0]; i++)
    if (!smoke_arms(points[i]))
      fail_msg("no @smoke scenario arms %s", points[i]);
  /* An ordering mutant's scenario stays out of the default suite until
   * the kill matrix explores schedules (issue 34, phase 2): the default
   * schedule does not expose it. */
  for (int m = 0; m < BS_MUT_COUNT; m++) {
    const char *name = bs_mutant_name((bs_mutant)m);
    const char *label = bs_mutant_ordering((bs_mutant)m) ? NULL : "@smoke";
    if (!targeted(name, label))
      fail_msg("no %s scenario targets mutant %s", label ? label : "", name);
  }
}

/* The oracle `name` of scn's run in report.json (NULL when absent). */
static const bs_json *oracle(const bs_json *report, const char *scn,
                             const char *name) {
  const bs_json *runs = bs_json_get(report, "runs");
  assert_non_null(runs);
  for (size_t i = 0; i < runs->n; i++) {
    if (strcmp(bs_json_get_str(&runs->items[i], "scenario", ""), scn) != 0)
      continue;
    const bs_json *o = bs_json_get(&runs->items[i], "oracles");
    for (size_t k = 0; o && k < o->n; k++)
      if (!strcmp(bs_json_get_str(&o->items[k], "name", ""), name))
        return &o->items[k];
  }
  return NULL;
}

static const bs_json *expectation(const bs_json *report, const char *scn) {
  const bs_json *e = oracle(report, scn, "expectation");
  if (!e)
    fail_msg("%s: no expectation in the report", scn);
  return e;
}

/* Runs "run ARGS -q --json report.json", checks its exit status and
 * parses the report into j. */
static void run_report(const char *args, int rc, bs_json *j) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "run %s -q --json report.json", args);
  assert_int_equal(backstop(cmd), rc);
  char *text = slurp("report.json");
  assert_int_equal(bs_json_parse(text, strlen(text), j), BS_OK);
  free(text);
}

/* Runs args with --json report.json; checks the exit status and that
 * scn's expectation held (ok) or broke, its detail containing says. */
static void expect_run(const char *args, int rc, const char *scn, bool ok,
                       const char *says) {
  bs_json j;
  run_report(args, rc, &j);
  const bs_json *e = expectation(&j, scn);
  const char *detail = bs_json_get_str(e, "detail", "");
  if (bs_json_get_bool(e, "ok", !ok) != ok || !strstr(detail, says))
    fail_msg("%s: expectation %s, wanted %s with '%s': %s", scn,
             ok ? "broke" : "held", ok ? "held" : "broken", says, detail);
  bs_json_free(&j);
}

static void test_fixed_core_meets_expectations(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  expect_run("master-corrupt --ranks 3 --seed 5", 0, "master-corrupt", true,
             "hash-mismatch in restore [");
  expect_run("tensor-set --ranks 2", 0, "tensor-set", true,
             "before any bucket gather");
  assert_int_equal(backstop("run tensor-set --ranks 1"), 2);
  assert_non_null(strstr(err_text, "at least 2 ranks"));
}

/* Without the SHA256 check the master corruption goes through unseen;
 * without the tensor-set fingerprint (the skip-frozen-backup core skips
 * it) the differing sets reach the bucket gathers. */
static void test_expectations_catch_missing_checks(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  expect_run("master-corrupt --ranks 2 --set ci_test=0", 1, "master-corrupt",
             false, "got no failure");
  expect_run("tensor-set --ranks 2 --mutant skip-frozen-backup", 1,
             "tensor-set", false, "got desync");
}

/* The engine dies at the 2nd of 4 buckets and its rank keeps gathering;
 * with 2 buckets no gather follows the death, and without the pause on the
 * failure path the next cycle cannot sync. */
static void test_engine_death_keeps_gathering(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  expect_run("engine-death --ranks 2", 0, "engine-death", true,
             "killed at bucket 2; cycle 1 update_weights: every rank issued");
  expect_run("engine-death --ranks 3", 0, "engine-death", true, "(4 data)");
  expect_run("engine-death --ranks 2 --set update_buffer_bytes=4096", 1,
             "engine-death", false, "died at bucket 2 of 2: no bucket gather");
  expect_run("engine-death --ranks 2 --mutant pause-not-in-finally", 1,
             "engine-death", false, "no successful update_weights in cycle 2");
}

/* chained-optimizers is about N inner optimizers on one DDP buffer: with
 * one dense optimizer (optimizer_chunks=1) or three, the chain is not the
 * scenario's and its expectation must break, naming what rank 0 built. */
static void test_chained_optimizers_needs_the_chain(void **state) {
  (void)state;
  expect_run("chained-optimizers --ranks 2", 0, "chained-optimizers", true,
             "rank 0 built 3 inner optimizers, 3 of them HDOs (buckets): "
             "dense 0+1, dense 1+2, expert 0+2");
  expect_run("chained-optimizers --ranks 2 --set optimizer_chunks=1", 1,
             "chained-optimizers", false,
             "not a chain of three HDOs; rank 0 built 2 inner optimizers, 2 "
             "of them HDOs (buckets): dense 0+3, expert 0+2 (expected 3");
  expect_run("chained-optimizers --ranks 2 --set optimizer_chunks=3", 1,
             "chained-optimizers", false,
             "rank 0 built 4 inner optimizers, 4 of them HDOs (buckets): "
             "dense 0+1, dense 1+1, dense 2+1, expert 0+2");
}

/* The report names exactly the dead (or diverging) rank at any size, under
 * the scenario's own watchdog unless --timeout-ms replaces it. */
static void test_reports_name_the_rank(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  expect_run("rank-death --ranks 3", 0, "rank-death", true,
             "(timeout 2000 ms); the report says 'rank 2: dead after #");
  expect_run("rank-death --ranks 6 --timeout-ms 4000", 0, "rank-death", true,
             "(timeout 4000 ms); the report says 'rank 5: dead after #");
  expect_run("rank-divergence --ranks 2", 0, "rank-divergence", true,
             "the report says 'rank 1: reduce_scatter #");
}

/* 50 ms stalls under the scenario's 2 s watchdog are no hang; under a
 * 30 ms one they are, and the expectation says so. */
static void test_slow_rank_no_false_alarm(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  expect_run("slow-rank --ranks 2", 0, "slow-rank", true,
             "4 stalls in cycles 0..2, every phase ok, no hang report");
  expect_run("slow-rank --ranks 2 --timeout-ms 30", 1, "slow-rank", false,
             "timeout");
}

static void want_oracle(const bs_json *j, const char *scn, const char *name,
                        bool ok, const char *says) {
  const bs_json *o = oracle(j, scn, name);
  if (!o || bs_json_get_bool(o, "ok", !ok) != ok ||
      !strstr(bs_json_get_str(o, "detail", ""), says))
    fail_msg("%s: oracle %s missing or not %s with '%s'", scn, name,
             ok ? "ok" : "failed", says);
}

/* From 1024 ranks on, a scheduled world's live digests are hashed by a
 * process of their own (bs_hasher.h) and written only when it drains: the
 * bit-identity oracle holds them against the initial weights, computed
 * apart, so digests left unwritten fail it. */
static void test_large_world_digests(void **state) {
  (void)state;
  bs_json j;
  run_report("steady-maincast --model tiny --cycles 1 --ranks 1024", 0, &j);
  want_oracle(&j, "steady-maincast", "bit-identity", true,
              "1024 restores and 1024 engine syncs bit-identical");
  bs_json_free(&j);
}

/* Each check a driver records is an oracle of the run in every report:
 * config-matrix lists each rule, the broken one by name. */
static void test_checks_are_oracles(void **state) {
  (void)state;
  bs_json j;
  size_t n;
  const bs_config_rule *rules = bs_config_rules(&n);
  run_report("config-matrix", 0, &j);
  for (size_t i = 0; i < n; i++)
    want_oracle(&j, "config-matrix", rules[i].name, true, "config-rejected");
  want_oracle(&j, "config-matrix", "backend-checked-first", true,
              "violations at once");
  bs_json_free(&j);
  assert_int_equal(backstop("run config-matrix --mutant disk-offload-accepted "
                            "-v --junit j.xml"),
                   1);
  assert_non_null(strstr(out_text, "FAIL offload-target-disk offload_target"));
  char *junit = slurp("j.xml");
  assert_non_null(strstr(junit, "offload-target-disk: offload_target=disk: "
                                "accepted under rematerialize"));
  free(junit);
}

/* corrupt-extras looks the named tensor up in the run's model; a user's
 * fault skips that check along with the expectation. */
static void test_corrupt_extras_names_an_extra(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  bs_json j;
  run_report("corrupt-extras --ranks 2 --model frozen", 0, &j);
  want_oracle(&j, "corrupt-extras", "names-an-extra", true,
              "rel_proj.weight': a frozen param of model frozen");
  bs_json_free(&j);
  run_report("corrupt-extras --ranks 2 --fault "
             "name=comm/stall,rank=0,cycle=1,nth=1,failinfo=1",
             0, &j);
  assert_null(oracle(&j, "corrupt-extras", "names-an-extra"));
  assert_null(oracle(&j, "corrupt-extras", "expectation"));
  bs_json_free(&j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_scenario_well_formed),
      cmocka_unit_test(test_explain_from_catalogues),
      cmocka_unit_test(test_default_suite_covers),
      cmocka_unit_test(test_fixed_core_meets_expectations),
      cmocka_unit_test(test_expectations_catch_missing_checks),
      cmocka_unit_test(test_engine_death_keeps_gathering),
      cmocka_unit_test(test_chained_optimizers_needs_the_chain),
      cmocka_unit_test(test_reports_name_the_rank),
      cmocka_unit_test(test_slow_rank_no_false_alarm),
      cmocka_unit_test(test_large_world_digests),
      cmocka_unit_test(test_checks_are_oracles),
      cmocka_unit_test(test_corrupt_extras_names_an_extra),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
