#include "model/bs_config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bs_mutant.h"
#include "bs_near.h"
#include "bs_num.h"
#include "model/bs_config_parse.h"

#define REMAT "--rematerialize-param-from-master-weight"

void bs_config_defaults(bs_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->backend = BS_BACKEND_MEGATRON;
  cfg->colocate = true;
  cfg->offload_train = true;
  cfg->offload_target = BS_OFFLOAD_CPU;
  cfg->use_distributed_optimizer = true;
  cfg->compute_advantages_and_returns = true;
  cfg->sim = (bs_sim_config){.bucket_numel = 4096,
                             .update_buffer_bytes = 64 * 1024,
                             .lr = 1e-2,
                             .adam_beta1 = 0.9,
                             .adam_beta2 = 0.999,
                             .adam_eps = 1e-8,
                             .weight_decay = 0.0,
                             .offload_fraction = 0.5,
                             .optimizer_chunks = 1};
}

/* ---- the key table ---- */

#define OFF(field) offsetof(bs_config, field)
#define KBOOL(field, h)                                                        \
  { .name = #field, .kind = BS_CFG_BOOL, .offset = OFF(field), .help = h }
#define KINT(field, h)                                                         \
  {                                                                            \
    .name = #field, .kind = BS_CFG_INT, .offset = OFF(field), .max = INT_MAX,  \
    .help = h                                                                  \
  }
#define KSIZE(field, lo, h)                                                    \
  {                                                                            \
    .name = #field, .kind = BS_CFG_SIZE, .offset = OFF(sim.field), .min = lo,  \
    .max = (double)(1ull << 40), .sim = true, .help = h                        \
  }
#define KDBL(field, lo, hi, h)                                                 \
  {                                                                            \
    .name = #field, .kind = BS_CFG_DOUBLE, .offset = OFF(sim.field),           \
    .min = lo, .max = hi, .sim = true, .help = h                               \
  }
#define KCHOICE(field, ch, h)                                                  \
  {                                                                            \
    .name = #field, .kind = BS_CFG_CHOICE, .offset = OFF(field),               \
    .choices = ch, .help = h                                                   \
  }

static const bs_config_key keys[] = {
    KCHOICE(backend, "megatron|fsdp", "training backend (--train-backend)"),
    KBOOL(colocate, "trainer and rollout engine share the GPUs"),
    KBOOL(offload_train, "release the trainer's GPU memory while it sleeps"),
    KCHOICE(offload_target, "cpu|disk", "where offloading keeps the bytes"),
    KBOOL(rematerialize, "MainCast backuper: rebuild bf16 params from the "
                         "fp32 masters (" REMAT ")"),
    KBOOL(check_rematerialize, "SHA256-check MainCast restores against the "
                               "first 2 backups"),
    KBOOL(ci_test, "CI mode: turns check_rematerialize on"),
    KBOOL(debug_train_only, "train without a rollout engine"),
    KBOOL(debug_disable_optimizer, "skip the optimizer step"),
    KBOOL(indep_dp, "independent data-parallel cells (fault tolerance)"),
    KBOOL(use_distributed_optimizer, "shard masters and Adam state over DP"),
    KBOOL(keep_old_actor, "keep an old_actor copy of the weights"),
    KBOOL(precision_aware_optimizer, "--use-precision-aware-optimizer"),
    KBOOL(optimizer_cpu_offload, "HybridDeviceOptimizer: masters partly "
                                 "on the host"),
    KBOOL(overlap_param_gather, "overlap the param all-gather with forward"),
    KBOOL(compute_advantages_and_returns, "the step start that restores "
                                          "the actor"),
    KINT(num_critic_only_steps, "critic-only warmup steps"),
    KINT(lora_rank, "LoRA rank, 0 = no LoRA"),
    {.name = "lora_adapter_path",
     .kind = BS_CFG_STRING,
     .offset = OFF(lora_adapter_path),
     .size = BS_CONFIG_PATH_MAX,
     .help = "LoRA adapter to load (non-empty = LoRA)"},
    KBOOL(with_ref, "load a reference model (tag ref)"),
    KBOOL(with_teacher, "load a teacher model (tag teacher)"),
    KSIZE(bucket_numel, 1, "sim: DDP bucket size in elements"),
    KSIZE(update_buffer_bytes, 1, "sim: weight-sync bucket size in bytes"),
    KDBL(lr, 0, 1e3, "sim: Adam learning rate"),
    KDBL(adam_beta1, 0, 0.999999, "sim: Adam beta1"),
    KDBL(adam_beta2, 0, 0.999999, "sim: Adam beta2"),
    KDBL(adam_eps, 1e-30, 1, "sim: Adam epsilon"),
    KDBL(weight_decay, 0, 1, "sim: decoupled weight decay"),
    KDBL(offload_fraction, 0, 1,
         "sim: HDO share of each master shard "
         "kept on the host"),
    {.name = "optimizer_chunks",
     .kind = BS_CFG_SIZE,
     .offset = OFF(sim.optimizer_chunks),
     .min = 1,
     .max = 64,
     .sim = true,
     .help = "sim: dense model chunks, one inner optimizer each (the "
             "chained optimizer: these and one for the expert buffer)"},
    {.name = NULL},
};

const bs_config_key *bs_config_keys(void) {
  return keys;
}

const bs_config_key *bs_config_key_find(const char *name) {
  for (const bs_config_key *k = keys; name && k->name; k++)
    if (strcmp(k->name, name) == 0)
      return k;
  return NULL;
}

void bs_config_key_accepts(const bs_config_key *k, char *buf, size_t n) {
  switch (k->kind) {
  case BS_CFG_BOOL:
    snprintf(buf, n, "0|1|true|false");
    break;
  case BS_CFG_INT:
  case BS_CFG_SIZE:
    snprintf(buf, n, "an integer in [%.0f, %.0f]", k->min, k->max);
    break;
  case BS_CFG_DOUBLE:
    snprintf(buf, n, "a number in [%g, %g]", k->min, k->max);
    break;
  case BS_CFG_STRING:
    snprintf(buf, n, "a string of at most %zu characters", k->size - 1);
    break;
  case BS_CFG_CHOICE:
    snprintf(buf, n, "%s", k->choices);
    break;
  }
}

/* ---- parsing and range checks ---- */

static void *field(bs_config *cfg, const bs_config_key *k) {
  return (char *)cfg + k->offset;
}

static const void *cfield(const bs_config *cfg, const bs_config_key *k) {
  return (const char *)cfg + k->offset;
}

/* Index of value among "a|b|c", or -1. */
static int choice_index(const char *choices, const char *value) {
  size_t len = strlen(value);
  int i = 0;
  for (const char *p = choices; p; i++) {
    const char *bar = strchr(p, '|');
    size_t plen = bar ? (size_t)(bar - p) : strlen(p);
    if (plen == len && strncmp(p, value, len) == 0)
      return i;
    p = bar ? bar + 1 : NULL;
  }
  return -1;
}

static int choice_count(const char *choices) {
  int n = 1;
  for (const char *p = choices; (p = strchr(p, '|')); p++)
    n++;
  return n;
}

static void choice_name(const char *choices, int idx, char *buf, size_t n) {
  const char *p = choices;
  for (int i = 0; i < idx && p; i++)
    p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL;
  int len = p ? (int)strcspn(p, "|") : 0;
  snprintf(buf, n, "%.*s", len, p ? p : "");
}

static bool parse_bool(const char *s, bool *out) {
  if (strcmp(s, "1") == 0 || strcasecmp(s, "true") == 0)
    *out = true;
  else if (strcmp(s, "0") == 0 || strcasecmp(s, "false") == 0)
    *out = false;
  else
    return false;
  return true;
}

/* A number that fills the whole string: an integer is a plain decimal
 * (bs_num: no key takes a negative one); a real is what strtod reads
 * (bs_num has no reader of [0, max]: "0" is a value here), "nan" and
 * "inf" too, which the range check rejects. */
static bool parse_number(const char *s, bool integer, double *out) {
  long l;
  if (integer) {
    if (!bs_num_long(s, 0, LONG_MAX, &l))
      return false;
    *out = (double)l;
    return true;
  }
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || errno != 0 || *end != '\0')
    return false;
  *out = v;
  return true;
}

