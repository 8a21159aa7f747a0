/* Each oracle on synthetic run records: one record that holds the
 * invariant and one that breaks it, the detail naming rank and phase. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_vec.h"
#include "oracles/bs_oracle.h"

static bs_record rec;
static char detail[BS_DETAIL_MAX];

static void mk(int nranks) {
  assert_int_equal(bs_record_init(&rec, nranks, 3), BS_OK);
  for (int k = 0; k < nranks; k++)
    rec.rank[k].returned = true;
}

static int teardown(void **state) {
  (void)state;
  bs_record_free(&rec);
  bs_err_clear();
  return 0;
}

static bs_event *ev(int rank, const char *phase, int cycle, bs_status st) {
  bs_err_clear();
  bs_event *e = bs_record_begin(&rec, rank, phase, cycle);
  assert_non_null(e);
  if (st != BS_OK)
    bs_err_fail(st, "w0", "injected %s", bs_status_name(st));
  bs_record_end(&rec, rank, st);
  bs_err_clear();
  return e;
}

/* The same phase with the same status on every rank. */
static void all(const char *phase, int cycle, bs_status st) {
  for (int k = 0; k < rec.nranks; k++)
    ev(k, phase, cycle, st);
}

static void fired(const char *point, int rank, int cycle) {
  bs_fault_fired f = {.point = bs_fault_catalogue_find(point)->id,
                      .rank = rank,
                      .cycle = cycle};
  assert_int_equal(
      bs_vec_push(&rec.fired, &rec.nfired, NULL, &f, sizeof f, "fired"), BS_OK);
}

#define HAS(s) assert_non_null(strstr(detail, (s)))

static void test_liveness(void **state) {
  (void)state;
  mk(3);
  all("init", 0, BS_OK);
  assert_true(bs_oracle_liveness(&rec, detail, sizeof detail));
  HAS("all 3 ranks returned");
  rec.rank[2].returned = false;
  ev(2, "update_weights", 0, BS_OK)->t1_ms = -1;
  assert_false(bs_oracle_liveness(&rec, detail, sizeof detail));
  HAS("rank 2 never returned");
  HAS("update_weights");
}

static void test_agreement(void **state) {
  (void)state;
  mk(4);
  all("init", 0, BS_OK);
  all("update_weights", 1, BS_ERR_ENGINE_DEAD);
  assert_true(bs_oracle_agreement(&rec, detail, sizeof detail));
  HAS("all 4 ranks: engine-dead in update_weights (cycle 1)");
  teardown(NULL);

  mk(4);
  all("init", 0, BS_OK);
  for (int k = 0; k < 4; k++)
    ev(k, "update_weights", 1, k == 3 ? BS_OK : BS_ERR_ENGINE_DEAD);
  assert_false(bs_oracle_agreement(&rec, detail, sizeof detail));
  HAS("cycle 1 update_weights");
  HAS("rank 3 ok");
}

static void test_agreement_excludes_dead_rank(void **state) {
  (void)state;
  mk(3);
  all("init", 0, BS_OK);
  ev(0, "train_step", 0, BS_ERR_RANK_DEAD);
  ev(2, "train_step", 0, BS_ERR_RANK_DEAD);
  /* rank 1 died on purpose and recorded nothing more */
  assert_false(bs_oracle_agreement(&rec, detail, sizeof detail));
  HAS("rank 1 stopped early");
  fired("comm/rank_exit", 1, 0);
  assert_true(bs_oracle_agreement(&rec, detail, sizeof detail));
  HAS("all 2 surviving ranks: rank-dead in train_step");
}

