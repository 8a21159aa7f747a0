/* The actor lifecycle (docs/behavior.md §5): sleep/wake idempotence, the
 * always-restoring switch_model, get_actor_weights' three sources, and the
 * mutant switches of §8, one test each (frozen-not-extras is in
 * test_maincast.c), each showing the fixed behaviour next to the mutant's. */
#include "bs_actor_testing.h"
#include "bs_test_faults.h"
#include "bs_test_world.h"
#include "sync/bs_engine_main.h"

#include <time.h>

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A colocated, offloaded job: the actor is asleep after init. */
static void job(tw *t, int n, const char *preset, bool maincast) {
  tw_init(t, n, preset);
  t->cfg.offload_train = true;
  t->cfg.rematerialize = maincast;
  t->engine = true;
}

static bool all_paused(bs_actor *a, const char *tag) {
  return bs_memsaver_all_in_state(bs_actor_ms(a), tag, BS_PAUSED);
}

static bool all_active(bs_actor *a) {
  return bs_memsaver_all_in_state(bs_actor_ms(a), NULL, BS_ACTIVE);
}

/* Digests the engine received at the last sync (what the weights were at
 * the last step end: the engine checked them against the trainer's). */
typedef struct sync_log {
  bs_digest d[TW_MAX][TW_DIG_MAX];
} sync_log;

static bs_status sync_into(bs_actor *a, bs_digest *d) {
  bs_sync_result res;
  bs_status st = bs_actor_update_weights(a, &res);
  if (st == BS_OK) {
    assert_int_equal(res.ntensors, bs_actor_synced_count(a));
    memcpy(d, res.received, res.ntensors * sizeof *d);
  }
  bs_sync_result_free(&res);
  return st;
}

/* ---- sleep / wake ---- */

static bs_status sleep_wake(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  bool mc = t->cfg.rematerialize;
  assert_true(bs_actor_asleep(a));
  assert_true(all_paused(a, BS_TAG_DEFAULT) && all_paused(a, BS_TAG_GRAD));
  /* MainCast keeps the param buffer for the sync; Normal drops it. */
  assert_true(all_paused(a, BS_TAG_PARAM) != mc);
  assert_int_equal(bs_actor_sleep(a), BS_OK);
  assert_true(all_paused(a, BS_TAG_PARAM) != mc);
  bs_digest d[TW_DIG_MAX];
  assert_int_equal(sync_into(a, d), BS_OK);
  assert_true(all_paused(a, NULL));
  assert_int_equal(bs_actor_wake_up(a), BS_OK);
  assert_false(bs_actor_asleep(a));
  assert_true(all_active(a));
  assert_int_equal(bs_actor_wake_up(a), BS_OK);
  assert_true(all_active(a));
  assert_int_equal(bs_actor_sleep(a), BS_OK);
  assert_true(bs_actor_asleep(a));
  assert_true(all_paused(a, BS_TAG_GRAD));
  return BS_OK;
}

static void test_sleep_wake_idempotent(void **state) {
  (void)state;
  for (int mc = 0; mc < 2; mc++) {
    tw t;
    job(&t, 2, "tiny", mc);
    t.body = sleep_wake;
    assert_int_equal(tw_run(&t), BS_OK);
    tw_free(&t);
  }
}

/* ---- switch_model ---- */

static bs_status wake_then_switch(bs_actor *a, bs_comm *c, tw *t) {
  bs_status st = BS_OK;
  sync_log *log = t->user;
  int r = bs_comm_rank(c);
  bs_digest d[TW_DIG_MAX];
  BS_CHECK(sync_into(a, log->d[r]));
  BS_CHECK(bs_actor_wake_up(a));
  assert_string_equal(bs_actor_active_tag(a), "actor");
  size_t n = tw_digests(a, d);
  /* No host backup of the param buffer: garbage after the resume. */
  assert_true(tw_ndiff(log->d[r], d, n) > 0);
  BS_CHECK(bs_actor_switch_model(a, "actor"));
  tw_digests(a, d);
  t->out[r] = (long)tw_ndiff(log->d[r], d, n); /* tensors still off */
out:
  return st;
}

static void test_switch_model_restores_active_tag(void **state) {
  (void)state;
  tw t;
  sync_log log;
  job(&t, 2, "moe", true);
  t.body = wake_then_switch;
  t.user = &log;
  assert_int_equal(tw_run(&t), BS_OK);
  assert_int_equal(t.out[0] + t.out[1], 0);
  tw_free(&t);
}

