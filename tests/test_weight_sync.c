/* Weight sync (bs_weight_sync.h): the bucket plan, gathered buckets
 * streamed to a real engine process, the uniform-set fingerprint, and
 * local failures (engine death, a paused read) that keep the collective
 * schedule of every rank the same. */
#include "bs_test_faults.h"
#include "bs_test_world.h"

#include "model/bs_model_parse.h"
#include "sync/bs_engine_main.h"
#include "sync/bs_sync_testing.h"
#include "sync/bs_weight_sync.h"

typedef struct ws_case {
  const char *preset;
  size_t bucket_bytes;
  bool check_uniform;
  bool pause_default;  /* rank 0 syncs with "default" paused */
  bool bad_expected;   /* rank 0 claims a wrong digest for tensor 2 */
  bool short_expected; /* rank 1 has no expected digest for its last tensor */
  /* per rank */
  bs_status st[TW_MAX];
  bs_error err[TW_MAX];
  uint64_t seq[TW_MAX];
  size_t nbuckets[TW_MAX], ntensors[TW_MAX], nsynced;
  bool engine_alive[TW_MAX];
  bool received_ok[TW_MAX]; /* the engine got the expected digests */
  size_t resident_delta[TW_MAX];
} ws_case;

typedef struct ws_rank {
  bs_memsaver *ms;
  bs_params *p;
  bs_engine *e;
  bs_model_spec m;
  bs_tensor_map map;
  const bs_tensor *t[TW_DIG_MAX];
  const char *names[TW_DIG_MAX];
  bs_digest d[TW_DIG_MAX];
  size_t n;
} ws_rank;

static bs_status ws_open(bs_comm *c, const ws_case *k, ws_rank *w) {
  bs_status st = BS_OK;
  bs_dev *dev = bs_comm_dev(c);
  BS_CHECK(bs_model_preset(k->preset, 1.0, &w->m));
  BS_CHECK(bs_memsaver_create(dev, 1, &w->ms));
  BS_CHECK(
      bs_params_create(dev, w->ms, &w->m, bs_comm_size(c), 512, true, &w->p));
  BS_CHECK(bs_params_fill(w->p, 11));
  w->n = bs_params_synced(w->p, w->t, TW_DIG_MAX);
  BS_CHECK(bs_restore_check_hash(dev, NULL, w->t, w->n, w->d, NULL));
  BS_CHECK(bs_tensor_map_alloc(&w->map, w->n));
  for (size_t i = 0; i < w->n; i++) {
    w->names[i] = w->t[i]->spec->name;
    w->map.e[i] = (bs_named){.name = w->names[i],
                             .dtype = w->t[i]->spec->dtype,
                             .bytes = w->t[i]->bytes,
                             .ptr = w->t[i]->ptr};
  }
  BS_CHECK(bs_engine_start(TW_SELF, NULL, bs_comm_rank(c), &w->e));
out:
  return st;
}

static void ws_close(ws_rank *w) {
  bs_engine_stop(w->e);
  bs_tensor_map_free(&w->map);
  bs_params_destroy(w->p);
  bs_memsaver_destroy(w->ms);
  bs_model_free(&w->m);
}

static bool received_all(const ws_rank *w, const bs_sync_result *res) {
  if (res->ntensors != w->n || !res->received)
    return false;
  for (size_t i = 0; i < w->n; i++)
    if (!bs_digest_eq(&res->received[i], &w->d[i]) ||
        strcmp(res->names[i], w->names[i]) != 0)
      return false;
  return true;
}

static bs_status ws_rank_fn(bs_comm *c, void *arg) {
  ws_case *k = arg;
  ws_rank w = {0};
  bs_sync_result res = {0};
  int r = bs_comm_rank(c);
  bs_status st = ws_open(c, k, &w);
  bs_digest wrong[TW_DIG_MAX];
  memcpy(wrong, w.d, sizeof wrong);
  wrong[2].b[0] ^= 1;
  bool mine = r == 0;
  if (st == BS_OK && k->pause_default && mine)
    st = bs_memsaver_pause(w.ms, BS_TAG_DEFAULT);
  size_t resident = bs_memsaver_resident_bytes(w.ms);
  bs_ws_opts o = {.comm = c,
                  .ms = w.ms,
                  .engine = w.e,
                  .bucket_bytes = k->bucket_bytes,
                  .cycle = 1,
                  .check_uniform = k->check_uniform,
                  .expect_names = w.names,
                  .expect = k->bad_expected && mine ? wrong : w.d,
                  .nexpect = k->short_expected && r == 1 ? w.n - 1 : w.n};
  if (st == BS_OK)
    st = bs_weight_sync(&o, &w.map, &res);
  k->st[r] = st;
  k->err[r] = *bs_err();
  k->seq[r] = bs_comm_seq(c);
  k->nbuckets[r] = res.nbuckets;
  k->ntensors[r] = res.ntensors;
  if (r == 0)
    k->nsynced = w.n;
  k->received_ok[r] = received_all(&w, &res);
  k->engine_alive[r] = bs_engine_alive(w.e);
  k->resident_delta[r] = bs_memsaver_resident_bytes(w.ms) - resident;
  bs_sync_result_free(&res);
  ws_close(&w);
  return st;
}

