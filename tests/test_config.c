#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bs_err.h"
#include "bs_mutant.h"
#include "model/bs_config.h"
#include "model/bs_config_parse.h"

/* No mutant: the fixed core's validation. */
static const bs_mutants NONE = {0};

#define REMAT "--rematerialize-param-from-master-weight"

/* The rules of docs/behavior.md §6 in its order, each with a piece of its
 * message that names the conflicting option. */
static const struct {
  const char *name, *substr;
} expected_rules[] = {
    {"backend", "--train-backend fsdp"},
    {"lora", "LoRA"},
    {"debug-disable-optimizer", "--debug-disable-optimizer"},
    {"indep-dp", "--indep-dp"},
    {"colocate", "--colocate"},
    {"offload-train", "--offload-train:"},
    {"offload-target-disk", "is incompatible with --offload-train-target "
                            "disk: there is no host backup to rebuild "
                            "around"},
    {"distributed-optimizer", "--use-distributed-optimizer"},
    {"keep-old-actor", "--keep-old-actor"},
    {"precision-aware-without-cpu-offload",
     "--use-precision-aware-optimizer without --optimizer-cpu-offload"},
    {"overlap-param-gather", "--overlap-param-gather"},
    {"compute-advantages-and-returns", "compute_advantages_and_returns"},
    {"num-critic-only-steps", "--num-critic-only-steps"},
};
#define NRULES (sizeof expected_rules / sizeof expected_rules[0])

static int setup(void **state) {
  (void)state;
  bs_mutant_reset();
  bs_err_clear();
  return 0;
}

static bs_config remat(void) {
  bs_config c;
  bs_config_defaults(&c);
  c.rematerialize = true;
  return c;
}

/* Asserts st, that the record holds code and a message containing substr,
 * then clears the record (the first error wins until cleared). */
static void expect_err(bs_status st, bs_status code, const char *substr) {
  assert_int_equal(st, code);
  assert_int_equal(bs_err()->code, code);
  if (!strstr(bs_err()->message, substr))
    fail_msg("message '%s' lacks '%s'", bs_err()->message, substr);
  bs_err_clear();
}

/* Equal in every key (padding bytes are not compared). */
static void assert_same_config(const bs_config *a, const bs_config *b) {
  for (const bs_config_key *k = bs_config_keys(); k->name; k++) {
    char va[300], vb[300];
    assert_int_equal(bs_config_get(a, k->name, va, sizeof va), BS_OK);
    assert_int_equal(bs_config_get(b, k->name, vb, sizeof vb), BS_OK);
    assert_string_equal(va, vb);
  }
}

static void test_defaults_accepted(void **state) {
  (void)state;
  bs_config c;
  bs_config_defaults(&c);
  assert_int_equal(bs_config_validate(&c, NONE), BS_OK);
  assert_true(c.colocate && c.offload_train && c.use_distributed_optimizer);
  assert_true(c.compute_advantages_and_returns);
  assert_false(c.rematerialize); /* the Normal backuper */
  assert_int_equal(c.backend, BS_BACKEND_MEGATRON);
  assert_int_equal(c.offload_target, BS_OFFLOAD_CPU);
  assert_true(bs_config_enable_weight_backup(&c));
  assert_false(bs_config_param_buffers_cpu_backup(&c));
  assert_false(bs_config_grad_buffers_cpu_backup(&c));
}

static void test_rule_table_order_and_messages(void **state) {
  (void)state;
  size_t n = 0;
  const bs_config_rule *r = bs_config_rules(&n);
  assert_int_equal(n, NRULES);
  for (size_t i = 0; i < n; i++) {
    assert_string_equal(r[i].name, expected_rules[i].name);
    assert_non_null(strstr(r[i].message, expected_rules[i].substr));
    assert_int_equal(strncmp(r[i].message, REMAT, strlen(REMAT)), 0);
    for (size_t j = 0; j < i; j++)
      assert_string_not_equal(r[i].message, r[j].message);
  }
}

