/* The MainCast backuper and its context (docs/behavior.md §4): bit-identical
 * round trips rebuilt from the masters, the all-gather that covers the
 * other ranks' shards, chained and HDO optimizers, get(), the coverage
 * check, the SHA256 check and its faults, other tags, the pinned budget. */
#include "bs_test_faults.h"
#include "bs_test_world.h"

#include "backup/bs_backup_testing.h"
#include "backup/bs_maincast_plan.h"
#include "bs_actor_testing.h"
#include "memsaver/bs_memsaver_testing.h"
#include "model/bs_model_parse.h"
#include "train/bs_optimizer.h"

static void mc_init(tw *t, int n, const char *preset) {
  tw_init(t, n, preset);
  t->cfg.rematerialize = true;
}

/* The pieces of a MainCast context built by hand on one rank, for the
 * tests that go below the actor. */
typedef struct parts {
  bs_memsaver *ms;
  bs_params *p;
  bs_optimizer *opt;
} parts;

static bs_status parts_open(bs_comm *c, const bs_model_spec *m,
                            bool precision_aware, parts *x) {
  bs_status st = BS_OK;
  bs_dev *dev = bs_comm_dev(c);
  bs_optimizer_cfg oc = {.lr = 0.01f,
                         .beta1 = 0.9f,
                         .beta2 = 0.99f,
                         .eps = 1e-8f,
                         .precision_aware = precision_aware};
  *x = (parts){0};
  BS_CHECK(bs_memsaver_create(dev, 1, &x->ms));
  BS_CHECK(bs_params_create(dev, x->ms, m, 1, 64, false, &x->p));
  BS_CHECK(bs_params_fill(x->p, 3));
  BS_CHECK(bs_optimizer_create(dev, x->ms, &x->p->layout, 0, &oc,
                               x->p->param_buf, &x->opt));
out:
  return st;
}

static void parts_close(parts *x) {
  bs_optimizer_destroy(x->opt);
  bs_params_destroy(x->p);
  bs_memsaver_destroy(x->ms);
}

/* fn on one rank with the preset's model as its argument. */
static void run_on_preset(const char *preset, bs_rank_fn fn) {
  bs_model_spec m;
  bs_world *w = NULL;
  void *args[1] = {&m};
  assert_int_equal(bs_model_preset(preset, 1.0, &m), BS_OK);
  assert_int_equal(tw_run_fn(1, fn, args, &w), BS_OK);
  bs_world_destroy(w);
  bs_model_free(&m);
}

/* ---- round trip ---- */

static bs_status round_trip(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_digest d0[TW_DIG_MAX], d1[TW_DIG_MAX], d2[TW_DIG_MAX];
  assert_int_equal(bs_actor_train_step(a), BS_OK);
  size_t n = tw_digests(a, d0);
  tw_poison_params(a);
  tw_poison_extras(a);
  tw_digests(a, d1);
  assert_int_equal(tw_ndiff(d0, d1, n), n); /* everything is garbage */
  assert_int_equal(bs_actor_switch_model(a, "actor"), BS_OK);
  tw_digests(a, d2);
  assert_int_equal(tw_ndiff(d0, d2, n), 0);
  return BS_OK;
}

static void test_round_trip_poisoned(void **state) {
  (void)state;
  tw t;
  mc_init(&t, 3, "moe");
  t.body = round_trip;
  assert_int_equal(tw_run(&t), BS_OK);
  assert_string_equal(t.err[0].message, "");
  tw_free(&t);
}

/* ---- the cast covers the owned shard only; the all-gather the rest ---- */

static size_t buffer_tensors_changed(bs_actor *a, const bs_digest *d0) {
  bs_digest d[TW_DIG_MAX];
  size_t n = tw_digests(a, d);
  return tw_ndiff(d0, d, n);
}