static bs_status run_case(ws_case *k, int n) {
  bs_world *w = NULL;
  void *args[TW_MAX];
  for (int r = 0; r < n; r++)
    args[r] = k;
  bs_status st = tw_run_fn(n, ws_rank_fn, args, &w);
  bs_world_destroy(w);
  bs_fault_disarm_all();
  bs_err_clear();
  return st;
}

/* ---- the plan ---- */

static void test_bucket_plan(void **state) {
  (void)state;
  bs_named e[5] = {{.bytes = 100},
                   {.bytes = 100},
                   {.bytes = 100},
                   {.bytes = 300},
                   {.bytes = 50}};
  bs_tensor_map m = {.e = e, .n = 5};
  size_t first[6];
  assert_int_equal(bs_weight_sync_plan(&m, 5, 200, first), 4);
  size_t want[] = {0, 2, 3, 4, 5};
  assert_memory_equal(first, want, sizeof want);
  assert_int_equal(bs_weight_sync_plan(&m, 5, 1 << 20, first), 1);
  assert_int_equal(first[1], 5);
  assert_int_equal(bs_weight_sync_plan(&m, 5, 1, first), 5);
  assert_int_equal(bs_weight_sync_plan(&m, 0, 200, first), 0);
}

/* ---- a clean sync ---- */

static void test_sync_streams_every_tensor(void **state) {
  (void)state;
  ws_case k = {.preset = "tiny", .bucket_bytes = 700, .check_uniform = true};
  assert_int_equal(run_case(&k, 3), BS_OK);
  for (int r = 0; r < 3; r++) {
    assert_int_equal(k.st[r], BS_OK);
    assert_true(k.received_ok[r]);
    assert_int_equal(k.ntensors[r], k.nsynced);
    assert_true(k.nbuckets[r] > 2);
    assert_int_equal(k.nbuckets[r], k.nbuckets[0]);
    /* agreement, fingerprint, then one gather per bucket */
    assert_int_equal(k.seq[r], k.seq[0]);
    assert_int_equal(k.resident_delta[r], 0); /* gather buffer freed */
  }
  /* A budget above the whole set: one bucket. */
  ws_case one = {.preset = "tiny", .bucket_bytes = 1 << 20};
  assert_int_equal(run_case(&one, 2), BS_OK);
  assert_int_equal(one.nbuckets[0], 1);
  assert_true(one.received_ok[1]);
  assert_true(k.seq[0] > one.seq[0]);
}

/* ---- a divergent tensor set ---- */

static void test_tensor_set_fault_agreed(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  ws_case k = {.preset = "tiny", .bucket_bytes = 700, .check_uniform = true};
  tw_arm("name=sync/tensor_set,rank=1");
  assert_int_equal(run_case(&k, 3), BS_ERR_TENSOR_SET);
  for (int r = 0; r < 3; r++) {
    assert_int_equal(k.st[r], BS_ERR_TENSOR_SET);
    assert_non_null(strstr(k.err[r].message, "rank 1 has sha256"));
    assert_int_equal(k.seq[r], k.seq[0]); /* no bucket was gathered */
    assert_int_equal(k.nbuckets[r], 0);
    assert_true(k.engine_alive[r]);
  }
}

/* The same tensor dropped on every rank: the fingerprint matches, the
 * check against the model's set does not, on every rank alike, before any
 * bucket reaches the engine (issue 13). */
static void test_uniform_drop_caught(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  ws_case k = {.preset = "tiny", .bucket_bytes = 700, .check_uniform = true};
  tw_arm("name=sync/tensor_set");
  assert_int_equal(run_case(&k, 2), BS_ERR_TENSOR_SET);
  for (int r = 0; r < 2; r++) {
    assert_int_equal(k.st[r], BS_ERR_TENSOR_SET);
    assert_non_null(strstr(k.err[r].message, "of the model's"));
    assert_int_equal(k.ntensors[r], 0);
    assert_int_equal(k.nbuckets[r], 0);
  }
  assert_string_equal(k.err[0].tensor, k.err[1].tensor);
  assert_int_equal(k.seq[0], k.seq[1]);
}

/* Without the fingerprint the divergence reaches the bucket gathers: the
 * communicator contains it (desync), nobody hangs. */