static bs_status unknown_tag(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_status st = bs_actor_switch_model(a, "critic");
  assert_int_equal(st, BS_ERR_INVALID);
  assert_string_equal(bs_err()->message,
                      "Cannot switch to unknown model tag: critic");
  assert_string_equal(bs_actor_active_tag(a), "actor");
  /* Nothing was touched: the actor trains on. */
  bs_error e = *bs_err();
  assert_int_equal(bs_actor_train_step(a), BS_OK);
  *bs_err() = e;
  return st;
}

static void test_unknown_tag_rejected(void **state) {
  (void)state;
  tw t;
  tw_init(&t, 3, "tiny");
  t.body = unknown_tag;
  assert_int_equal(tw_run(&t), BS_ERR_INVALID);
  tw_expect_all(&t, BS_ERR_INVALID, "unknown model tag: critic");
  tw_free(&t);
}

/* switch_model checks backup_tags: "ref" is a tag name but holds no
 * snapshot until backed up, and none again once released. */
static bs_status tag_not_backed_up(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_backuper *b = bs_actor_backuper(a);
  assert_int_equal(bs_actor_switch_model(a, "ref"), BS_ERR_MISSING_BACKUP);
  assert_string_equal(bs_err()->message,
                      "Cannot switch to unknown model tag: ref");
  assert_string_equal(bs_actor_active_tag(a), "actor");
  bs_err_clear();
  assert_int_equal(bs_backuper_backup(b, "ref"), BS_OK);
  assert_int_equal(bs_actor_switch_model(a, "ref"), BS_OK);
  assert_string_equal(bs_actor_active_tag(a), "ref");
  assert_int_equal(bs_actor_switch_model(a, "actor"), BS_OK);
  assert_int_equal(bs_backuper_release(b, "ref"), BS_OK);
  return bs_actor_switch_model(a, "ref");
}

static void test_switch_checks_backup_tags(void **state) {
  (void)state;
  tw t;
  tw_init(&t, 2, "tiny");
  t.body = tag_not_backed_up;
  assert_int_equal(tw_run(&t), BS_ERR_MISSING_BACKUP);
  tw_expect_all(&t, BS_ERR_MISSING_BACKUP,
                "Cannot switch to unknown model tag: ref");
  tw_free(&t);
}

/* Asleep, the params are paused: a restore must be refused, not fault. */
static bs_status switch_asleep(void *arg) {
  return bs_actor_switch_model(arg, "actor");
}

static bs_status switch_while_asleep(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  assert_true(bs_actor_asleep(a));
  return bs_trap_run(switch_asleep, a);
}

static void test_switch_while_asleep_rejected(void **state) {
  (void)state;
  for (int mc = 0; mc < 2; mc++) {
    tw t;
    job(&t, 2, "tiny", mc);
    t.engine = false;
    t.body = switch_while_asleep;
    size_t traps = bs_trap_count();
    assert_int_equal(tw_run(&t), BS_ERR_STATE);
    /* No groups while asleep: each rank refuses on its own, alike. */
    for (int r = 0; r < t.n; r++) {
      assert_int_equal(t.st[r], BS_ERR_STATE);
      assert_int_equal(t.err[r].rank, r);
      assert_non_null(strstr(t.err[r].message, "while asleep: wake_up first"));
    }
    assert_int_equal(bs_trap_count(), traps);
    tw_free(&t);
  }
}

/* ---- get_actor_weights ---- */

static size_t count_on_host(const bs_tensor_map *m) {
  size_t k = 0;
  for (size_t i = 0; i < m->n; i++)
    k += m->e[i].on_host;
  return k;
}

static bs_status asleep_reads_host(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_tensor_map m = {0};
  bs_digest d[TW_DIG_MAX];
  assert_true(bs_actor_asleep(a));
  assert_int_equal(bs_actor_get_weights(a, &m), BS_OK);
  assert_int_equal(count_on_host(&m), m.n);
  bs_tensor_map_free(&m);
  assert_int_equal(sync_into(a, d), BS_OK);
  /* Awake, not colocated, actor active: the live tensors. */
  assert_int_equal(bs_actor_wake_up(a), BS_OK);
  assert_int_equal(bs_actor_restore_for_step(a), BS_OK);
  assert_int_equal(bs_actor_get_weights(a, &m), BS_OK);
  assert_int_equal(count_on_host(&m), 0);
  assert_ptr_equal(m.e[0].ptr, bs_actor_params(a)->t[0].ptr);
  bs_tensor_map_free(&m);
  return BS_OK;
}