/* Each rule's violation breaks that rule alone, and validation reports it
 * with its own message. */
static void test_every_rejection(void **state) {
  (void)state;
  size_t n = 0;
  const bs_config_rule *r = bs_config_rules(&n);
  for (size_t i = 0; i < n; i++) {
    bs_config c = remat();
    for (int k = 0; k < 2 && r[i].violation[k]; k++)
      assert_int_equal(bs_config_set_kv(&c, r[i].violation[k]), BS_OK);
    for (size_t j = 0; j < n; j++)
      assert_int_equal(r[j].violated(&c), i == j);
    expect_err(bs_config_validate(&c, NONE), BS_ERR_CONFIG,
               expected_rules[i].substr);
    assert_true(c.rematerialize); /* a rejection changes nothing */
  }
}

static void test_lora_by_adapter_path(void **state) {
  (void)state;
  bs_config c = remat();
  assert_int_equal(bs_config_set(&c, "lora_adapter_path", "/ckpt/a"), BS_OK);
  expect_err(bs_config_validate(&c, NONE), BS_ERR_CONFIG,
             "does not support LoRA");
}

static void test_backend_checked_first(void **state) {
  (void)state;
  bs_config c = remat();
  c.backend = BS_BACKEND_FSDP;
  c.lora_rank = 4;
  c.offload_target = BS_OFFLOAD_DISK;
  c.indep_dp = c.keep_old_actor = true;
  c.num_critic_only_steps = 3;
  expect_err(bs_config_validate(&c, NONE), BS_ERR_CONFIG,
             "--train-backend fsdp");
  /* megatron again: now the first rule in order, not the last, fires */
  c.backend = BS_BACKEND_MEGATRON;
  expect_err(bs_config_validate(&c, NONE), BS_ERR_CONFIG, "LoRA");
  c.lora_rank = 0;
  expect_err(bs_config_validate(&c, NONE), BS_ERR_CONFIG, "--indep-dp");
}

static void test_debug_train_only_disables(void **state) {
  (void)state;
  bs_config c = remat();
  c.debug_train_only = c.ci_test = true;
  c.backend = BS_BACKEND_FSDP; /* would be rejected otherwise */
  c.offload_target = BS_OFFLOAD_DISK;
  assert_int_equal(bs_config_validate(&c, NONE), BS_OK);
  assert_int_equal(bs_err()->code, BS_OK);
  assert_false(c.rematerialize);
  assert_false(c.check_rematerialize);
}

static void test_ci_test_arms_check(void **state) {
  (void)state;
  bs_config c = remat();
  assert_int_equal(bs_config_validate(&c, NONE), BS_OK);
  assert_false(c.check_rematerialize);
  c.ci_test = true;
  assert_int_equal(bs_config_validate(&c, NONE), BS_OK);
  assert_true(c.check_rematerialize);
  assert_true(c.rematerialize);
  assert_false(bs_config_param_buffers_cpu_backup(&c));
  /* not armed by a rejected configuration */
  c = remat();
  c.ci_test = true;
  c.overlap_param_gather = true;
  expect_err(bs_config_validate(&c, NONE), BS_ERR_CONFIG,
             "--overlap-param-gather");
  assert_false(c.check_rematerialize);
}

static void test_accepted_combinations(void **state) {
  (void)state;
  bs_config c = remat();
  c.precision_aware_optimizer = c.optimizer_cpu_offload = true;
  assert_int_equal(bs_config_validate(&c, NONE), BS_OK);
  c = remat();
  c.with_ref = c.with_teacher = true;
  assert_int_equal(bs_config_validate(&c, NONE), BS_OK);
  assert_true(c.rematerialize);
  /* rematerialize off: nothing is checked */
  c.rematerialize = false;
  c.backend = BS_BACKEND_FSDP;
  c.lora_rank = 8;
  assert_int_equal(bs_config_validate(&c, NONE), BS_OK);
}