static void test_pause_safety(void **state) {
  (void)state;
  mk(2);
  rec.pause_rule = BS_PAUSE_NONE;
  all("update_weights", 0, BS_OK);
  assert_true(bs_oracle_pause_safety(&rec, detail, sizeof detail));
  HAS("not applicable");
  rec.pause_rule = BS_PAUSE_AFTER_SYNC;
  for (int k = 0; k < 2; k++)
    rec.rank[k].ev[0].param_paused = 1;
  assert_true(bs_oracle_pause_safety(&rec, detail, sizeof detail));
  HAS("all 2 checked");
  for (int k = 0; k < 2; k++)
    ev(k, "update_weights", 1, BS_ERR_ENGINE_DEAD)->param_paused = k == 0;
  assert_false(bs_oracle_pause_safety(&rec, detail, sizeof detail));
  HAS("rank 1, cycle 1: param_buffer still resident after update_weights "
      "returned engine-dead");
}

static void test_pause_safety_at_sleep(void **state) {
  (void)state;
  mk(1);
  rec.pause_rule = BS_PAUSE_AT_SLEEP;
  ev(0, "sleep", 0, BS_OK)->param_paused = 1;
  ev(0, "wake_up", 0, BS_OK)->param_paused = 0;
  assert_true(bs_oracle_pause_safety(&rec, detail, sizeof detail));
  ev(0, "sleep", 1, BS_OK)->param_paused = 0;
  assert_false(bs_oracle_pause_safety(&rec, detail, sizeof detail));
  HAS("rank 0, cycle 1");
  HAS("after sleep");
}

static const char *const names[3] = {"a", "b", "c"};

static void digests(bs_digests *d, uint8_t seed, size_t npaused) {
  bs_digest dig[3];
  for (size_t i = 0; i < 3; i++) {
    memset(&dig[i], 0, sizeof dig[i]);
    dig[i].b[0] = (uint8_t)(seed + i);
  }
  assert_int_equal(bs_record_digests_set(d, dig, names, 3), BS_OK);
  d->npaused = npaused;
}

static void test_bit_identity(void **state) {
  (void)state;
  mk(2);
  for (int k = 0; k < 2; k++) {
    digests(&ev(k, "init", 0, BS_OK)->live, 10, 3); /* asleep: unreadable */
    digests(&ev(k, "update_weights", 0, BS_OK)->recv, 10, 0);
    digests(&ev(k, "restore", 0, BS_OK)->live, 10, 0);
    digests(&ev(k, "train_step", 0, BS_OK)->live, 20, 0);
    digests(&ev(k, "update_weights", 1, BS_OK)->recv, 20, 0);
    digests(&ev(k, "restore", 1, BS_OK)->live, 20, 0);
  }
  assert_true(bs_oracle_bit_identity(&rec, detail, sizeof detail));
  HAS("4 restores and 2 engine syncs");
  /* rank 1's cycle 1 restore comes back with tensor b changed */
  rec.rank[1].ev[5].live.d[1].b[5] ^= 1;
  assert_false(bs_oracle_bit_identity(&rec, detail, sizeof detail));
  HAS("rank 1, cycle 1 restore");
  HAS("1/3 tensors differ from the step end of cycle 0");
  HAS("first: b");
}

static void test_bit_identity_engine(void **state) {
  (void)state;
  mk(1);
  digests(&ev(0, "train_step", 0, BS_OK)->live, 20, 0);
  bs_event *e = ev(0, "update_weights", 1, BS_OK);
  digests(&e->recv, 20, 0);
  e->recv.n = 2; /* the engine got only a and b */
  assert_false(bs_oracle_bit_identity(&rec, detail, sizeof detail));
  HAS("rank 0, cycle 1 update_weights: the engine received");
  HAS("1 missing");
  HAS("first: c");
  e->recv.n = 3;
  /* a restore that still has paused tensors is not a restore */
  digests(&ev(0, "restore", 1, BS_OK)->live, 20, 1);
  assert_false(bs_oracle_bit_identity(&rec, detail, sizeof detail));
  HAS("1 of 3 tensors still paused");
}

/* The first sync, before any step end, is held to the initial weights
 * that the driver computes apart from the ranks. */