/* Parses value into the key's field of cfg; false for a malformed value. */
static bool parse_into(bs_config *cfg, const bs_config_key *k,
                       const char *value) {
  void *f = field(cfg, k);
  double v = 0;
  switch (k->kind) {
  case BS_CFG_BOOL:
    return parse_bool(value, f);
  case BS_CFG_INT:
    if (!parse_number(value, true, &v) || v < INT_MIN || v > INT_MAX)
      return false;
    *(int *)f = (int)v;
    return true;
  case BS_CFG_SIZE:
    if (!parse_number(value, true, &v) || v < 0 || v > (double)SIZE_MAX)
      return false;
    *(size_t *)f = (size_t)v;
    return true;
  case BS_CFG_DOUBLE:
    if (!parse_number(value, false, &v))
      return false;
    *(double *)f = v;
    return true;
  case BS_CFG_STRING:
    if (strlen(value) >= k->size)
      return false;
    memcpy(f, value, strlen(value) + 1);
    return true;
  case BS_CFG_CHOICE:
    /* enum fields: an int-sized integer type on every ABI we build for */
    *(int *)f = choice_index(k->choices, value);
    return *(int *)f >= 0;
  }
  return false;
}

static bool in_range(const bs_config *cfg, const bs_config_key *k) {
  const void *f = cfield(cfg, k);
  switch (k->kind) {
  case BS_CFG_BOOL:
    return true;
  case BS_CFG_INT:
    return *(const int *)f >= k->min && *(const int *)f <= k->max;
  case BS_CFG_SIZE:
    return *(const size_t *)f >= k->min && *(const size_t *)f <= k->max;
  case BS_CFG_DOUBLE:
    return isfinite(*(const double *)f) && *(const double *)f >= k->min &&
           *(const double *)f <= k->max;
  case BS_CFG_STRING:
    return memchr(f, '\0', k->size) != NULL;
  case BS_CFG_CHOICE:
    return *(const int *)f >= 0 && *(const int *)f < choice_count(k->choices);
  }
  return false;
}

