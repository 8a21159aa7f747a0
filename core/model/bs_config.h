/* The job configuration: the miles arguments that the lifecycle and the
 * rematerialize validation read (docs/behavior.md §5-6), and, kept apart in
 * `sim`, the knobs of the simulation itself.
 *
 * Settings are reachable by key for the CLI's `--set KEY=VALUE`; the key
 * table (bs_config_keys) is the one place that lists them. */
#ifndef BS_CONFIG_H
#define BS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_err.h"
#include "bs_mutant.h"

typedef enum bs_train_backend {
  BS_BACKEND_MEGATRON = 0,
  BS_BACKEND_FSDP
} bs_train_backend;

typedef enum bs_offload_target {
  BS_OFFLOAD_CPU = 0,
  BS_OFFLOAD_DISK
} bs_offload_target;

#define BS_CONFIG_PATH_MAX 256

/* Simulation knobs: not miles arguments, never part of the validation. */
typedef struct bs_sim_config {
  size_t bucket_numel;        /* DDP bucket size in elements */
  size_t update_buffer_bytes; /* weight-sync bucket size, in bytes */
  double lr, adam_beta1, adam_beta2, adam_eps, weight_decay;
  double offload_fraction; /* HDO: share of each master shard on the host */
  size_t optimizer_chunks; /* dense model chunks: one inner optimizer each */
} bs_sim_config;

typedef struct bs_config {
  bs_train_backend backend;         /* --train-backend */
  bool colocate;                    /* --colocate */
  bool offload_train;               /* --offload-train */
  bs_offload_target offload_target; /* --offload-train-target */
  bool rematerialize;       /* --rematerialize-param-from-master-weight */
  bool check_rematerialize; /* --check-rematerialize-param-from-master-weight */
  bool ci_test;
  bool debug_train_only;
  bool debug_disable_optimizer;
  bool indep_dp;
  bool use_distributed_optimizer;
  bool keep_old_actor;
  bool precision_aware_optimizer; /* --use-precision-aware-optimizer */
  bool optimizer_cpu_offload;
  bool overlap_param_gather;
  bool compute_advantages_and_returns;
  int num_critic_only_steps;
  int lora_rank;
  char lora_adapter_path[BS_CONFIG_PATH_MAX];
  bool with_ref, with_teacher;
  bs_sim_config sim;
} bs_config;

/* A colocated, offloaded (to cpu) megatron job with the distributed
 * optimizer, advantages on, rematerialize off (the Normal backuper). */
void bs_config_defaults(bs_config *cfg);

/* ---- settings by key ---- */

typedef enum bs_config_kind {
  BS_CFG_BOOL,   /* bool: 0|1|true|false */
  BS_CFG_INT,    /* int within [min, max] */
  BS_CFG_SIZE,   /* size_t within [min, max] */
  BS_CFG_DOUBLE, /* finite double within [min, max] */
  BS_CFG_STRING, /* char[size] */
  BS_CFG_CHOICE  /* an enum stored as its index into `choices` */
} bs_config_kind;

typedef struct bs_config_key {
  const char *name; /* as in --set NAME=VALUE */
  bs_config_kind kind;
  size_t offset;       /* of the field in bs_config */
  size_t size;         /* BS_CFG_STRING: capacity including the NUL */
  const char *choices; /* BS_CFG_CHOICE: "megatron|fsdp" */
  double min, max;     /* numeric kinds */
  bool sim;            /* a simulation knob, not a miles argument */
  const char *help;    /* one line */
} bs_config_key;

/* The key table, terminated by an entry with a NULL name. */
const bs_config_key *bs_config_keys(void);
const bs_config_key *bs_config_key_find(const char *name);
/* "0|1|true|false", "megatron|fsdp", "an integer in [0, 2147483647]"... */
void bs_config_key_accepts(const bs_config_key *k, char *buf, size_t n);

/* One --set KEY=VALUE, parsed once while a run is planned
 * (bs_config_setting_parse, model/bs_config_parse.h): its key, and the
 * value as the key's field holds it. */
typedef struct bs_config_setting {
  const bs_config_key *key;
  unsigned char value[BS_CONFIG_PATH_MAX];
} bs_config_setting;
/* What bs_config_set_kv(cfg, KV) does for the KV s was parsed from. */
void bs_config_apply(bs_config *cfg, const bs_config_setting *s);
/* The value of key as --set would take it back; BS_ERR_INVALID if unknown. */
bs_status bs_config_get(const bs_config *cfg, const char *key, char *buf,
                        size_t n);

/* ---- validation (docs/behavior.md §6) ---- */

/* One rejection rule of --rematerialize-param-from-master-weight, in the
 * order they are checked. `violation` holds the --set assignments that
 * break exactly this rule on bs_config_defaults() with rematerialize=1, so
 * a scenario can drive every rule. */
typedef struct bs_config_rule {
  const char *name;         /* "offload-target-disk" */
  const char *violation[2]; /* KEY=VALUE, unused entries NULL */
  bool (*violated)(const bs_config *cfg);
  const char *message; /* the BS_ERR_CONFIG message */
} bs_config_rule;

const bs_config_rule *bs_config_rules(size_t *n);
/* cfg with r's violation set (a scenario that drives every rule). */
bs_status bs_config_break_rule(bs_config *cfg, const bs_config_rule *r);

/* Range checks of every key (BS_ERR_INVALID), optimizer CPU offload
 * without the precision-aware optimizer (BS_ERR_CONFIG: the optimizer
 * would refuse it at init), then, when rematerialize is on: debug_train_only
 * silently turns it off (BS_OK); otherwise the backend first, then each rule in
 * order (BS_ERR_CONFIG, the rule's message), less those the mutants m take
 * out (a run's mutants, given: the core's switches are the running run's).
 * On acceptance ci_test turns check_rematerialize on. */
bs_status bs_config_validate(bs_config *cfg, bs_mutants m);

/* ---- derived predicates (docs/behavior.md §2, §5) ---- */

bool bs_config_is_lora(const bs_config *cfg);
/* Colocated LoRA reads the frozen base from the memory saver's host copy. */
bool bs_config_sync_reads_ms_backup(const bs_config *cfg);
bool bs_config_enable_weight_backup(const bs_config *cfg);
/* Whether pause keeps a host copy of the DDP param / grad buffers. */
bool bs_config_param_buffers_cpu_backup(const bs_config *cfg);
bool bs_config_grad_buffers_cpu_backup(const bs_config *cfg);

#endif