static void test_bit_identity_initial_weights(void **state) {
  (void)state;
  mk(1);
  digests(&rec.init_ref, 10, 0);
  digests(&ev(0, "init", 0, BS_OK)->live, 10, 3); /* asleep: unreadable */
  bs_event *e = ev(0, "update_weights", 0, BS_OK);
  digests(&e->recv, 10, 0);
  assert_true(bs_oracle_bit_identity(&rec, detail, sizeof detail));
  HAS("0 restores and 1 engine syncs");
  e->recv.d[2].b[7] ^= 1;
  assert_false(bs_oracle_bit_identity(&rec, detail, sizeof detail));
  HAS("rank 0, cycle 0 update_weights: the engine received");
  HAS("differ from the initial weights of cycle 0");
  HAS("first: c");
}

static void test_memory_budget(void **state) {
  (void)state;
  mk(2);
  rec.budget = (bs_budget){BS_BUDGET_NORMAL, 1000, 100, 2};
  assert_int_equal(bs_oracle_memory_budget_bytes(&rec.budget), 2000);
  all("init", 0, BS_OK);
  rec.rank[1].ev[0].pinned[BS_PIN_BACKUPER] = 2000;
  rec.rank[1].ev[0].pinned[BS_PIN_MEMSAVER] = 1 << 20; /* not the backuper */
  assert_true(bs_oracle_memory_budget(&rec, detail, sizeof detail));
  HAS("at most 2000 of 2000");
  rec.budget.kind = BS_BUDGET_MAINCAST;
  assert_int_equal(bs_oracle_memory_budget_bytes(&rec.budget), 1100);
  assert_false(bs_oracle_memory_budget(&rec, detail, sizeof detail));
  HAS("rank 1 after init of cycle 0: 2000 pinned backuper bytes, budget "
      "1100");
  rec.budget.kind = BS_BUDGET_MEMSAVER;
  rec.rank[1].ev[0].pinned[BS_PIN_BACKUPER] = 0;
  rec.rank[0].ev[0].pinned_peak[BS_PIN_BACKUPER] = 8;
  assert_false(bs_oracle_memory_budget(&rec, detail, sizeof detail));
  HAS("rank 0 after init");
  HAS("budget 0 (memory-saver read path");
}

/* Under offload_train, from an init's or a sleep's end to the next wake_up
 * the trainer holds no device memory but its param buffer (MainCast pauses
 * that at its sync); awake, or without offload, anything. */
static void test_memory_budget_asleep(void **state) {
  (void)state;
  mk(1);
  rec.pause_rule = BS_PAUSE_AFTER_SYNC;
  ev(0, "init", 0, BS_OK)->resident = 4096;
  rec.rank[0].ev[0].resident_params = 4096; /* the param buffer: allowed */
  ev(0, "update_weights", 0, BS_OK);
  ev(0, "wake_up", 0, BS_OK)->resident = 1 << 20; /* awake: anything */
  ev(0, "train_step", 0, BS_OK)->resident = 1 << 20;
  ev(0, "sleep", 0, BS_OK);
  assert_true(bs_oracle_memory_budget(&rec, detail, sizeof detail));
  HAS("asleep, no device bytes besides the param buffer");
  ev(0, "update_weights", 1, BS_ERR_ENGINE_DEAD)->resident = 8192;
  assert_false(bs_oracle_memory_budget(&rec, detail, sizeof detail));
  HAS("rank 0 after update_weights of cycle 1, asleep: 8192 device bytes "
      "resident besides the param buffer, budget 0 (offload_train)");
  rec.rank[0].ev[4].status = BS_ERR_COPY; /* a failed sleep: state unknown */
  assert_true(bs_oracle_memory_budget(&rec, detail, sizeof detail));
  rec.rank[0].ev[4].status = BS_OK;
  rec.pause_rule = BS_PAUSE_NONE; /* colocated LoRA keeps its adapters */
  assert_true(bs_oracle_memory_budget(&rec, detail, sizeof detail));
  assert_null(strstr(detail, "asleep"));
}