static bs_status unknown_key(const char *key) {
  const char *names[sizeof keys / sizeof keys[0]];
  size_t n = 0;
  for (const bs_config_key *k = keys; k->name; k++)
    names[n++] = k->name;
  const char *near = bs_near(key, names, n);
  if (near)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "unknown configuration key '%.60s' (did you mean '%s'?)",
                       key, near);
  return bs_err_fail(
      BS_ERR_INVALID, NULL,
      "unknown configuration key '%.60s' (`backstop help run` lists "
      "the keys)",
      key);
}

bs_status bs_config_set(bs_config *cfg, const char *key, const char *value) {
  bs_status st = BS_OK;
  char accepts[96];
  const bs_config_key *k = bs_config_key_find(key);
  if (!k) {
    st = unknown_key(key ? key : "(null)");
    goto out;
  }
  bs_config_key_accepts(k, accepts, sizeof accepts);
  bs_config tmp = *cfg; /* cfg stays unchanged on a bad value */
  if (!value || !parse_into(&tmp, k, value) || !in_range(&tmp, k))
    /* a long value must not push the accepted values out of the message */
    BS_FAIL(BS_ERR_INVALID, NULL, "bad value '%.40s%s' for %s: accepted %s",
            value ? value : "(null)", value && strlen(value) > 40 ? "..." : "",
            key, accepts);
  *cfg = tmp;
out:
  return st;
}

bs_status bs_config_set_kv(bs_config *cfg, const char *kv) {
  bs_status st = BS_OK;
  char key[64];
  const char *eq = kv ? strchr(kv, '=') : NULL;
  if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof key)
    BS_FAIL(BS_ERR_INVALID, NULL, "expected KEY=VALUE, got '%s'",
            kv ? kv : "(null)");
  snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
  BS_CHECK(bs_config_set(cfg, key, eq + 1));
out:
  return st;
}

/* The bytes of the key's field. */
static size_t field_size(const bs_config_key *k) {
  switch (k->kind) {
  case BS_CFG_BOOL:
    return sizeof(bool);
  case BS_CFG_SIZE:
    return sizeof(size_t);
  case BS_CFG_DOUBLE:
    return sizeof(double);
  case BS_CFG_STRING:
    return k->size;
  default: /* BS_CFG_INT, BS_CFG_CHOICE (an enum: int-sized) */
    return sizeof(int);
  }
}

bs_status bs_config_setting_parse(const char *kv, bs_config_setting *out) {
  bs_status st = BS_OK;
  bs_config tmp;
  bs_config_defaults(&tmp);
  BS_CHECK(bs_config_set_kv(&tmp, kv));
  char key[64];
  snprintf(key, sizeof key, "%.*s", (int)strcspn(kv, "="), kv);
  out->key = bs_config_key_find(key);
  memcpy(out->value, cfield(&tmp, out->key), field_size(out->key));
out:
  return st;
}

void bs_config_apply(bs_config *cfg, const bs_config_setting *s) {
  memcpy(field(cfg, s->key), s->value, field_size(s->key));
}

bs_status bs_config_break_rule(bs_config *cfg, const bs_config_rule *r) {
  bs_status st = BS_OK;
  for (size_t i = 0; i < 2 && r->violation[i]; i++)
    BS_CHECK(bs_config_set_kv(cfg, r->violation[i]));
out:
  return st;
}

