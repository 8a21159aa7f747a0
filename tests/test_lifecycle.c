/* Whole colocated RL cycles on N simulated ranks (docs/behavior.md §5, §7):
 * faults end in an agreed failure on every rank with the param buffer
 * paused and the next cycle recovers; and the done-when check of issue 4:
 * lifecycles of 3 cycles bit-identical for Normal and MainCast on the
 * dense, moe, frozen and lora presets for N = 1, 2, 3, 4, 8, with the
 * MainCast pinned bytes equal to the extras. */
#include "bs_actor_testing.h"
#include "bs_test_faults.h"
#include "bs_test_world.h"
#include "model/bs_model_parse.h"
#include "sync/bs_engine_main.h"
#include "sync/bs_sync_testing.h"

#define CYCLES 3

typedef struct traj {
  /* rank 0's weights at each step end, as the engine received them at
   * the following sync (index 0: the initial weights) */
  bs_digest step[CYCLES + 1][TW_DIG_MAX];
  size_t n;
  /* per rank: restores that were not bit-identical to the step end, and
   * the weights at the last step end */
  long bad_restore[TW_MAX];
  bs_digest last[TW_MAX][TW_DIG_MAX];
  /* phase outcomes of a fault test */
  bs_status sync_st[TW_MAX];
  bs_error sync_err[TW_MAX];
  bool paused_after_sync[TW_MAX];
} traj;

static bs_status sync_record(bs_actor *a, bs_digest *d) {
  bs_sync_result res;
  bs_status st = bs_actor_update_weights(a, &res);
  if (st == BS_OK)
    memcpy(d, res.received, res.ntensors * sizeof *d);
  bs_sync_result_free(&res);
  return st;
}

/* One cycle after init's sleep: sync, wake, restore (checked against the
 * weights just synced), train, sleep. */
static bs_status cycle(bs_actor *a, int r, traj *tj, int i) {
  bs_status st = BS_OK;
  bs_digest sent[TW_DIG_MAX], now[TW_DIG_MAX];
  BS_CHECK(sync_record(a, sent));
  BS_CHECK(bs_actor_wake_up(a));
  BS_CHECK(bs_actor_restore_for_step(a));
  size_t n = tw_digests(a, now);
  tj->bad_restore[r] += tw_ndiff(sent, now, n) > 0;
  if (r == 0) {
    memcpy(tj->step[i], sent, sizeof sent);
    tj->n = n;
  }
  BS_CHECK(bs_actor_train_step(a));
  tw_digests(a, tj->last[r]);
  BS_CHECK(bs_actor_sleep(a));
out:
  return st;
}

static bs_status lifecycle(bs_actor *a, bs_comm *c, tw *t) {
  bs_status st = BS_OK;
  traj *tj = t->user;
  int r = bs_comm_rank(c);
  bs_digest sent[TW_DIG_MAX];
  for (int i = 0; i < CYCLES; i++)
    BS_CHECK(cycle(a, r, tj, i));
  BS_CHECK(sync_record(a, sent));
  if (r == 0)
    memcpy(tj->step[CYCLES], sent, sizeof sent);
out:
  return st;
}

/* ---- the done-when matrix ---- */

typedef enum kind { NORMAL, MAINCAST, LORA_MEMSAVER } kind;

/* Every preset, Normal and MainCast; colocated LoRA (the memory-saver read
 * path) on its preset too. Each rank runs them one after the other with
 * one engine process, as a job restarted with another model would. */
static const struct {
  const char *preset;
  kind k;
} plans[] = {
    {"dense", NORMAL}, {"dense", MAINCAST}, {"moe", NORMAL},
    {"moe", MAINCAST}, {"frozen", NORMAL},  {"frozen", MAINCAST},
    {"lora", NORMAL},  {"lora", MAINCAST},  {"lora", LORA_MEMSAVER},
};
#define NPLANS (sizeof plans / sizeof plans[0])

typedef struct matrix {
  bs_model_spec model[NPLANS];
  traj tj[NPLANS];
  size_t pinned[NPLANS][TW_MAX];
} matrix;

static void plan_config(kind k, bs_config *cfg) {
  bs_config_defaults(cfg);
  cfg->rematerialize = k == MAINCAST;
  cfg->check_rematerialize = k == MAINCAST; /* as --ci-test arms it */
  cfg->lora_rank = k == LORA_MEMSAVER ? 3 : 0;
  cfg->sim.bucket_numel = 1 << 16;
}