static void test_asleep_sync_reads_host_copies(void **state) {
  (void)state;
  tw t;
  job(&t, 2, "dense", false);
  t.cfg.colocate = false; /* disaggregated: only sleep sends it to host */
  t.body = asleep_reads_host;
  assert_int_equal(tw_run(&t), BS_OK);
  tw_free(&t);
}

static bs_status lora_views(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_tensor_map m = {0};
  bs_digest sent[TW_DIG_MAX], d[TW_DIG_MAX];
  bs_params *p = bs_actor_params(a);
  assert_false(all_paused(a, BS_TAG_PARAM)); /* adapters stay readable */
  assert_int_equal(bs_actor_get_weights(a, &m), BS_OK);
  for (size_t i = 0; i < m.n; i++) {
    const bs_tensor *x = bs_params_find(p, m.e[i].name);
    bool frozen = x->spec->flags & BS_TF_FROZEN;
    assert_int_equal(m.e[i].on_host, frozen);
    /* host views into the memory saver's backup, never a second copy */
    assert_true(frozen ? m.e[i].ptr != x->ptr : m.e[i].ptr == x->ptr);
  }
  bs_tensor_map_free(&m);
  assert_int_equal(sync_into(a, sent), BS_OK);
  assert_int_equal(bs_actor_wake_up(a), BS_OK);
  assert_int_equal(bs_actor_restore_for_step(a), BS_OK);
  size_t n = tw_digests(a, d);
  assert_int_equal(tw_ndiff(sent, d, n), 0);
  return bs_actor_train_step(a);
}

static void test_lora_reads_memory_saver(void **state) {
  (void)state;
  tw t;
  job(&t, 2, "lora", false);
  t.cfg.lora_rank = 3;
  t.body = lora_views;
  assert_int_equal(tw_run(&t), BS_OK);
  for (int r = 0; r < 2; r++)
    assert_int_equal(t.pinned[r], 0);
  tw_free(&t);
}

/* ---- agreement and observation ---- */

/* A copy of the cpu-backed regions fails on rank 1 only, inside sleep. */
static bs_status sleep_in_cycle_1(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_fault_set_cycle(1);
  return bs_actor_sleep(a);
}

static void test_sleep_failure_agreed(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  tw t;
  tw_init(&t, 2, "tiny");
  t.body = sleep_in_cycle_1;
  tw_arm("name=copy/fail,rank=1,cycle=1");
  assert_int_equal(tw_run(&t), BS_ERR_COPY);
  /* rank 0's sleep went fine, yet it fails with rank 1's record */
  tw_expect_all(&t, BS_ERR_COPY, "fault copy/fail");
  assert_int_equal(t.err[0].rank, 1);
  assert_string_equal(t.err[0].phase, "sleep");
  tw_free(&t);
}

/* Digests taken for an oracle must neither fire nor use up a fault: the
 * same armed copy/fail then fails the core's own read. */
static bs_status observe_then_sleep(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  bs_digest d[TW_DIG_MAX];
  size_t npaused = 0;
  bs_fault_set_cycle(1);
  /* recorded, not asserted: an assert must not unwind a rank thread */
  t->out[0] = bs_actor_live_digests(a, d, TW_DIG_MAX, &npaused);
  t->out[1] = (long)bs_fault_log_count();
  return bs_actor_sleep(a);
}

static void test_observer_digests_fire_no_fault(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  tw t;
  tw_init(&t, 1, "tiny");
  t.body = observe_then_sleep;
  tw_arm("name=copy/fail,cycle=1,nth=1");
  bs_fault_log_reset();
  assert_int_equal(tw_run(&t), BS_ERR_COPY);
  assert_int_equal(t.out[0], BS_OK);
  assert_int_equal(t.out[1], 0);
  assert_int_equal(bs_fault_log_count(), 1);
  tw_free(&t);
}

/* ---- mutants ---- */