static void test_disk_offload_mutant(void **state) {
  (void)state;
  bs_config c = remat();
  c.offload_target = BS_OFFLOAD_DISK;
  bs_mutants gap = bs_mutant_with(NONE, BS_MUT_DISK_OFFLOAD_ACCEPTED);
  expect_err(bs_config_validate(&c, NONE), BS_ERR_CONFIG,
             "offload-train-target");
  /* given, not the process's switch (the planner validates every run) */
  bs_mutant_set(BS_MUT_DISK_OFFLOAD_ACCEPTED, true);
  expect_err(bs_config_validate(&c, NONE), BS_ERR_CONFIG,
             "offload-train-target");
  bs_mutant_reset();
  assert_int_equal(bs_config_validate(&c, gap), BS_OK);
  /* the mutant skips that rule only */
  c.keep_old_actor = true;
  expect_err(bs_config_validate(&c, gap), BS_ERR_CONFIG, "--keep-old-actor");
  c.keep_old_actor = false;
  expect_err(bs_config_validate(&c, NONE), BS_ERR_CONFIG,
             "offload-train-target");
}

/* bit b of i */
static bool bit(unsigned i, int b) {
  return (i >> b) & 1u;
}

static void test_enable_weight_backup_table(void **state) {
  (void)state;
  for (int mutant = 0; mutant < 2; mutant++) {
    bs_mutant_set(BS_MUT_OFFLOAD_DROPS_BACKUP, mutant);
    for (unsigned i = 0; i < 32; i++) {
      bs_config c;
      bs_config_defaults(&c);
      c.with_ref = bit(i, 0);
      c.with_teacher = bit(i, 1);
      c.keep_old_actor = bit(i, 2);
      c.colocate = bit(i, 3);
      c.offload_train = bit(i, 4);
      bool want = c.with_ref || c.with_teacher || c.keep_old_actor ||
                  c.colocate || (c.offload_train && !mutant);
      assert_int_equal(bs_config_enable_weight_backup(&c), want);
    }
  }
  bs_mutant_reset();
  /* colocated LoRA reading the memory saver's copy: no backup */
  bs_config c;
  bs_config_defaults(&c);
  c.lora_rank = 16;
  assert_true(bs_config_sync_reads_ms_backup(&c));
  assert_false(bs_config_enable_weight_backup(&c));
  c.with_ref = true; /* the ref model needs a backuper again */
  assert_true(bs_config_enable_weight_backup(&c));
}

static void test_sync_reads_ms_backup_table(void **state) {
  (void)state;
  for (unsigned i = 0; i < 128; i++) {
    bs_config c;
    bs_config_defaults(&c);
    c.colocate = bit(i, 0);
    c.lora_rank = bit(i, 1) ? 8 : 0;
    if (bit(i, 2))
      snprintf(c.lora_adapter_path, sizeof c.lora_adapter_path, "/a");
    c.offload_target = bit(i, 3) ? BS_OFFLOAD_DISK : BS_OFFLOAD_CPU;
    c.with_ref = bit(i, 4);
    c.with_teacher = bit(i, 5);
    c.keep_old_actor = bit(i, 6);
    bool lora = bit(i, 1) || bit(i, 2);
    assert_int_equal(bs_config_is_lora(&c), lora);
    bool want = c.colocate && lora && !bit(i, 3) && !c.with_ref &&
                !c.with_teacher && !c.keep_old_actor;
    assert_int_equal(bs_config_sync_reads_ms_backup(&c), want);
  }
}

static void test_buffer_backups(void **state) {
  (void)state;
  bs_config c;
  bs_config_defaults(&c);
  c.offload_train = false;
  assert_true(bs_config_param_buffers_cpu_backup(&c));
  assert_true(bs_config_grad_buffers_cpu_backup(&c));
  c.rematerialize = true;
  assert_false(bs_config_param_buffers_cpu_backup(&c));
  assert_true(bs_config_grad_buffers_cpu_backup(&c));
}