static bs_status run_plan(bs_comm *c, matrix *m, size_t i, bs_engine *e) {
  bs_status st = BS_OK;
  bs_config cfg;
  bs_actor *a = NULL;
  tw t = {.user = &m->tj[i]};
  plan_config(plans[i].k, &cfg);
  bs_actor_opts o = {
      .cfg = &cfg, .model = &m->model[i], .seed = 7, .engine = e};
  BS_CHECK(bs_actor_init(c, &o, &a));
  BS_CHECK(lifecycle(a, c, &t));
  m->pinned[i][bs_comm_rank(c)] =
      bs_dev_pinned(bs_comm_dev(c), BS_PIN_BACKUPER);
out:
  bs_actor_destroy(a);
  return st;
}

static bs_status matrix_rank(bs_comm *c, void *arg) {
  bs_status st = BS_OK;
  matrix *m = arg;
  bs_engine *e = NULL;
  BS_CHECK(bs_engine_start(TW_SELF, NULL, bs_comm_rank(c), &e));
  for (size_t i = 0; i < NPLANS; i++)
    BS_CHECK(run_plan(c, m, i, e));
out:
  bs_engine_stop(e);
  return st;
}

static size_t extras_bytes(const bs_model_spec *m) {
  size_t b = 0;
  for (size_t i = 0; i < m->n; i++) {
    const bs_tensor_spec *s = &m->t[i];
    if (bs_tensor_is_synced(s) &&
        (s->flags & (BS_TF_FROZEN | BS_TF_FP32 | BS_TF_EXPERT_BIAS)))
      b += bs_tensor_bytes(s);
  }
  return b;
}

static void expect_same_trajectory(const traj *a, const traj *b) {
  assert_int_equal(a->n, b->n);
  for (int i = 0; i <= CYCLES; i++)
    assert_int_equal(tw_ndiff(a->step[i], b->step[i], a->n), 0);
}

static void check_plan(const matrix *m, size_t i, int n) {
  const traj *tj = &m->tj[i];
  for (int r = 0; r < n; r++) {
    assert_int_equal(tj->bad_restore[r], 0);
    /* all-gathered: every rank ends each step with rank 0's weights */
    assert_int_equal(tw_ndiff(tj->last[r], tj->last[0], tj->n), 0);
  }
  /* the weights move every step: a stuck trajectory proves nothing */
  for (int c = 0; c < CYCLES; c++)
    assert_true(tw_ndiff(tj->step[c], tj->step[c + 1], tj->n) > 0);
  if (plans[i].k == NORMAL)
    return;
  expect_same_trajectory(&m->tj[i - 1 - (plans[i].k == LORA_MEMSAVER)], tj);
  size_t want = plans[i].k == MAINCAST ? extras_bytes(&m->model[i]) : 0;
  if (n == 1)
    fprintf(stderr,
            "%-8s %-6s: pinned backuper bytes per rank %zu (extras %zu)\n",
            plans[i].k == MAINCAST ? "maincast" : "lora", plans[i].preset,
            m->pinned[i][0], want);
  for (int r = 0; r < n; r++)
    assert_int_equal(m->pinned[i][r], want);
}

static void done_when(int n) {
  static matrix m;
  bs_world *w = NULL;
  void *args[TW_MAX];
  memset(&m, 0, sizeof m);
  bs_fault_disarm_all();
  bs_mutant_reset();
  /* Scale 0.5 (every preset tensor, padding included, still there): the
   * 45 lifecycles stay well under the 2 s budget of a test on 2 cores. */
  for (size_t i = 0; i < NPLANS; i++)
    assert_int_equal(bs_model_preset(plans[i].preset, 0.5, &m.model[i]), BS_OK);
  for (int r = 0; r < n; r++)
    args[r] = &m;
  bs_status st = tw_run_fn(n, matrix_rank, args, &w);
  if (st != BS_OK)
    fail_msg("N=%d: %s: %s", n, bs_status_name(st), bs_err()->message);
  bs_world_destroy(w);
  for (size_t i = 0; i < NPLANS; i++) {
    check_plan(&m, i, n);
    bs_model_free(&m.model[i]);
  }
}

static void test_done_when_1_rank(void **state) {
  (void)state;
  done_when(1);
}

static void test_done_when_2_ranks(void **state) {
  (void)state;
  done_when(2);
}

static void test_done_when_3_ranks(void **state) {
  (void)state;
  done_when(3);
}

static void test_done_when_4_ranks(void **state) {
  (void)state;
  done_when(4);
}

static void test_done_when_8_ranks(void **state) {
  (void)state;
  done_when(8);
}

/* ---- faults: agreed failure, param buffer paused, recovery ---- */

/* Cycle 0 syncs under the fault; the driver restarts a dead engine and
 * carries on as the real job would. */
