/* Every validation rule of rematerialize (docs/behavior.md §6) on its own, all
 * of them at once, and the combinations that must be accepted. Its own
 * driver: no world, one check per item in the record. */
#include <stdio.h>
#include <string.h>

#include "catalog/bs_scenario.h"
#include "model/bs_config.h"
#include "oracles/bs_expect.h"

/* What validating a configuration gave: its status, message, and the
 * configuration as validation left it. */
typedef struct outcome {
  bs_status st;
  char msg[sizeof bs_err()->message];
  bs_config cfg;
} outcome;

/* The defaults with rematerialize as given. */
static bs_config base(bool remat) {
  bs_config c;
  bs_config_defaults(&c);
  c.rematerialize = remat;
  return c;
}

/* Validates cfg under the run's mutants (disk-offload-accepted waives a
 * rule: bs_config_validate). st: how building cfg went. */
static void validate(bs_config cfg, bs_status st, bs_mutants m, outcome *o) {
  o->cfg = cfg;
  o->st = st == BS_OK ? bs_config_validate(&o->cfg, m) : st;
  snprintf(o->msg, sizeof o->msg, "%s", o->st ? bs_err()->message : "");
  bs_err_clear();
}

/* The defaults, rematerialize as given, with rule r broken. */
static void broken(const bs_config_rule *r, bool remat, bs_mutants m,
                   outcome *o) {
  bs_config c = base(remat);
  bs_err_clear();
  validate(c, bs_config_break_rule(&c, r), m, o);
}

/* Another rule with the same message as rule i, NULL when its own. */
static const char *shared_message(const bs_config_rule *rules, size_t n,
                                  size_t i) {
  for (size_t j = 0; j < n; j++)
    if (j != i && strcmp(rules[j].message, rules[i].message) == 0)
      return rules[j].name;
  return NULL;
}

/* Rule i: its violation is rejected under rematerialize with its own
 * message, and the same settings are fine without it. */
static bs_status check_rule(bs_record *rec, const bs_config_rule *rules,
                            size_t n, size_t i, bs_mutants m) {
  const bs_config_rule *r = &rules[i];
  const char *other = shared_message(rules, n, i);
  outcome on, off;
  broken(r, true, m, &on);
  broken(r, false, m, &off);
  bool ok = on.st == BS_ERR_CONFIG && strcmp(on.msg, r->message) == 0 &&
            off.st == BS_OK && !other;
  return bs_record_check(
      rec, r->name, ok, "%s%s%s: %s%s%.150s%s%s%s", r->violation[0],
      r->violation[1] ? " " : "", r->violation[1] ? r->violation[1] : "",
      on.st ? bs_status_name(on.st) : "accepted under rematerialize",
      on.st ? ": " : "", on.msg,
      off.st ? "; rejected without rematerialize too" : "",
      other ? "; same message as rule " : "", other ? other : "");
}

/* Every rule broken at once: the backend rule answers (it is checked
 * first), and debug_train_only turns rematerialize off silently. */
static bs_status check_all_at_once(bs_record *rec, const bs_config_rule *rules,
                                   size_t n, bs_mutants m) {
  bs_status st = BS_OK, made = BS_OK;
  size_t nviolations = 0;
  outcome all, quiet;
  bs_config c = base(true);
  for (size_t i = 0; i < n && made == BS_OK; i++) {
    made = bs_config_break_rule(&c, &rules[i]);
    nviolations += 1 + (rules[i].violation[1] != NULL);
  }
  validate(c, made, m, &all);
  c.debug_train_only = true;
  validate(c, made, m, &quiet);
  BS_CHECK(bs_record_check(rec, "backend-checked-first",
                           n > 0 && all.st == BS_ERR_CONFIG &&
                               !strcmp(all.msg, rules[0].message),
                           "%zu violations at once: %s: %.160s", nviolations,
                           bs_status_name(all.st), all.msg));
  BS_CHECK(bs_record_check(
      rec, "debug-train-only-disables",
      quiet.st == BS_OK && !quiet.cfg.rematerialize,
      "every violation and debug_train_only=1: %s, rematerialize=%d%s%.160s",
      bs_status_name(quiet.st), quiet.cfg.rematerialize, quiet.st ? ": " : "",
      quiet.msg));
out:
  return st;
}

static void with_ci_test(bs_config *c) {
  c->ci_test = true;
}

static void with_cpu_offload(bs_config *c) {
  c->precision_aware_optimizer = true;
  c->optimizer_cpu_offload = true;
}

static void with_ref_and_teacher(bs_config *c) {
  c->with_ref = true;
  c->with_teacher = true;
}