static void test_set_good_values(void **state) {
  (void)state;
  bs_config c;
  bs_config_defaults(&c);
  assert_int_equal(bs_config_set(&c, "rematerialize", "1"), BS_OK);
  assert_true(c.rematerialize);
  assert_int_equal(bs_config_set(&c, "colocate", "false"), BS_OK);
  assert_false(c.colocate);
  assert_int_equal(bs_config_set(&c, "colocate", "TRUE"), BS_OK);
  assert_true(c.colocate);
  assert_int_equal(bs_config_set(&c, "ci_test", "0"), BS_OK);
  assert_int_equal(bs_config_set(&c, "offload_target", "disk"), BS_OK);
  assert_int_equal(c.offload_target, BS_OFFLOAD_DISK);
  assert_int_equal(bs_config_set(&c, "backend", "fsdp"), BS_OK);
  assert_int_equal(c.backend, BS_BACKEND_FSDP);
  assert_int_equal(bs_config_set_kv(&c, "num_critic_only_steps=3"), BS_OK);
  assert_int_equal(c.num_critic_only_steps, 3);
  assert_int_equal(bs_config_set_kv(&c, "lora_adapter_path=/x=y"), BS_OK);
  assert_string_equal(c.lora_adapter_path, "/x=y");
  assert_int_equal(bs_config_set(&c, "bucket_numel", "128"), BS_OK);
  assert_int_equal(c.sim.bucket_numel, 128);
  assert_int_equal(bs_config_set(&c, "lr", "2.5e-3"), BS_OK);
  assert_true(c.sim.lr == 2.5e-3);
  assert_int_equal(bs_err()->code, BS_OK);
}

