/* Every validation rule of rematerialize (behavior.md §6) on its own, the
 * backend checked first, and the combinations that must be accepted. Its
 * own driver: no world, one check per rule in the record. */
#include <stdio.h>
#include <string.h>

#include "bs_config.h"
#include "bs_record.h"
#include "bs_scenario.h"

/* The defaults, rematerialize as given, then kv..., then validation. */
static bs_status validate(const char *const *kv, size_t n, bool remat,
                          bs_config *cfg) {
  bs_status st = BS_OK;
  bs_config_defaults(cfg);
  cfg->rematerialize = remat;
  for (size_t i = 0; i < n; i++)
    if (kv[i])
      BS_CHECK(bs_config_set_kv(cfg, kv[i]));
  st = bs_config_validate(cfg);
out:
  return st;
}

/* kv is rejected under rematerialize with `message`, and fine without. */
static bs_status rejected(bs_record *rec, const char *name,
                          const char *const *kv, size_t n,
                          const char *message) {
  bs_config cfg;
  char msg[sizeof bs_err()->message];
  bs_err_clear();
  bs_status on = validate(kv, n, true, &cfg);
  snprintf(msg, sizeof msg, "%s", on == BS_OK ? "accepted" : bs_err()->message);
  bs_err_clear();
  bs_status off = validate(kv, n, false, &cfg);
  bs_err_clear();
  bool ok = on == BS_ERR_CONFIG && strcmp(msg, message) == 0 && off == BS_OK;
  return bs_record_check(rec, name, ok, "%s: %.180s%s", bs_status_name(on), msg,
                         off == BS_OK ? "" : "; rejected without it too");
}

typedef struct accepted_case {
  const char *name;
  const char *kv[3];
  bool remat, check; /* rematerialize and its check after validation */
} accepted_case;

static const accepted_case accepted[] = {
    {"accepts-defaults", {NULL}, true, false},
    {"accepts-precision-aware-with-cpu-offload",
     {"precision_aware_optimizer=1", "optimizer_cpu_offload=1"},
     true,
     false},
    {"accepts-ref-and-teacher", {"with_ref=1", "with_teacher=1"}, true, false},
    {"ci-test-arms-the-check", {"ci_test=1"}, true, true},
    {"debug-train-only-disables",
     {"debug_train_only=1", "colocate=0", "offload_target=disk"},
     false,
     false},
};

/* Accepted with its consequences: rematerialize and the check as listed,
 * and no host backup for the param buffers while rematerialize is on. */
static bs_status accepts(bs_record *rec, const accepted_case *c) {
  bs_config cfg;
  bs_err_clear();
  bs_status st = validate(c->kv, 3, true, &cfg);
  bool backup = bs_config_param_buffers_cpu_backup(&cfg);
  bool ok = st == BS_OK && cfg.rematerialize == c->remat &&
            cfg.check_rematerialize == c->check && !(c->remat && backup);
  bs_status rs = bs_record_check(
      rec, c->name, ok,
      "%s, rematerialize=%d, check=%d, param buffer host backup=%d%s%.160s",
      bs_status_name(st), cfg.rematerialize, cfg.check_rematerialize, backup,
      st ? ": " : "", st ? bs_err()->message : "");
  bs_err_clear();
  return rs;
}

static bs_status drive(const bs_run_cfg *run, bs_record *rec) {
  bs_status st = BS_OK;
  size_t n;
  const bs_config_rule *rules = bs_config_rules(&n);
  if (run->nsets)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "config-matrix builds its own "
            "configurations: --set %s does not apply",
            run->sets[0]);
  for (size_t i = 0; i < n; i++)
    BS_CHECK(
        rejected(rec, rules[i].name, rules[i].violation, 2, rules[i].message));
  /* The backend comes first: with several rules broken, its message wins. */
  static const char *const broken[] = {"backend=fsdp", "colocate=0",
                                       "offload_target=disk"};
  BS_CHECK(rejected(rec, "backend-checked-first", broken, 3, rules[0].message));
  for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++)
    BS_CHECK(accepts(rec, &accepted[i]));
out:
  return st;
}

static bool expect(const bs_record *r, char *d, size_t n) {
  for (size_t i = 0; i < r->nchecks; i++)
    if (!r->checks[i].ok) {
      snprintf(d, n, "%s: %s", r->checks[i].name, r->checks[i].detail);
      return false;
    }
  if (r->nchecks == 0) {
    snprintf(d, n, "no rule was checked");
    return false;
  }
  snprintf(d, n, "all %zu validation checks hold", r->nchecks);
  return true;
}

BS_SCENARIO(config_matrix){
    .name = "config-matrix",
    .labels = "@smoke @mutant-target",
    .summary = "every rematerialize validation rule, each with its message",
    .details = "For each rule of behavior.md §6 (bs_config_rules): the "
               "defaults with rematerialize=1 and exactly that rule broken "
               "are rejected with the rule's own message, and the same "
               "settings pass without rematerialize; the backend is checked "
               "first; precision-aware with CPU offload, ref and teacher are "
               "accepted with the param buffers losing their host backup; "
               "ci_test arms the check; debug_train_only silently turns "
               "rematerialize off. No world runs; --set is refused.",
    .model = "tiny",
    .cycles = 0,
    .default_ranks = 1,
    .min_ranks = 1,
    .targets = BS_LIST("disk-offload-accepted"),
    .drive = drive,
    .expect = expect,
    .expects = "every rule rejects with its message, the accepted "
               "combinations pass with their consequences",
};