static bs_status shard_then_gather(bs_actor *a, bs_comm *c, tw *t) {
  (void)t;
  bs_digest d0[TW_DIG_MAX];
  bs_params *p = bs_actor_params(a);
  bs_dev *dev = bs_actor_dev(a);
  int peer = (bs_comm_rank(c) + 1) % bs_comm_size(c);
  size_t first, count;
  assert_int_equal(bs_actor_train_step(a), BS_OK);
  tw_digests(a, d0);
  /* Garbage in the slice the next rank owns, in every bucket. */
  for (size_t b = 0; b < p->layout.buf[BS_BUF_DENSE].nbuckets; b++) {
    bs_ddp_shard(&p->layout, BS_BUF_DENSE, b, peer, &first, &count);
    bs_dev_poison(dev, p->param_buf[BS_BUF_DENSE] + first,
                  count * sizeof(uint16_t), 5 + b);
  }
  assert_true(buffer_tensors_changed(a, d0) > 0);
  /* The rank's own cast does not touch the peer's slice ... */
  assert_int_equal(bs_optimizer_cast_to_params(bs_actor_opt(a)), BS_OK);
  assert_true(buffer_tensors_changed(a, d0) > 0);
  /* ... the all-gather of the restore does. */
  assert_int_equal(bs_actor_switch_model(a, "actor"), BS_OK);
  assert_int_equal(buffer_tensors_changed(a, d0), 0);
  return BS_OK;
}

static void test_restore_relies_on_all_gather(void **state) {
  (void)state;
  tw t;
  mc_init(&t, 3, "dense");
  t.body = shard_then_gather;
  assert_int_equal(tw_run(&t), BS_OK);
  tw_free(&t);
}

/* ---- chained optimizer: each inner optimizer casts its buffer ---- */

static bs_status chained_cast(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_digest d0[TW_DIG_MAX], d[TW_DIG_MAX];
  bs_params *p = bs_actor_params(a);
  assert_int_equal(bs_optimizer_num_inner(bs_actor_opt(a)), 2);
  assert_int_equal(bs_actor_train_step(a), BS_OK);
  size_t n = tw_digests(a, d0);
  tw_poison_params(a);
  /* One rank owns every shard: the cast alone rebuilds both buffers. */
  assert_int_equal(bs_optimizer_cast_to_params(bs_actor_opt(a)), BS_OK);
  tw_digests(a, d);
  size_t seen[BS_BUF_COUNT] = {0};
  for (size_t i = 0; i < n; i++) {
    const bs_tensor *x = bs_params_find(p, bs_actor_synced_name(a, i));
    if (x->buffer < 0)
      continue;
    seen[x->buffer]++;
    assert_true(bs_digest_eq(&d0[i], &d[i]));
  }
  assert_true(seen[BS_BUF_DENSE] > 0 && seen[BS_BUF_EXPERT] > 0);
  return BS_OK;
}

static void test_chained_optimizers_each_cast(void **state) {
  (void)state;
  tw t;
  mc_init(&t, 1, "moe");
  t.body = chained_cast;
  assert_int_equal(tw_run(&t), BS_OK);
  tw_free(&t);
}

/* Three inner optimizers (two dense model chunks and the expert buffer),
 * each an HDO: one restore rebuilds every buffer bit-identically. */
static bs_status three_inner(bs_actor *a, bs_comm *c, tw *t) {
  assert_int_equal(bs_optimizer_num_inner(bs_actor_opt(a)), 3);
  for (int i = 0; i < 3; i++) {
    bs_optimizer_view v;
    assert_int_equal(bs_optimizer_view_get(bs_actor_opt(a), i, &v), BS_OK);
    assert_true(v.hdo);
    assert_int_equal(v.buf, i < 2 ? BS_BUF_DENSE : BS_BUF_EXPERT);
  }
  return round_trip(a, c, t);
}

static void test_chained_three_inner_hdo(void **state) {
  (void)state;
  tw t;
  mc_init(&t, 2, "moe");
  t.cfg.precision_aware_optimizer = t.cfg.optimizer_cpu_offload = true;
  t.cfg.check_rematerialize = true;
  t.cfg.sim.optimizer_chunks = 2;
  t.body = three_inner;
  assert_int_equal(tw_run(&t), BS_OK);
  tw_free(&t);
}

/* Precision-aware without HDO: the context refuses at once, naming the
 * inner optimizer, instead of at the first restore. */
static bs_status no_hdo_rank(bs_comm *c, void *arg) {
  bs_status st = BS_OK;
  parts x;
  bs_maincast_plan *mc = (void *)1;
  BS_CHECK(parts_open(c, arg, true, &x));
  assert_int_equal(bs_maincast_plan_create(x.p, x.opt, c, &mc),
                   BS_ERR_UNSUPPORTED);
  assert_non_null(strstr(bs_err()->message, "inner optimizer 0 (dense"));
  assert_non_null(strstr(bs_err()->message, "not a HybridDeviceOptimizer"));
  bs_err_clear();
out:
  parts_close(&x);
  return st;
}