static void test_set_bad_keys_and_values(void **state) {
  (void)state;
  bs_config c, before;
  bs_config_defaults(&c);
  before = c;
  expect_err(bs_config_set(&c, "rematerialise", "1"), BS_ERR_INVALID,
             "did you mean 'rematerialize'");
  expect_err(bs_config_set(&c, "zz", "1"), BS_ERR_INVALID,
             "unknown configuration key 'zz' (`backstop help run`");
  expect_err(bs_config_set(&c, NULL, "1"), BS_ERR_INVALID, "unknown");
  static const struct {
    const char *key, *value, *substr;
  } bad[] = {
      {"colocate", "maybe", "'maybe' for colocate: accepted 0|1|true|false"},
      {"colocate", "", "0|1|true|false"},
      {"offload_target", "nvme", "offload_target: accepted cpu|disk"},
      {"backend", "Megatron", "megatron|fsdp"},
      {"lora_rank", "-1", "lora_rank: accepted an integer in [0, 2147483647]"},
      {"lora_rank", "12abc", "lora_rank"},
      {"lora_rank", "99999999999", "lora_rank"},
      {"num_critic_only_steps", "1.5", "integer"},
      {"bucket_numel", "0", "bucket_numel: accepted an integer in [1,"},
      {"bucket_numel", "-5", "bucket_numel"},
      {"adam_beta2", "1", "adam_beta2: accepted a number in [0, 0.999999]"},
      {"lr", "nan", "lr"},
      {"lr", "inf", "lr"},
      {"lr", "0.1x", "lr"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    expect_err(bs_config_set(&c, bad[i].key, bad[i].value), BS_ERR_INVALID,
               bad[i].substr);
    assert_same_config(&c, &before);
  }
  char long_path[BS_CONFIG_PATH_MAX + 1];
  memset(long_path, 'a', sizeof long_path - 1);
  long_path[sizeof long_path - 1] = '\0';
  expect_err(bs_config_set(&c, "lora_adapter_path", long_path), BS_ERR_INVALID,
             "at most 255 characters");
  expect_err(bs_config_set(&c, "colocate", NULL), BS_ERR_INVALID, "(null)");
  expect_err(bs_config_set_kv(&c, "colocate"), BS_ERR_INVALID,
             "expected KEY=VALUE, got 'colocate'");
  expect_err(bs_config_set_kv(&c, "=1"), BS_ERR_INVALID, "KEY=VALUE");
  expect_err(bs_config_set_kv(&c, "colocate=2"), BS_ERR_INVALID, "colocate");
  assert_same_config(&c, &before);
}

/* Every key's value goes out through get and back in through set. */
static void test_get_set_round_trip(void **state) {
  (void)state;
  bs_config src = remat(), dst;
  src.backend = BS_BACKEND_FSDP;
  src.offload_target = BS_OFFLOAD_DISK;
  src.lora_rank = 7;
  src.num_critic_only_steps = 2;
  src.with_teacher = true;
  snprintf(src.lora_adapter_path, sizeof src.lora_adapter_path, "/p q");
  src.sim.bucket_numel = 77;
  src.sim.lr = 0.1 / 3;
  src.sim.offload_fraction = 0.25;
  bs_config_defaults(&dst);
  size_t nkeys = 0;
  for (const bs_config_key *k = bs_config_keys(); k->name; k++, nkeys++) {
    char val[300];
    assert_non_null(k->help);
    assert_true(strlen(k->help) > 0);
    assert_ptr_equal(bs_config_key_find(k->name), k);
    assert_int_equal(bs_config_get(&src, k->name, val, sizeof val), BS_OK);
    assert_int_equal(bs_config_set(&dst, k->name, val), BS_OK);
  }
  assert_same_config(&src, &dst);
  assert_true(dst.sim.lr == src.sim.lr); /* %.17g is exact */
  assert_true(nkeys >= 21 + 8);
  char buf[16];
  expect_err(bs_config_get(&src, "nope", buf, sizeof buf), BS_ERR_INVALID,
             "'nope'");
  assert_null(bs_config_key_find("nope"));
  assert_true(bs_config_key_find("lr")->sim);
  assert_false(bs_config_key_find("colocate")->sim);
}

static void test_validate_ranges(void **state) {
  (void)state;
  bs_config c;
  bs_config_defaults(&c);
  c.lora_rank = -1;
  expect_err(bs_config_validate(&c, NONE), BS_ERR_INVALID, "lora_rank");
  bs_config_defaults(&c);
  c.sim.lr = NAN;
  expect_err(bs_config_validate(&c, NONE), BS_ERR_INVALID,
             "lr is out of range");
  bs_config_defaults(&c);
  c.sim.bucket_numel = 0;
  expect_err(bs_config_validate(&c, NONE), BS_ERR_INVALID, "bucket_numel");
  bs_config_defaults(&c);
  c.backend = (bs_train_backend)7;
  expect_err(bs_config_validate(&c, NONE), BS_ERR_INVALID, "megatron|fsdp");
  bs_config_defaults(&c);
  memset(c.lora_adapter_path, 'x', sizeof c.lora_adapter_path);
  expect_err(bs_config_validate(&c, NONE), BS_ERR_INVALID, "lora_adapter_path");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_defaults_accepted, setup),
      cmocka_unit_test_setup(test_rule_table_order_and_messages, setup),
      cmocka_unit_test_setup(test_every_rejection, setup),
      cmocka_unit_test_setup(test_lora_by_adapter_path, setup),
      cmocka_unit_test_setup(test_backend_checked_first, setup),
      cmocka_unit_test_setup(test_debug_train_only_disables, setup),
      cmocka_unit_test_setup(test_ci_test_arms_check, setup),
      cmocka_unit_test_setup(test_accepted_combinations, setup),
      cmocka_unit_test_setup(test_disk_offload_mutant, setup),
      cmocka_unit_test_setup(test_enable_weight_backup_table, setup),
      cmocka_unit_test_setup(test_sync_reads_ms_backup_table, setup),
      cmocka_unit_test_setup(test_buffer_backups, setup),
      cmocka_unit_test_setup(test_set_good_values, setup),
      cmocka_unit_test_setup(test_set_bad_keys_and_values, setup),
      cmocka_unit_test_setup(test_get_set_round_trip, setup),
      cmocka_unit_test_setup(test_validate_ranges, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