/* pause-not-in-finally: an engine death in update_weights. */
static bs_status death_then_wake(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_digest d[TW_DIG_MAX];
  bs_status st = sync_into(a, d);
  assert_int_equal(st, BS_ERR_ENGINE_DEAD);
  t->out[bs_comm_rank(c)] = all_paused(a, BS_TAG_PARAM);
  assert_int_equal(bs_actor_restart_engine(a), BS_OK);
  return bs_actor_wake_up(a);
}

static void test_mutant_pause_not_in_finally(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  for (int mutant = 0; mutant < 2; mutant++) {
    tw t;
    job(&t, 2, "tiny", true);
    t.body = death_then_wake;
    tw_arm("name=engine/send,rank=1,nth=1");
    bs_mutant_set(BS_MUT_PAUSE_NOT_IN_FINALLY, mutant);
    bs_status st = tw_run(&t);
    if (!mutant) {
      assert_int_equal(st, BS_OK);
      for (int r = 0; r < 2; r++)
        assert_int_equal(t.out[r], 1);
    } else {
      for (int r = 0; r < 2; r++)
        assert_int_equal(t.out[r], 0);
      /* resident after the failure, then the strict resume ends both
       * ranks' processes, as the library's exit(1) does */
      for (int r = 0; r < 2; r++) {
        assert_int_equal(t.st[r], BS_ERR_FATAL);
        assert_int_equal(t.err[r].rank, r); /* each its own death */
        assert_non_null(strstr(t.err[r].message,
                               "Cannot resume allocation that is not paused."));
      }
    }
    tw_free(&t);
  }
}

/* local-hash-raise: a mismatch found on rank 1 only. */
static bs_status step_and_restore(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_status st = bs_actor_wake_up(a);
  if (st == BS_OK)
    st = bs_actor_train_step(a);
  if (st == BS_OK)
    st = bs_actor_restore_for_step(a);
  return st;
}

static void test_mutant_local_hash_raise(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  for (int mutant = 0; mutant < 2; mutant++) {
    tw t;
    tw_init(&t, 3, "tiny");
    t.cfg.rematerialize = t.cfg.check_rematerialize = true;
    t.body = step_and_restore;
    tw_arm("name=restore/bitflip,rank=1,nth=2,failinfo=3");
    bs_mutant_set(BS_MUT_LOCAL_HASH_RAISE, mutant);
    double t0 = now_ms();
    tw_run(&t);
    assert_true(now_ms() - t0 < 2000.0); /* contained, not timed out */
    if (!mutant) {
      tw_expect_all(&t, BS_ERR_HASH_MISMATCH, "not bit-identical");
    } else {
      /* rank 1 raised alone; its peers were left in the agreement */
      assert_int_equal(t.st[1], BS_ERR_HASH_MISMATCH);
      for (int r = 0; r < 3; r += 2)
        assert_true(t.st[r] == BS_ERR_RANK_DEAD || t.st[r] == BS_ERR_DESYNC ||
                    t.st[r] == BS_ERR_ABORTED);
      assert_true(bs_world_report(t.w)[0] != '\0');
    }
    tw_free(&t);
  }
}

/* skip-frozen-backup: rank-dependent tensor sets reach the gathers. */
static bs_status one_sync(bs_actor *a, bs_comm *c, tw *t) {
  (void)c;
  (void)t;
  bs_digest d[TW_DIG_MAX];
  return sync_into(a, d);
}

static void test_mutant_skip_frozen_backup(void **state) {
  (void)state;
  for (int mutant = 0; mutant < 2; mutant++) {
    tw t;
    job(&t, 2, "frozen", false);
    t.body = one_sync;
    bs_mutant_set(BS_MUT_SKIP_FROZEN_BACKUP, mutant);
    bs_status st = tw_run(&t);
    if (!mutant) {
      assert_int_equal(st, BS_OK);
    } else {
      /* no fingerprint on this path: the collectives see the divergence */
      assert_true(st == BS_ERR_DESYNC || st == BS_ERR_ABORTED);
      assert_int_not_equal(t.st[0], BS_OK);
      assert_int_not_equal(t.st[1], BS_OK);
      assert_non_null(strstr(bs_world_report(t.w), "all_gather"));
    }
    tw_free(&t);
  }
}