static void test_context_refuses_non_hdo(void **state) {
  (void)state;
  run_on_preset("moe", no_hdo_rank);
}

/* ---- get(actor) ---- */

static bool expect_extra(const bs_tensor_spec *s) {
  return (s->flags & (BS_TF_FROZEN | BS_TF_FP32 | BS_TF_EXPERT_BIAS)) != 0;
}

static bs_status get_entries(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_tensor_map m = {0};
  bs_params *p = bs_actor_params(a);
  size_t extras = 0;
  assert_int_equal(bs_actor_train_step(a), BS_OK);
  assert_int_equal(bs_backuper_get(bs_actor_backuper(a), "actor", &m), BS_OK);
  assert_int_equal(m.n, bs_actor_synced_count(a));
  for (size_t i = 0; i < m.n; i++) {
    const bs_tensor *x = bs_params_find(p, m.e[i].name);
    assert_string_equal(m.e[i].name, bs_actor_synced_name(a, i));
    assert_int_equal(m.e[i].bytes, x->bytes);
    if (expect_extra(x->spec)) {
      extras++;
      assert_true(m.e[i].on_host);
      assert_false(bs_memsaver_contains(bs_actor_ms(a), m.e[i].ptr));
      void *now = malloc(x->bytes);
      assert_int_equal(
          bs_dev_copy_observe(bs_actor_dev(a), now, x->ptr, x->bytes, BS_D2H),
          BS_OK);
      assert_memory_equal(now, m.e[i].ptr, x->bytes);
      free(now);
    } else {
      assert_false(m.e[i].on_host);
      assert_ptr_equal(m.e[i].ptr, x->ptr);
    }
  }
  assert_int_equal(extras, 5); /* 2 rel_proj, router, tid2eid, expert_bias */
  bs_tensor_map_free(&m);
  return BS_OK;
}

static void test_get_live_and_pinned(void **state) {
  (void)state;
  tw t;
  mc_init(&t, 2, "frozen");
  t.body = get_entries;
  assert_int_equal(tw_run(&t), BS_OK);
  tw_free(&t);
}

/* The parser admits no param outside both classes, so the strays come
 * from the frozen-not-extras mutant: frozen params in no DDP buffer. */
#define STRAY "decoder.layers.0.self_attention.rel_proj.weight"

static bs_status stray_rank(bs_comm *c, void *arg) {
  bs_status st = BS_OK;
  parts x;
  bs_maincast_plan *mc = NULL;
  bs_backuper *b = NULL;
  bs_tensor_map out = {0};
  BS_CHECK(parts_open(c, arg, false, &x));
  BS_CHECK(bs_maincast_plan_create(x.p, x.opt, c, &mc));
  assert_int_equal(mc->nextras, 1); /* the expert_bias buffer */
  assert_int_equal(bs_maincast_plan_check_coverage(mc), BS_ERR_COVERAGE);
  assert_string_equal(bs_err()->tensor, STRAY);
  assert_non_null(strstr(bs_err()->message, "4 params are neither"));
  bs_err_clear();
  BS_CHECK(bs_backuper_maincast_create(mc, false, &b));
  /* Before any backup "actor" is listed (it can always be rebuilt), but
   * it has no snapshot: get fails. */
  const char *tags[BS_BT_COUNT];
  assert_int_equal(bs_backuper_backup_tags(b, tags, BS_BT_COUNT), 1);
  assert_string_equal(tags[0], "actor");
  assert_false(bs_backuper_has_backup(b, "actor"));
  assert_int_equal(bs_backuper_get(b, "actor", &out), BS_ERR_MISSING_BACKUP);
  assert_string_equal(bs_err()->message, "get('actor'): never backed up");
  bs_err_clear();
  BS_CHECK(bs_backuper_backup(b, "actor"));
  assert_int_equal(bs_backuper_get(b, "actor", &out), BS_ERR_COVERAGE);
  assert_string_equal(bs_err()->tensor, STRAY);
  assert_null(out.e);
  bs_err_clear();
  /* No full copy of actor to copy from. */
  assert_int_equal(bs_backuper_copy(b, "actor", "ref"), BS_ERR_UNSUPPORTED);
  bs_err_clear();
out:
  bs_backuper_destroy(b);
  bs_maincast_plan_destroy(mc);
  parts_close(&x);
  return st;
}