static void test_no_paused_reads(void **state) {
  (void)state;
  mk(2);
  all("init", 0, BS_OK);
  assert_true(bs_oracle_no_paused_reads(&rec, detail, sizeof detail));
  ev(1, "update_weights", 0, BS_ERR_PAUSED_READ);
  assert_false(bs_oracle_no_paused_reads(&rec, detail, sizeof detail));
  HAS("rank 1, cycle 0 update_weights");
  rec.reads = calloc(1, sizeof *rec.reads);
  assert_non_null(rec.reads);
  rec.nreads = 1;
  rec.reads[0] = (bs_paused_read){"param_buffer", 4096, "update_weights", 1};
  assert_false(bs_oracle_no_paused_reads(&rec, detail, sizeof detail));
  HAS("rank 1 read paused param_buffer at offset 4096 in update_weights");
}

static char *flight(const char *const *ops, size_t n) {
  char *s = malloc(4096);
  assert_non_null(s);
  int len = snprintf(s, 4096, "{\"version\":\"2.4\",\"entries\":[");
  for (size_t i = 0; i < n; i++)
    len += snprintf(s + len, 4096 - (size_t)len,
                    "%s{\"collective_seq_id\":%zu,\"profiling_name\":\"%s\","
                    "\"input_sizes\":[[8]],\"input_dtypes\":[\"Float\"],"
                    "\"output_sizes\":[[8]],\"output_dtypes\":[\"Float\"],"
                    "\"state\":\"completed\",\"time_created_ns\":1}",
                    i ? "," : "", i + 1, ops[i]);
  snprintf(s + len, 4096 - (size_t)len, "]}");
  return s;
}

static void test_uniform_schedule(void **state) {
  (void)state;
  static const char *const same[] = {"nccl:reduce_scatter", "nccl:all_gather",
                                     "nccl:all_reduce"};
  static const char *const other[] = {"nccl:reduce_scatter",
                                      "nccl:reduce_scatter"};
  mk(3);
  for (int k = 0; k < 3; k++)
    rec.rank[k].flight = flight(same, 3);
  assert_true(bs_oracle_uniform_schedule(&rec, detail, sizeof detail));
  HAS("all 3 ranks issued the same collectives (up to #3)");
  free(rec.rank[2].flight);
  rec.rank[2].flight = flight(other, 2);
  all("update_weights", 0, BS_ERR_DESYNC);
  assert_false(bs_oracle_uniform_schedule(&rec, detail, sizeof detail));
  HAS("collective #2: rank 0 nccl:all_gather [8] Float -> [8] Float");
  HAS("rank 2 nccl:reduce_scatter");
  HAS("not contained");
  fired("comm/diverge", 2, 0);
  assert_true(bs_oracle_uniform_schedule(&rec, detail, sizeof detail));
  HAS("contained");
  /* a rank that went on as if nothing happened: not contained */
  ev(1, "wake_up", 0, BS_OK);
  assert_false(bs_oracle_uniform_schedule(&rec, detail, sizeof detail));
  free(rec.rank[1].flight);
  rec.rank[1].flight = strdup("{\"entries\": [");
  assert_false(bs_oracle_uniform_schedule(&rec, detail, sizeof detail));
  HAS("rank 1: unreadable flight recorder");
}

/* A contained failure that cut the schedules short: whether a peer had
 * entered the next collective before it learnt of the failure is timing,
 * so the detail is the same whichever ranks did (one seed, one report). */