typedef struct accepted_case {
  const char *name;
  void (*set)(bs_config *c); /* NULL: the defaults */
  bool ci;                   /* ci_test: the check must be armed */
} accepted_case;

static const accepted_case accepted[] = {
    {"accepts-defaults", NULL, false},
    {"accepts-ci-test-arming-the-check", with_ci_test, true},
    {"accepts-precision-aware-with-cpu-offload", with_cpu_offload, false},
    {"accepts-ref-and-teacher", with_ref_and_teacher, false},
};

/* Accepted with its consequences: rematerialize stays on, the param
 * buffers lose their host backup, the check is armed exactly by ci_test. */
static bs_status check_accepted(bs_record *rec, const accepted_case *c,
                                bs_mutants m) {
  outcome o;
  bs_config cfg = base(true);
  if (c->set)
    c->set(&cfg);
  validate(cfg, BS_OK, m, &o);
  bool backup = bs_config_param_buffers_cpu_backup(&o.cfg);
  bool ok = o.st == BS_OK && o.cfg.rematerialize && !backup &&
            o.cfg.check_rematerialize == c->ci;
  return bs_record_check(
      rec, c->name, ok,
      "%s, rematerialize=%d, check=%d, param buffer host backup=%d%s%.160s",
      bs_status_name(o.st), o.cfg.rematerialize, o.cfg.check_rematerialize,
      backup, o.st ? ": " : "", o.msg);
}

static bs_status drive(const bs_run *run, bs_record *rec) {
  bs_status st = BS_OK;
  size_t n;
  const bs_config_rule *rules = bs_config_rules(&n);
  bs_mutants m = bs_mutant_of(run->mutants, run->nmutants);
  if (run->nsets)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "config-matrix builds its own configurations: --set %s does not "
            "apply",
            run->sets[0]);
  for (size_t i = 0; i < n; i++)
    BS_CHECK(check_rule(rec, rules, n, i, m));
  BS_CHECK(check_all_at_once(rec, rules, n, m));
  for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++)
    BS_CHECK(check_accepted(rec, &accepted[i], m));
out:
  return st;
}

/* Every rule of the core's table has its check, and every check holds. */
static bool expect(const bs_record *r, char *d, size_t n) {
  size_t nrules;
  const bs_config_rule *rules = bs_config_rules(&nrules);
  for (size_t i = 0; i < nrules; i++) {
    bool seen = false;
    for (size_t k = 0; k < r->nchecks && !seen; k++)
      seen = strcmp(r->checks[k].name, rules[i].name) == 0;
    if (!seen) {
      snprintf(d, n, "rule %s was not checked", rules[i].name);
      return false;
    }
  }
  if (!bs_expect_checks_ok(r, d, n))
    return false;
  snprintf(d, n, "all %zu checks hold (%zu rules, each with its own message)",
           r->nchecks, nrules);
  return true;
}

BS_SCENARIO(config_matrix){
    .name = "config-matrix",
    .labels = "@smoke @mutant-target",
    .summary = "every rematerialize validation rule, each with its message",
    .details =
        "Its own driver: no world, no ranks, no fault; --set is refused (it "
        "builds its own configurations).\n"
        "Steps: for each rule of bs_config_rules() (behavior.md §6, in its "
        "order: backend, LoRA, debug-disable-optimizer, indep-dp, colocate, "
        "offload-train, offload target disk, distributed optimizer, "
        "keep_old_actor, precision-aware without CPU offload, "
        "overlap_param_gather, compute_advantages_and_returns, "
        "num_critic_only_steps) one check named after the rule: the "
        "defaults with rematerialize=1 and exactly that rule's violation "
        "are rejected with config-rejected and the rule's own message, the "
        "same settings pass without rematerialize, and no other rule has "
        "that message. Then backend-checked-first: every violation at once "
        "is answered by the backend rule; debug-train-only-disables: every "
        "violation plus debug_train_only=1 passes with rematerialize "
        "silently off; and the accepted combinations (the defaults, "
        "ci_test, precision-aware with optimizer CPU offload, ref and "
        "teacher): each validates with rematerialize on, the param buffers "
        "without a host backup, and the SHA256 check armed exactly when "
        "ci_test is.\n"
        "Expects: every rule of bs_config_rules() has its check and every "
        "check holds. Each check is also an oracle entry of the run, so the "
        "reports name the rule that broke; the invariants have no rank to "
        "judge.",
    .cycles = BS_NO_CYCLES,
    .default_ranks = 1,
    .targets = BS_LIST("disk-offload-accepted"),
    .drive = drive,
    .expect = expect,
    .expects = "every rule has a check rejecting it with its own message "
               "only under rematerialize; all at once the backend answers, "
               "debug_train_only silences them; the accepted combinations "
               "pass with their consequences",
};