static bs_status fault_lifecycle(bs_actor *a, bs_comm *c, tw *t) {
  bs_status st = BS_OK;
  traj *tj = t->user;
  int r = bs_comm_rank(c);
  bs_digest sent[TW_DIG_MAX];
  tj->sync_st[r] = sync_record(a, sent);
  tj->paused_after_sync[r] =
      bs_memsaver_all_in_state(bs_actor_ms(a), BS_TAG_PARAM, BS_PAUSED);
  tj->sync_err[r] = *bs_err();
  if (!bs_engine_alive(bs_actor_engine(a)))
    BS_CHECK(bs_actor_restart_engine(a));
  BS_CHECK(bs_actor_wake_up(a));
  BS_CHECK(bs_actor_restore_for_step(a));
  BS_CHECK(bs_actor_train_step(a));
  BS_CHECK(bs_actor_sleep(a));
  BS_CHECK(sync_record(a, tj->last[r]));
out:
  return st;
}

static void engine_death(bool maincast) {
  tw t;
  static traj tj;
  memset(&tj, 0, sizeof tj);
  tw_init(&t, 4, "moe");
  t.cfg.offload_train = true;
  t.cfg.rematerialize = maincast;
  t.engine = true;
  t.body = fault_lifecycle;
  t.user = &tj;
  t.cfg.sim.update_buffer_bytes = 4096; /* several buckets */
  tw_arm("name=engine/send,rank=3,nth=2");
  assert_int_equal(tw_run(&t), BS_OK); /* recovered */
  for (int r = 0; r < 4; r++) {
    assert_int_equal(tj.sync_st[r], BS_ERR_ENGINE_DEAD);
    assert_memory_equal(&tj.sync_err[r], &tj.sync_err[0], sizeof(bs_error));
    assert_true(tj.paused_after_sync[r]);
    assert_int_equal(tw_ndiff(tj.last[r], tj.last[0], TW_DIG_MAX), 0);
  }
  assert_int_equal(tj.sync_err[0].rank, 3);
  assert_string_equal(tj.sync_err[0].phase, "update_weights");
  assert_non_null(strstr(tj.sync_err[0].message, "died in bucket 1"));
  tw_free(&t);
}

static void test_engine_death_agreed_normal(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  engine_death(false);
}

static void test_engine_death_agreed_maincast(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  engine_death(true);
}

static bs_status restore_after_step(bs_actor *a, bs_comm *c, tw *t) {
  bs_status st = BS_OK;
  (void)c;
  (void)t;
  bs_digest sent[TW_DIG_MAX];
  BS_CHECK(sync_record(a, sent));
  BS_CHECK(bs_actor_wake_up(a));
  BS_CHECK(bs_actor_restore_for_step(a));
  BS_CHECK(bs_actor_train_step(a));
  BS_CHECK(bs_actor_sleep(a));
  BS_CHECK(sync_record(a, sent));
  BS_CHECK(bs_actor_wake_up(a));
  BS_CHECK(bs_actor_restore_for_step(a));
out:
  return st;
}

static void test_hash_mismatch_on_one_rank_agreed(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  tw t;
  tw_init(&t, 4, "frozen");
  t.cfg.offload_train = true;
  t.cfg.rematerialize = t.cfg.check_rematerialize = true;
  t.cfg.with_ref = true;
  t.engine = true;
  t.body = restore_after_step;
  /* restore/bitflip is reached at every MainCast restore: init's is the
   * 1st, the first cycle's the 2nd. */
  tw_arm("name=restore/bitflip,rank=2,nth=3,failinfo=7");
  assert_int_equal(tw_run(&t), BS_ERR_HASH_MISMATCH);
  tw_expect_all(&t, BS_ERR_HASH_MISMATCH,
                "restore is not bit-identical to the backup for 1/31 tensors "
                "(cycle 2): first embedding.word_embeddings.weight");
  assert_int_equal(t.err[0].rank, 2);
  for (int r = 0; r < 4; r++)
    assert_int_equal(t.param_paused[r], 0); /* awake: the restore failed */
  tw_free(&t);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "engine") == 0)
    return bs_engine_main(argc - 1, argv + 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_engine_death_agreed_normal),
      cmocka_unit_test(test_engine_death_agreed_maincast),
      cmocka_unit_test(test_hash_mismatch_on_one_rank_agreed),
      cmocka_unit_test(test_done_when_1_rank),
      cmocka_unit_test(test_done_when_2_ranks),
      cmocka_unit_test(test_done_when_3_ranks),
      cmocka_unit_test(test_done_when_4_ranks),
      cmocka_unit_test(test_done_when_8_ranks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