static void test_uniform_schedule_cut_short(void **state) {
  (void)state;
  static const char *const ops[] = {"nccl:all_gather", "nccl:all_gather",
                                    "nccl:comm_init"};
  char first[BS_DETAIL_MAX];
  mk(3);
  all("update_weights", 0, BS_ERR_ABORTED);
  fired("comm/init_fail", 0, 0);
  for (int entered = 0; entered < 4; entered++) {
    /* rank 0 stopped at #2; ranks 1 and 2 entered #3 or not */
    for (int k = 0; k < 3; k++) {
      free(rec.rank[k].flight);
      rec.rank[k].flight = flight(ops, k && (entered & k) ? 3 : 2);
    }
    assert_true(bs_oracle_uniform_schedule(&rec, detail, sizeof detail));
    if (!entered)
      snprintf(first, sizeof first, "%s", detail);
    assert_string_equal(detail, first);
  }
  HAS("all 3 ranks issued the same collectives (up to #2)");
  /* not contained: the ends apart fail, saying where */
  ev(2, "wake_up", 0, BS_OK);
  free(rec.rank[1].flight);
  rec.rank[1].flight = flight(ops, 2);
  assert_false(bs_oracle_uniform_schedule(&rec, detail, sizeof detail));
  HAS("rank 0 issued collectives up to #2, rank 2 up to #3; not contained");
}

static void test_explained(void **state) {
  (void)state;
  mk(2);
  all("init", 0, BS_OK);
  all("update_weights", 1, BS_ERR_ENGINE_DEAD);
  assert_false(bs_oracle_explained(&rec, detail, sizeof detail));
  HAS("rank 0, cycle 1 update_weights: engine-dead with no fired fault");
  fired("engine/send", 1, 2); /* fired after the error: no explanation */
  assert_false(bs_oracle_explained(&rec, detail, sizeof detail));
  fired("engine/send", 1, 1);
  assert_true(bs_oracle_explained(&rec, detail, sizeof detail));
  HAS("2 failed phases, 2 fault firings");
  /* a fault of another kind does not explain a hash mismatch */
  ev(0, "restore", 2, BS_ERR_HASH_MISMATCH);
  assert_false(bs_oracle_explained(&rec, detail, sizeof detail));
  HAS("rank 0, cycle 2 restore: hash-mismatch");
  fired("restore/bitflip", 0, 2);
  assert_true(bs_oracle_explained(&rec, detail, sizeof detail));
  rec.world_report = strdup("ranks 0-1: all_gather #3");
  assert_false(bs_oracle_explained(&rec, detail, sizeof detail));
  HAS("hang/desync was reported");
}

static bool expect_two_ranks(const bs_record *r, char *d, size_t n) {
  snprintf(d, n, "%d ranks", r->nranks);
  return r->nranks == 2;
}

static void test_run_all(void **state) {
  (void)state;
  mk(2);
  all("init", 0, BS_OK);
  bs_oracle_result out[16];
  assert_true(bs_oracle_max() <= 16);
  size_t n = bs_oracle_run_all(&rec, NULL, out);
  assert_int_equal(n, 8);
  for (size_t i = 0; i < n; i++)
    assert_true(out[i].ok);
  assert_string_equal(out[0].name, "liveness");
  n = bs_oracle_run_all(&rec, expect_two_ranks, out);
  assert_int_equal(n, 9);
  assert_string_equal(out[8].name, "expectation");
  assert_true(out[8].ok);
  assert_string_equal(out[8].detail, "2 ranks");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_liveness, teardown),
      cmocka_unit_test_teardown(test_agreement, teardown),
      cmocka_unit_test_teardown(test_agreement_excludes_dead_rank, teardown),
      cmocka_unit_test_teardown(test_pause_safety, teardown),
      cmocka_unit_test_teardown(test_pause_safety_at_sleep, teardown),
      cmocka_unit_test_teardown(test_bit_identity, teardown),
      cmocka_unit_test_teardown(test_bit_identity_engine, teardown),
      cmocka_unit_test_teardown(test_bit_identity_initial_weights, teardown),
      cmocka_unit_test_teardown(test_memory_budget, teardown),
      cmocka_unit_test_teardown(test_memory_budget_asleep, teardown),
      cmocka_unit_test_teardown(test_no_paused_reads, teardown),
      cmocka_unit_test_teardown(test_uniform_schedule, teardown),
      cmocka_unit_test_teardown(test_uniform_schedule_cut_short, teardown),
      cmocka_unit_test_teardown(test_explained, teardown),
      cmocka_unit_test_teardown(test_run_all, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