/* same-tag-skip: the rebuild after the wake-up does not happen. */
static void test_mutant_same_tag_skip(void **state) {
  (void)state;
  for (int mutant = 0; mutant < 2; mutant++) {
    tw t;
    sync_log log;
    job(&t, 2, "dense", true);
    t.body = wake_then_switch;
    t.user = &log;
    bs_mutant_set(BS_MUT_SAME_TAG_SKIP, mutant);
    assert_int_equal(tw_run(&t), BS_OK);
    for (int r = 0; r < 2; r++)
      assert_true(mutant ? t.out[r] > 0 : t.out[r] == 0);
    tw_free(&t);
  }
}

/* asleep-reads-device: a disaggregated, offloaded trainer syncs asleep. */
static void test_mutant_asleep_reads_device(void **state) {
  (void)state;
  for (int mutant = 0; mutant < 2; mutant++) {
    tw t;
    job(&t, 2, "tiny", false);
    t.cfg.colocate = false;
    t.body = one_sync;
    bs_mutant_set(BS_MUT_ASLEEP_READS_DEVICE, mutant);
    size_t traps = bs_trap_count();
    bs_status st = tw_run(&t);
    if (!mutant) {
      assert_int_equal(st, BS_OK);
      assert_int_equal(bs_trap_count(), traps);
    } else {
      tw_expect_all(&t, BS_ERR_PAUSED_READ, "read of paused allocation");
      assert_true(bs_trap_count() > traps);
    }
    tw_free(&t);
  }
}

/* offload-drops-backup: offloaded, not colocated, no ref/teacher. */
static bs_status kind_then_sync(bs_actor *a, bs_comm *c, tw *t) {
  if (bs_comm_rank(c) == 0)
    *(const char **)t->user = bs_actor_backuper_kind(a);
  return one_sync(a, c, t);
}

static void test_mutant_offload_drops_backup(void **state) {
  (void)state;
  for (int mutant = 0; mutant < 2; mutant++) {
    tw t;
    const char *kind = NULL;
    job(&t, 2, "tiny", false);
    t.cfg.colocate = false;
    t.body = kind_then_sync;
    t.user = &kind;
    bs_mutant_set(BS_MUT_OFFLOAD_DROPS_BACKUP, mutant);
    bs_status st = tw_run(&t);
    assert_string_equal(kind, mutant ? "none" : "normal");
    if (!mutant)
      assert_int_equal(st, BS_OK);
    else
      tw_expect_all(&t, BS_ERR_MISSING_BACKUP, "keeps no weight backup");
    tw_free(&t);
  }
}

/* lora-double-backup: colocated LoRA keeps a pinned copy anyway. */
static void test_mutant_lora_double_backup(void **state) {
  (void)state;
  for (int mutant = 0; mutant < 2; mutant++) {
    tw t;
    job(&t, 2, "lora", false);
    t.cfg.lora_rank = 3;
    t.body = one_sync;
    bs_mutant_set(BS_MUT_LORA_DOUBLE_BACKUP, mutant);
    assert_int_equal(tw_run(&t), BS_OK);
    size_t synced = 0;
    for (size_t i = 0; i < t.model.n; i++)
      if (bs_tensor_is_synced(&t.model.t[i]))
        synced += bs_tensor_bytes(&t.model.t[i]);
    for (int r = 0; r < 2; r++)
      assert_int_equal(t.pinned[r], mutant ? synced : 0);
    tw_free(&t);
  }
}

/* disk-offload-accepted: the validation gap. */
static void test_mutant_disk_offload_accepted(void **state) {
  (void)state;
  for (int mutant = 0; mutant < 2; mutant++) {
    bs_config cfg;
    bs_config_defaults(&cfg);
    cfg.rematerialize = true;
    cfg.offload_target = BS_OFFLOAD_DISK;
    bs_mutants m = {0};
    if (mutant)
      m = bs_mutant_with(m, BS_MUT_DISK_OFFLOAD_ACCEPTED);
    bs_status st = bs_config_validate(&cfg, m);
    assert_int_equal(st, mutant ? BS_OK : BS_ERR_CONFIG);
    if (!mutant)
      assert_non_null(strstr(bs_err()->message, "offload-train-target disk"));
    bs_err_clear();
  }
}

/* ---- a rank that ended, an actor that failed ---- */

/* Every later call of every kind, each answering with want and the record
 * the rank ended on; returns how many did. */