static void test_get_and_coverage_name_stray_tensor(void **state) {
  (void)state;
  bs_mutant_set(BS_MUT_FROZEN_NOT_EXTRAS, true);
  run_on_preset("frozen", stray_rank);
  bs_mutant_reset();
}

/* ---- the source, read afresh ---- */

/* After the step's backup (the 2nd of the run) a tensor joins or leaves
 * the source: get() sees it at once, and so does the restore's check. */
static bs_status source_changes(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  bool join = t->user != NULL;
  bs_tensor_map m = {0};
  size_t n = bs_actor_synced_count(a);
  bs_backuper *b = bs_actor_backuper(a);
  assert_int_equal(bs_actor_train_step(a), BS_OK);
  bs_status st = bs_backuper_get(b, "actor", &m);
  if (join) {
    assert_int_equal(st, BS_ERR_COVERAGE);
    assert_string_equal(bs_err()->tensor, BS_SOURCE_LATE_NAME);
    assert_string_equal(bs_err()->message,
                        "get('actor'): " BS_SOURCE_LATE_NAME " is neither in "
                        "the DDP param buffers nor in the extras backup");
  } else {
    assert_int_equal(st, BS_OK);
    assert_int_equal(m.n, n - 1);
    assert_string_equal(m.e[m.n - 1].name, bs_actor_synced_name(a, n - 2));
    bs_tensor_map_free(&m);
  }
  bs_err_clear();
  return bs_actor_switch_model(a, "actor");
}

static void expect_source_change(bool join, const char *tensor) {
  tw t;
  mc_init(&t, 2, "moe");
  t.cfg.check_rematerialize = true;
  t.body = source_changes;
  t.user = join ? &t : NULL;
  tw_arm(join ? "name=source/change,nth=2"
              : "name=source/change,nth=2,failinfo=1");
  assert_int_equal(tw_run(&t), BS_ERR_TENSOR_SET);
  tw_expect_all(&t, BS_ERR_TENSOR_SET, "changed the tensor set");
  assert_string_equal(t.err[0].tensor, tensor);
  tw_free(&t);
}

static void test_source_read_afresh(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  expect_source_change(true, BS_SOURCE_LATE_NAME);
  expect_source_change(false, "output_layer.weight");
}

/* ---- the SHA256 check ---- */

typedef struct check_log {
  int taken[3], verified[3];
  bool held[3];
  size_t changed; /* tensors off the step end after the last restore */
} check_log;

static bs_status three_cycles(bs_actor *a, bs_comm *c, tw *t) {
  check_log *log = (check_log *)t->user + bs_comm_rank(c);
  bs_restore_check *rc = bs_backuper_maincast_check(bs_actor_backuper(a));
  bs_digest d0[TW_DIG_MAX], d[TW_DIG_MAX];
  bs_status st = BS_OK;
  assert_non_null(rc);
  for (int i = 0; i < 3 && st == BS_OK; i++) {
    st = bs_actor_train_step(a);
    log->taken[i] = bs_restore_check_taken(rc);
    log->held[i] = bs_restore_check_held(rc);
    size_t n = tw_digests(a, d0);
    tw_poison_params(a);
    if (st == BS_OK)
      st = bs_actor_switch_model(a, "actor");
    log->verified[i] = bs_restore_check_verified(rc);
    tw_digests(a, d);
    log->changed = tw_ndiff(d0, d, n);
  }
  return st;
}

static void test_check_first_two_cycles_only(void **state) {
  (void)state;
  tw t;
  check_log log[2] = {0};
  mc_init(&t, 2, "frozen");
  t.cfg.check_rematerialize = true;
  t.body = three_cycles;
  t.user = log;
  assert_int_equal(tw_run(&t), BS_OK);
  for (int r = 0; r < 2; r++) {
    /* init's backup was #1 (verified by init's switch); step 1's is #2. */
    assert_int_equal(log[r].taken[0], 2);
    assert_true(log[r].held[0]);
    assert_int_equal(log[r].verified[0], 2);
    assert_int_equal(log[r].taken[1], 2);
    assert_false(log[r].held[1]);
    assert_int_equal(log[r].verified[1], 2);
    assert_int_equal(log[r].taken[2], 2);
    assert_int_equal(log[r].verified[2], 2);
  }
  tw_free(&t);
}