bs_status bs_config_get(const bs_config *cfg, const char *key, char *buf,
                        size_t n) {
  bs_status st = BS_OK;
  const bs_config_key *k = bs_config_key_find(key);
  if (!k)
    BS_FAIL(BS_ERR_INVALID, NULL, "unknown configuration key '%s'",
            key ? key : "(null)");
  const void *f = cfield(cfg, k);
  switch (k->kind) {
  case BS_CFG_BOOL:
    snprintf(buf, n, "%d", *(const bool *)f ? 1 : 0);
    break;
  case BS_CFG_INT:
    snprintf(buf, n, "%d", *(const int *)f);
    break;
  case BS_CFG_SIZE:
    snprintf(buf, n, "%zu", *(const size_t *)f);
    break;
  case BS_CFG_DOUBLE:
    snprintf(buf, n, "%.17g", *(const double *)f);
    break;
  case BS_CFG_STRING:
    snprintf(buf, n, "%s", (const char *)f);
    break;
  case BS_CFG_CHOICE:
    choice_name(k->choices, *(const int *)f, buf, n);
    break;
  }
out:
  return st;
}

/* ---- validation ---- */

static bool bad_backend(const bs_config *c) {
  return c->backend != BS_BACKEND_MEGATRON;
}
static bool bad_lora(const bs_config *c) {
  return bs_config_is_lora(c);
}
static bool bad_no_optimizer(const bs_config *c) {
  return c->debug_disable_optimizer;
}
static bool bad_indep_dp(const bs_config *c) {
  return c->indep_dp;
}
static bool bad_colocate(const bs_config *c) {
  return !c->colocate;
}
static bool bad_offload(const bs_config *c) {
  return !c->offload_train;
}
static bool bad_disk(const bs_config *c) {
  return c->offload_target == BS_OFFLOAD_DISK;
}
static bool bad_dist_opt(const bs_config *c) {
  return !c->use_distributed_optimizer;
}
static bool bad_old_actor(const bs_config *c) {
  return c->keep_old_actor;
}
static bool bad_precision(const bs_config *c) {
  return c->precision_aware_optimizer && !c->optimizer_cpu_offload;
}
static bool bad_overlap(const bs_config *c) {
  return c->overlap_param_gather;
}
static bool bad_advantages(const bs_config *c) {
  return !c->compute_advantages_and_returns;
}
static bool bad_critic_only(const bs_config *c) {
  return c->num_critic_only_steps > 0;
}

/* docs/behavior.md §6, in its order; the backend comes first because every
 * later rule reads Megatron-only settings. */
static const bs_config_rule rules[] = {
    {"backend",
     {"backend=fsdp"},
     bad_backend,
     REMAT " reads Megatron's distributed-optimizer main params: not "
           "supported with --train-backend fsdp"},
    {"lora",
     {"lora_rank=8"},
     bad_lora,
     REMAT " does not support LoRA (--lora-rank / --lora-adapter-path)"},
    {"debug-disable-optimizer",
     {"debug_disable_optimizer=1"},
     bad_no_optimizer,
     REMAT " is incompatible with --debug-disable-optimizer: there are no "
           "main params to rematerialize from"},
    {"indep-dp",
     {"indep_dp=1"},
     bad_indep_dp,
     REMAT " is incompatible with --indep-dp: update_weights runs on the "
           "first alive cell only, every other cell would keep its param "
           "buffer resident"},
    {"colocate",
     {"colocate=0"},
     bad_colocate,
     REMAT " requires --colocate: only a colocated trainer sleeps and "
           "needs its weights rebuilt"},
    {"offload-train",
     {"offload_train=0"},
     bad_offload,
     REMAT " requires --offload-train: without it the param buffer is never "
           "released, there is nothing to rebuild"},
    {"offload-target-disk",
     {"offload_target=disk"},
     bad_disk,
     REMAT " is incompatible with --offload-train-target disk: there is no "
           "host backup to rebuild around"},
    {"distributed-optimizer",
     {"use_distributed_optimizer=0"},
     bad_dist_opt,
     REMAT " requires --use-distributed-optimizer: the rebuild casts its "
           "fp32 master shards"},
    {"keep-old-actor",
     {"keep_old_actor=1"},
     bad_old_actor,
     REMAT " is incompatible with --keep-old-actor: old_actor is copied "
           "from an actor host backup that MainCast does not keep"},
    {"precision-aware-without-cpu-offload",
     {"precision_aware_optimizer=1", "optimizer_cpu_offload=0"},
     bad_precision,
     REMAT " is incompatible with --use-precision-aware-optimizer without "
           "--optimizer-cpu-offload: a bf16 + int16 master cannot be cast "
           "back once the param buffer is lost"},
    {"overlap-param-gather",
     {"overlap_param_gather=1"},
     bad_overlap,
     REMAT " is incompatible with --overlap-param-gather: the rebuild's "
           "all-gather must complete before the weights are used"},
    {"compute-advantages-and-returns",
     {"compute_advantages_and_returns=0"},
     bad_advantages,
     REMAT " requires compute_advantages_and_returns (no "
           "--disable-compute-advantages-and-returns): the restore runs at "
           "its start"},
    {"num-critic-only-steps",
     {"num_critic_only_steps=1"},
     bad_critic_only,
     REMAT " is incompatible with --num-critic-only-steps > 0: critic-only "
           "steps update the weights without a train step (until miles "
           "#1588)"},
};