static long later_calls(bs_actor *a, bs_status want, const bs_error *rec) {
  bs_tensor_map m = {0};
  bs_sync_result res;
  bs_status got[] = {
      bs_actor_sleep(a),
      bs_actor_wake_up(a),
      bs_actor_switch_model(a, "actor"),
      bs_actor_restore_for_step(a),
      bs_actor_get_weights(a, &m),
      bs_actor_train_step(a),
      bs_actor_update_weights(a, &res),
      bs_actor_restart_engine(a),
  };
  long same = 0;
  for (size_t i = 0; i < sizeof got / sizeof got[0]; i++)
    same += got[i] == want && !strcmp(bs_err()->message, rec->message);
  bs_tensor_map_free(&m);
  bs_sync_result_free(&res);
  return same;
}

/* Rank 1's wake-up finds no memory: the library ends its process. */
static bs_status wake_then_all_calls(bs_actor *a, bs_comm *c, tw *t) {
  bs_status st = bs_actor_wake_up(a);
  bs_error rec = *bs_err();
  if (bs_comm_rank(c) == 1)
    t->out[1] = st == BS_ERR_FATAL ? later_calls(a, BS_ERR_FATAL, &rec) : -1;
  *bs_err() = rec;
  return st;
}

/* docs/behavior.md §2, bs_actor.h: a rank that has ended answers every later
 * call with the same fatal error; nothing on it runs again (sleep used to
 * return ok, switch_model bad-state, get_actor_weights tensors). */
static void test_dead_rank_answers_fatal(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  tw t;
  job(&t, 2, "tiny", false);
  t.body = wake_then_all_calls;
  tw_arm("name=region/resume,rank=1,nth=1");
  tw_run(&t);
  assert_int_equal(t.st[1], BS_ERR_FATAL);
  assert_non_null(strstr(t.err[1].message, "out of memory"));
  assert_int_equal(t.st[0], BS_ERR_RANK_DEAD);
  assert_int_equal(t.out[1], 8);
  tw_free(&t);
}

/* A restore the check rejects, then every later call: the actor is
 * failed (miles raises and the job ends), so train_step does not run on
 * the rejected weights. */
static bs_status rejected_then_all_calls(bs_actor *a, bs_comm *c, tw *t) {
  bs_status st = step_and_restore(a, c, t);
  bs_error rec = *bs_err();
  if (st == BS_ERR_HASH_MISMATCH)
    t->out[bs_comm_rank(c)] = later_calls(a, st, &rec);
  *bs_err() = rec;
  return st;
}

static void test_rejected_restore_fails_actor(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  tw t;
  tw_init(&t, 2, "tiny");
  t.cfg.rematerialize = t.cfg.check_rematerialize = true;
  t.engine = true;
  t.body = rejected_then_all_calls;
  tw_arm("name=restore/bitflip,rank=1,nth=2,failinfo=3");
  tw_run(&t);
  tw_expect_all(&t, BS_ERR_HASH_MISMATCH, "not bit-identical");
  for (int r = 0; r < 2; r++)
    assert_int_equal(t.out[r], 8);
  tw_free(&t);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "engine") == 0)
    return bs_engine_main(argc - 1, argv + 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sleep_wake_idempotent),
      cmocka_unit_test(test_switch_model_restores_active_tag),
      cmocka_unit_test(test_switch_checks_backup_tags),
      cmocka_unit_test(test_unknown_tag_rejected),
      cmocka_unit_test(test_switch_while_asleep_rejected),
      cmocka_unit_test(test_asleep_sync_reads_host_copies),
      cmocka_unit_test(test_lora_reads_memory_saver),
      cmocka_unit_test(test_sleep_failure_agreed),
      cmocka_unit_test(test_observer_digests_fire_no_fault),
      cmocka_unit_test(test_mutant_pause_not_in_finally),
      cmocka_unit_test(test_mutant_local_hash_raise),
      cmocka_unit_test(test_mutant_skip_frozen_backup),
      cmocka_unit_test(test_mutant_same_tag_skip),
      cmocka_unit_test(test_mutant_asleep_reads_device),
      cmocka_unit_test(test_mutant_offload_drops_backup),
      cmocka_unit_test(test_mutant_lora_double_backup),
      cmocka_unit_test(test_mutant_disk_offload_accepted),
      cmocka_unit_test(test_dead_rank_answers_fatal),
      cmocka_unit_test(test_rejected_restore_fails_actor),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