static void test_check_off_when_not_armed(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  tw t;
  check_log log[2] = {0};
  mc_init(&t, 2, "dense");
  t.body = three_cycles;
  t.user = log;
  /* A corrupted restore in cycle 0 goes unnoticed without the check. */
  tw_arm("name=restore/bitflip,nth=2,failinfo=14");
  assert_int_equal(tw_run(&t), BS_OK);
  for (int r = 0; r < 2; r++) {
    assert_int_equal(log[r].taken[2], 0);
    assert_int_equal(log[r].verified[2], 0);
  }
  assert_int_equal(bs_fault_log_count() > 0, true);
  tw_free(&t);
}

/* One fault in the first restore after a step (the 2nd restore overall),
 * on rank 1 only: every rank fails the restore with the record of `rank`,
 * the lowest rank that found the mismatch. */
static void expect_check_catches(const char *spec, int rank,
                                 const char *tensor) {
  tw t;
  check_log log[3] = {0};
  mc_init(&t, 3, "frozen");
  t.cfg.check_rematerialize = true;
  t.body = three_cycles;
  t.user = log;
  tw_arm(spec);
  assert_int_equal(tw_run(&t), BS_ERR_HASH_MISMATCH);
  tw_expect_all(&t, BS_ERR_HASH_MISMATCH,
                "restore is not bit-identical to the backup for 1/31 tensors "
                "(cycle 2): first ");
  assert_int_equal(t.err[0].rank, rank);
  assert_string_equal(t.err[0].phase, "restore");
  if (tensor)
    assert_string_equal(t.err[0].tensor, tensor);
  tw_free(&t);
}

static void test_check_catches_restore_bitflip(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  expect_check_catches("name=restore/bitflip,rank=1,nth=2,failinfo=14", 1,
                       "embedding.word_embeddings.weight");
}

static void test_check_catches_corrupt_extra(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  expect_check_catches("name=backup/corrupt,rank=1,nth=2,failinfo=9", 1,
                       "decoder.layers.0.self_attention.rel_proj.weight");
}

static void test_check_catches_corrupt_master(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  /* Rank 1's shard reaches every rank through the all-gather: all see it,
   * and the agreement keeps the lowest rank's record. */
  expect_check_catches("name=master/corrupt,rank=1,nth=2,failinfo=30", 0, NULL);
}

/* Two steps (two backups) with no restore between them: the second
 * step's backup is the third of the run and clears backup #2's hashes, so
 * the clean restore after it passes instead of being judged by stale ones;
 * then every restore goes unchecked. */
static bs_status two_steps_then_restore(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_restore_check *rc = bs_backuper_maincast_check(bs_actor_backuper(a));
  assert_int_equal(bs_actor_train_step(a), BS_OK);
  assert_true(bs_restore_check_held(rc));
  assert_int_equal(bs_actor_train_step(a), BS_OK);
  assert_false(bs_restore_check_held(rc));
  tw_poison_params(a);
  assert_int_equal(bs_actor_switch_model(a, "actor"), BS_OK);
  assert_int_equal(bs_restore_check_verified(rc), 1); /* init's restore only */
  return BS_OK;
}

static void test_check_third_backup_clears(void **state) {
  (void)state;
  tw t;
  mc_init(&t, 2, "moe");
  t.cfg.check_rematerialize = true;
  t.body = two_steps_then_restore;
  assert_int_equal(tw_run(&t), BS_OK);
  tw_expect_all(&t, BS_OK, NULL);
  tw_free(&t);
}

/* Init's restore and the first rebuild after a sleep, a sync and a wake-up
 * (the same backup, #1) are both checked: a master corrupted before that
 * rebuild fails it on every rank. The mutant check-window-cleared drops the
 * hashes at init's restore and lets it through. */
static bs_status first_rebuild(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_restore_check *rc = bs_backuper_maincast_check(bs_actor_backuper(a));
  assert_int_equal(bs_restore_check_verified(rc), 1);
  tw_poison_params(a);
  return bs_actor_switch_model(a, "actor");
}

static void expect_first_rebuild(bool mutant, bs_status want) {
  tw t;
  mc_init(&t, 2, "tiny");
  t.cfg.check_rematerialize = true;
  t.body = first_rebuild;
  if (mutant)
    bs_mutant_set(BS_MUT_CHECK_WINDOW_CLEARED, true);
  tw_arm("name=master/corrupt,rank=0,nth=2,failinfo=30");
  assert_int_equal(tw_run(&t), want);
  tw_expect_all(&t, want, want ? "(cycle 1)" : NULL);
  tw_free(&t);
}