const bs_config_rule *bs_config_rules(size_t *n) {
  *n = sizeof rules / sizeof rules[0];
  return rules;
}

static bs_status check_ranges(const bs_config *cfg) {
  bs_status st = BS_OK;
  char accepts[96];
  for (const bs_config_key *k = keys; k->name; k++) {
    if (in_range(cfg, k))
      continue;
    bs_config_key_accepts(k, accepts, sizeof accepts);
    BS_FAIL(BS_ERR_INVALID, NULL, "%s is out of range: accepted %s", k->name,
            accepts);
  }
out:
  return st;
}

/* Whether the run's mutants take rule r out of the validation. Mutant
 * disk-offload-accepted (origin: a validation gap, docs/behavior.md §8):
 * without the disk rule a disk-offloaded job starts and its rebuild has no
 * host backup to replace. */
static bool waived(const bs_config_rule *r, bs_mutants m) {
  return r->violated == bad_disk &&
         bs_mutant_in(m, BS_MUT_DISK_OFFLOAD_ACCEPTED);
}

bs_status bs_config_validate(bs_config *cfg, bs_mutants m) {
  bs_status st = BS_OK;
  BS_CHECK(check_ranges(cfg));
  /* The optimizer refuses it at init: say so before anything runs. */
  if (cfg->optimizer_cpu_offload && !cfg->precision_aware_optimizer)
    BS_FAIL(BS_ERR_CONFIG, NULL,
            "optimizer_cpu_offload=1 needs precision_aware_optimizer=1: the "
            "hybrid device optimizer reuses its code path");
  if (!cfg->rematerialize)
    goto out;
  if (cfg->debug_train_only) {
    /* No engine, so update_weights never runs and the param buffer is
     * never paused: there is nothing to rebuild. */
    cfg->rematerialize = false;
    goto out;
  }
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (rules[i].violated(cfg) && !waived(&rules[i], m))
      BS_FAIL(BS_ERR_CONFIG, NULL, "%s", rules[i].message);
  if (cfg->ci_test)
    cfg->check_rematerialize = true;
out:
  return st;
}

/* ---- derived predicates ---- */

bool bs_config_is_lora(const bs_config *cfg) {
  return cfg->lora_rank > 0 || cfg->lora_adapter_path[0] != '\0';
}

bool bs_config_sync_reads_ms_backup(const bs_config *cfg) {
  return cfg->colocate && bs_config_is_lora(cfg) &&
         cfg->offload_target == BS_OFFLOAD_CPU && !cfg->with_ref &&
         !cfg->with_teacher && !cfg->keep_old_actor;
}

bool bs_config_enable_weight_backup(const bs_config *cfg) {
  /* offload_train is in the list since miles #3128. Mutant
   * offload-drops-backup (before miles #3128): an offloaded job with no
   * ref/teacher/old_actor/colocate keeps no backup, so the next sync has no
   * source. */
  bool offload =
      cfg->offload_train && !bs_mutant_on(BS_MUT_OFFLOAD_DROPS_BACKUP);
  bool wanted = cfg->with_ref || cfg->with_teacher || cfg->keep_old_actor ||
                cfg->colocate || offload;
  return wanted && !bs_config_sync_reads_ms_backup(cfg);
}

bool bs_config_param_buffers_cpu_backup(const bs_config *cfg) {
  /* Offload pauses the param buffer without a copy (slime's regions); the
   * MainCast rebuild replaces the copy. */
  return !cfg->offload_train && !cfg->rematerialize;
}

bool bs_config_grad_buffers_cpu_backup(const bs_config *cfg) {
  return !cfg->offload_train;
}