static void test_tensor_set_fault_unchecked_is_contained(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  ws_case k = {.preset = "tiny", .bucket_bytes = 1 << 20};
  tw_arm("name=sync/tensor_set,rank=0");
  bs_status st = run_case(&k, 2);
  assert_int_not_equal(st, BS_OK);
  for (int r = 0; r < 2; r++)
    assert_int_not_equal(k.st[r], BS_OK);
  assert_int_equal(k.st[0], k.st[1]);
}

/* ---- local failures keep the schedule ---- */

static void test_engine_death_keeps_gathering(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  ws_case k = {.preset = "tiny", .bucket_bytes = 700, .check_uniform = true};
  tw_arm("name=engine/send,rank=1,nth=2");
  assert_int_equal(run_case(&k, 3), BS_ERR_ENGINE_DEAD);
  assert_int_equal(k.st[1], BS_ERR_ENGINE_DEAD);
  assert_non_null(strstr(k.err[1].message, "in bucket 1"));
  assert_false(k.engine_alive[1]);
  for (int r = 0; r < 3; r++) {
    assert_int_equal(k.seq[r], k.seq[0]); /* rank 1 gathered every bucket */
    if (r != 1) {
      assert_int_equal(k.st[r], BS_OK);
      assert_true(k.received_ok[r]);
    }
  }
}

static void test_paused_read_is_contained(void **state) {
  (void)state;
  ws_case k = {.preset = "tiny",
               .bucket_bytes = 700,
               .check_uniform = true,
               .pause_default = true};
  size_t traps = bs_trap_count();
  assert_int_equal(run_case(&k, 2), BS_ERR_PAUSED_READ);
  assert_int_equal(k.st[0], BS_ERR_PAUSED_READ);
  assert_non_null(strstr(k.err[0].message, "read of paused allocation "
                                           "default"));
  assert_int_equal(k.st[1], BS_OK);
  assert_int_equal(k.seq[0], k.seq[1]);
  assert_int_equal(k.resident_delta[0], 0);
  assert_true(k.engine_alive[0]); /* its update was closed, not cut */
  assert_true(bs_trap_count() > traps);
}

/* A rank that cannot prepare its sync never reaches the fingerprint or a
 * gather: its failure is agreed first, so no peer waits for it. */
static void test_prepare_failure_agreed(void **state) {
  (void)state;
  ws_case k = {.preset = "tiny", .bucket_bytes = 700, .check_uniform = true};
  k.short_expected = true;
  assert_int_equal(run_case(&k, 3), BS_ERR_INVALID);
  for (int r = 0; r < 3; r++) {
    assert_int_equal(k.st[r], BS_ERR_INVALID);
    assert_memory_equal(&k.err[r], &k.err[1], sizeof k.err[r]);
    assert_int_equal(k.seq[r], k.seq[0]);
    assert_int_equal(k.nbuckets[r], 0);
  }
  assert_int_equal(k.err[0].rank, 1);
  assert_non_null(strstr(k.err[0].message, "no expected digest for tensor"));
}

static void test_engine_checks_expected_digests(void **state) {
  (void)state;
  ws_case k = {.preset = "tiny", .bucket_bytes = 700, .bad_expected = true};
  assert_int_equal(run_case(&k, 2), BS_ERR_ENGINE_VERIFY);
  assert_int_equal(k.st[0], BS_ERR_ENGINE_VERIFY);
  assert_non_null(
      strstr(k.err[0].message, "1/9 received tensors do not match"));
  assert_int_equal(k.st[1], BS_OK);
}

static void test_bad_input(void **state) {
  (void)state;
  bs_tensor_map m = {0};
  bs_ws_opts o = {.bucket_bytes = 8};
  assert_int_equal(bs_weight_sync(&o, &m, NULL), BS_ERR_INVALID);
  bs_err_clear();
  assert_int_equal(bs_weight_sync(NULL, &m, NULL), BS_ERR_INVALID);
  bs_err_clear();
  ws_case k = {.preset = "tiny", .bucket_bytes = 0};
  assert_int_equal(run_case(&k, 1), BS_ERR_INVALID);
  assert_non_null(strstr(k.err[0].message, "bucket budget of 0 bytes"));
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "engine") == 0)
    return bs_engine_main(argc - 1, argv + 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bucket_plan),
      cmocka_unit_test(test_sync_streams_every_tensor),
      cmocka_unit_test(test_tensor_set_fault_agreed),
      cmocka_unit_test(test_uniform_drop_caught),
      cmocka_unit_test(test_tensor_set_fault_unchecked_is_contained),
      cmocka_unit_test(test_engine_death_keeps_gathering),
      cmocka_unit_test(test_paused_read_is_contained),
      cmocka_unit_test(test_prepare_failure_agreed),
      cmocka_unit_test(test_engine_checks_expected_digests),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