static void test_check_covers_first_rebuild(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  expect_first_rebuild(false, BS_ERR_HASH_MISMATCH);
  expect_first_rebuild(true, BS_OK);
}

/* ---- other tags ---- */

/* release: "ref" leaves backup_tags with its full copy; "actor" keeps its
 * place in backup_tags but loses the pinned extras (get and restore: "never
 * backed up") until the next backup, after which a restore works again. */
static bs_status release_tags(bs_actor *a) {
  const char *tags[BS_BT_COUNT];
  bs_tensor_map m = {0};
  bs_backuper *b = bs_actor_backuper(a);
  size_t pinned = bs_dev_pinned(bs_actor_dev(a), BS_PIN_BACKUPER);
  size_t full = bs_params_synced_bytes(bs_actor_params(a));
  assert_int_equal(bs_backuper_release(b, "ref"), BS_OK);
  assert_int_equal(bs_dev_pinned(bs_actor_dev(a), BS_PIN_BACKUPER),
                   pinned - full);
  assert_int_equal(bs_backuper_backup_tags(b, tags, BS_BT_COUNT), 1);
  assert_int_equal(bs_backuper_release(b, "actor"), BS_OK);
  assert_int_equal(bs_dev_pinned(bs_actor_dev(a), BS_PIN_BACKUPER), 0);
  assert_int_equal(bs_backuper_backup_tags(b, tags, BS_BT_COUNT), 1);
  assert_string_equal(tags[0], "actor");
  assert_false(bs_backuper_has_backup(b, "actor"));
  assert_int_equal(bs_backuper_get(b, "actor", &m), BS_ERR_MISSING_BACKUP);
  assert_string_equal(bs_err()->message, "get('actor'): never backed up");
  bs_err_clear();
  assert_int_equal(bs_backuper_backup(b, "actor"), BS_OK);
  assert_true(bs_backuper_has_backup(b, "actor"));
  return bs_actor_switch_model(a, "actor");
}

static bs_status ref_then_actor(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_digest act[TW_DIG_MAX], ref[TW_DIG_MAX], d[TW_DIG_MAX];
  const char *tags[BS_BT_COUNT];
  bs_backuper *b = bs_actor_backuper(a);
  assert_int_equal(bs_backuper_backup_tags(b, tags, BS_BT_COUNT), 2);
  assert_string_equal(tags[0], "actor");
  assert_string_equal(tags[1], "ref");
  assert_int_equal(bs_actor_train_step(a), BS_OK);
  size_t n = tw_digests(a, act);
  assert_int_equal(bs_actor_switch_model(a, "ref"), BS_OK);
  assert_string_equal(bs_actor_active_tag(a), "ref");
  tw_digests(a, ref);
  /* the tid2eid table is small ints in [0, 8): it may repeat */
  assert_true(tw_ndiff(act, ref, n) >= n - 1);
  tw_poison_params(a);
  assert_int_equal(bs_actor_switch_model(a, "actor"), BS_OK);
  tw_digests(a, d);
  assert_int_equal(tw_ndiff(act, d, n), 0);
  assert_int_equal(bs_actor_switch_model(a, "ref"), BS_OK);
  tw_digests(a, d);
  assert_int_equal(tw_ndiff(ref, d, n), 0);
  assert_int_equal(bs_actor_switch_model(a, "actor"), BS_OK);
  return release_tags(a);
}

static void test_other_tags_full_copies_actor_wins(void **state) {
  (void)state;
  tw t;
  mc_init(&t, 2, "frozen");
  t.cfg.with_ref = true;
  t.body = ref_then_actor;
  assert_int_equal(tw_run(&t), BS_OK);
  tw_free(&t);
}

/* ---- HDO replay ---- */

static bs_status hdo_round_trip(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_digest d0[TW_DIG_MAX], d[TW_DIG_MAX];
  bs_optimizer_view v;
  bs_dev *dev = bs_actor_dev(a);
  assert_int_equal(bs_actor_train_step(a), BS_OK);
  assert_int_equal(bs_actor_train_step(a), BS_OK);
  assert_int_equal(bs_optimizer_view_get(bs_actor_opt(a), 0, &v), BS_OK);
  /* Both maps exist and overlap, and the overlap's device copy is stale:
   * a replay letting the device win would write other bytes. */
  assert_true(v.dev_first < v.host_n && v.host_n < v.n);
  size_t nover = v.host_n - v.dev_first, stale = 0;
  float *over = malloc(nover * sizeof *over);
  assert_int_equal(
      bs_dev_copy_observe(dev, over, v.dev, nover * sizeof *over, BS_D2H),
      BS_OK);
  for (size_t i = 0; i < nover; i++)
    stale += memcmp(&over[i], &v.host[v.dev_first + i], sizeof *over) != 0;
  free(over);
  assert_true(stale > 0);
  size_t n = tw_digests(a, d0);
  tw_poison_params(a);
  assert_int_equal(bs_actor_switch_model(a, "actor"), BS_OK);
  tw_digests(a, d);
  assert_int_equal(tw_ndiff(d0, d, n), 0);
  return BS_OK;
}

static void test_hdo_replay_both_maps_host_wins(void **state) {
  (void)state;
  tw t;
  mc_init(&t, 2, "dense");
  t.cfg.precision_aware_optimizer = true;
  t.cfg.optimizer_cpu_offload = true;
  t.body = hdo_round_trip;
  assert_int_equal(tw_run(&t), BS_OK);
  tw_free(&t);
}

/* ---- pinned budget ---- */

static size_t extras_bytes_of(const bs_model_spec *m) {
  size_t b = 0;
  for (size_t i = 0; i < m->n; i++)
    if (bs_tensor_is_synced(&m->t[i]) && expect_extra(&m->t[i]))
      b += bs_tensor_bytes(&m->t[i]);
  return b;
}

static bs_status one_step(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  return bs_actor_train_step(a);
}

static void test_pinned_bytes_are_extras_only(void **state) {
  (void)state;
  const char *presets[] = {"dense", "moe", "frozen", "tiny"};
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
    tw t;
    mc_init(&t, 2, presets[i]);
    t.body = one_step;
    assert_int_equal(tw_run(&t), BS_OK);
    size_t want = extras_bytes_of(&t.model);
    fprintf(stderr,
            "maincast %-6s: pinned backuper bytes %zu per rank (extras %zu)\n",
            presets[i], t.pinned[0], want);
    for (int r = 0; r < t.n; r++)
      assert_int_equal(t.pinned[r], want);
    tw_free(&t);
  }
}

/* ---- mutant frozen-not-extras ---- */

static void test_mutant_frozen_not_extras(void **state) {
  (void)state;
  tw t;
  mc_init(&t, 2, "frozen");
  assert_int_equal(tw_run(&t), BS_OK);
  tw_free(&t);
  mc_init(&t, 2, "frozen");
  bs_mutant_set(BS_MUT_FROZEN_NOT_EXTRAS, true);
  assert_int_equal(tw_run(&t), BS_ERR_COVERAGE);
  tw_expect_all(&t, BS_ERR_COVERAGE, "4 params are neither");
  assert_string_equal(t.err[0].tensor,
                      "decoder.layers.0.self_attention.rel_proj.weight");
  tw_free(&t);
  /* A model without frozen params is still accepted. */
  mc_init(&t, 2, "moe");
  bs_mutant_set(BS_MUT_FROZEN_NOT_EXTRAS, true);
  assert_int_equal(tw_run(&t), BS_OK);
  tw_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_poisoned),
      cmocka_unit_test(test_restore_relies_on_all_gather),
      cmocka_unit_test(test_chained_optimizers_each_cast),
      cmocka_unit_test(test_chained_three_inner_hdo),
      cmocka_unit_test(test_context_refuses_non_hdo),
      cmocka_unit_test(test_get_live_and_pinned),
      cmocka_unit_test(test_get_and_coverage_name_stray_tensor),
      cmocka_unit_test(test_source_read_afresh),
      cmocka_unit_test(test_check_first_two_cycles_only),
      cmocka_unit_test(test_check_off_when_not_armed),
      cmocka_unit_test(test_check_catches_restore_bitflip),
      cmocka_unit_test(test_check_catches_corrupt_extra),
      cmocka_unit_test(test_check_catches_corrupt_master),
      cmocka_unit_test(test_check_third_backup_clears),
      cmocka_unit_test(test_check_covers_first_rebuild),
      cmocka_unit_test(test_other_tags_full_copies_actor_wins),
      cmocka_unit_test(test_hdo_replay_both_maps_host_wins),
      cmocka_unit_test(test_pinned_bytes_are_extras_only),
      cmocka_unit_test(test_mutant_frozen_not_extras),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
