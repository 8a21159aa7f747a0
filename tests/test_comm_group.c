/* Process groups and point-to-point on the sim communicator (threads):
 * each group's own numbering, data and flight-recorder entries (pg_config,
 * process_group, "nccl:send 0->1"); a stuck group and a missing send
 * found and reported with their group, op and culprit; the deadlocks the
 * sim sees at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/bs_comm.h"

enum { N = 4, COUNT = 8 };

/* What a test's ranks do, and what they saw. */
typedef struct plan {
  int skip_rank;      /* skips its DP all_reduce, or its send (-1: none) */
  bool skipper_exits; /* returns at once (else waits for the failure) */
  atomic_int bad;
  char flight[N][8192];
} plan;

static bs_world *run(bs_rank_fn fn, plan *p, int timeout_ms, bs_status *st) {
  bs_world_opts o = {.size = N, .timeout_ms = timeout_ms, .fingerprint = true};
  bs_world *w = NULL;
  void *args[N] = {p, p, p, p};
  assert_int_equal(bs_world_create(&o, &w), BS_OK);
  *st = bs_world_run(w, NULL, fn, args);
  for (int r = 0; r < N; r++) {
    char *j = bs_world_flight_json(w, r);
    assert_non_null(j);
    snprintf(p->flight[r], sizeof p->flight[r], "%s", j);
    free(j);
  }
  bs_err_clear();
  return w;
}

/* A rank that skipped its part waits (outside any op) until its peers'
 * failure, as a rank busy elsewhere would, within a bound. */
static void wait_for_failure(bs_comm *c, plan *p) {
  (void)c;
  if (p->skipper_exits)
    return;
  struct timespec nap = {0, 20 * 1000000L};
  for (int i = 0; i < 50; i++)
    nanosleep(&nap, NULL);
}

/* TP groups {0,1},{2,3}, DP groups {0,2},{1,3}: an all_reduce in each. */
static bs_status tp_dp(bs_comm *c, void *arg) {
  plan *p = arg;
  int r = bs_comm_rank(c);
  int tp[2] = {r & ~1, r | 1}, dp[2] = {r & 1, (r & 1) + 2};
  char tpn[16], dpn[16];
  snprintf(tpn, sizeof tpn, "tp%d", r / 2);
  snprintf(dpn, sizeof dpn, "dp%d", r & 1);
  bs_comm *gt = NULL, *gd = NULL;
  float buf[COUNT];
  bs_status st = bs_comm_group(c, tpn, "tensor_parallel", tp, 2, &gt);
  if (st == BS_OK)
    st = bs_comm_group(c, dpn, "data_parallel", dp, 2, &gd);
  for (int k = 0; st == BS_OK && k < COUNT; k++)
    buf[k] = (float)(r + 1);
  if (st == BS_OK)
    st = bs_comm_all_reduce(gt, buf, buf, COUNT, BS_F32, BS_SUM);
  if (st == BS_OK && buf[0] != (float)(tp[0] + tp[1] + 2))
    atomic_fetch_add(&p->bad, 1);
  if (st == BS_OK && gt && bs_comm_seq(gt) != 1)
    atomic_fetch_add(&p->bad, 1);
  if (st == BS_OK && r == p->skip_rank) {
    wait_for_failure(c, p);
    goto out;
  }
  if (st == BS_OK)
    st = bs_comm_all_reduce(gd, buf, buf, COUNT, BS_F32, BS_SUM);
  if (st == BS_OK && bs_comm_group_rank(gd) != (r >> 1))
    atomic_fetch_add(&p->bad, 1);
out:
  bs_comm_group_free(gt);
  bs_comm_group_free(gd);
  return st;
}

static void test_groups_reduce_and_record(void **state) {
  (void)state;
  plan p = {.skip_rank = -1};
  bs_status st;
  bs_world *w = run(tp_dp, &p, 5000, &st);
  assert_int_equal(st, BS_OK);
  assert_int_equal(atomic_load(&p.bad), 0);
  /* Rank 1's recorder: both groups in pg_config, each entry under its. */
  const char *f = p.flight[1];
  assert_non_null(strstr(f, "\"tp0\":{\"name\":\"tp0\",\"desc\":"
                            "\"tensor_parallel\",\"ranks\":\"[0, 1]\"}"));
  assert_non_null(strstr(f, "\"dp1\":{\"name\":\"dp1\",\"desc\":"
                            "\"data_parallel\",\"ranks\":\"[1, 3]\"}"));
  assert_non_null(strstr(f, "\"process_group\":[\"dp1\",\"data_parallel\"]"));
  assert_non_null(strstr(f, "\"pg_status\":{\"0\":{"));
  assert_non_null(strstr(f, "\"dp1\":{\"last_enqueued_collective\":1,"));
  bs_world_destroy(w);
}

static void test_stuck_group_times_out_naming_it(void **state) {
  (void)state;
  plan p = {.skip_rank = 3};
  bs_status st;
  bs_world *w = run(tp_dp, &p, 200, &st);
  assert_int_equal(st, BS_ERR_TIMEOUT);
  const char *rep = bs_world_report(w);
  fprintf(stderr, "%s", rep);
  assert_non_null(strstr(rep, "group dp1 (data_parallel)"));
  assert_non_null(strstr(
      rep, "rank 1: all_reduce #1 (8 x fp32, sum) [fingerprint] of group dp1"));
  assert_non_null(strstr(rep, "missing from #1: rank 3\n"));
  assert_non_null(strstr(rep, "culprit: rank 3 (missing from #1)"));
  bs_world_destroy(w);
}

static void test_stuck_group_rank_gone_at_once(void **state) {
  (void)state;
  plan p = {.skip_rank = 3, .skipper_exits = true};
  bs_status st;
  bs_world *w = run(tp_dp, &p, 60000, &st);
  assert_int_equal(st, BS_ERR_RANK_DEAD);
  const char *rep = bs_world_report(w);
  fprintf(stderr, "%s", rep);
  assert_non_null(strstr(rep, "rank 3 is gone while 1 rank waits for it in a "
                              "collective of group dp1"));
  assert_non_null(strstr(rep, "culprit: rank 3"));
  assert_true(bs_world_detect_ms(w) < 30000);
  bs_world_destroy(w);
}

/* A pipeline 0 -> 1 -> 2 -> 3 over the world: each adds its rank. */
static bs_status pipeline(bs_comm *c, void *arg) {
  plan *p = arg;
  int r = bs_comm_rank(c);
  float buf[COUNT] = {0};
  bs_status st = BS_OK;
  if (r > 0)
    st = bs_comm_recv(c, buf, COUNT, BS_F32, r - 1);
  for (int k = 0; k < COUNT; k++)
    buf[k] += (float)r;
  if (st == BS_OK && r == p->skip_rank) {
    wait_for_failure(c, p);
    return st;
  }
  if (st == BS_OK && r < N - 1)
    st = bs_comm_send(c, buf, COUNT, BS_F32, r + 1);
  if (st == BS_OK && r == N - 1 && buf[COUNT - 1] != 6.0f)
    atomic_fetch_add(&p->bad, 1);
  return st;
}

static void test_p2p_pipeline_moves_and_records(void **state) {
  (void)state;
  plan p = {.skip_rank = -1};
  bs_status st;
  bs_world *w = run(pipeline, &p, 5000, &st);
  assert_int_equal(st, BS_OK);
  assert_int_equal(atomic_load(&p.bad), 0);
  const char *f = p.flight[1];
  assert_non_null(strstr(f, "\"profiling_name\":\"nccl:recv 1<-0\""));
  assert_non_null(strstr(f, "\"profiling_name\":\"nccl:send 1->2\""));
  assert_non_null(strstr(f, "\"p2p_seq_id\":2,"));
  assert_non_null(strstr(f, "\"is_p2p\":true"));
  bs_world_destroy(w);
}

static void test_missing_send_times_out_blaming_sender(void **state) {
  (void)state;
  plan p = {.skip_rank = 2};
  bs_status st;
  bs_world *w = run(pipeline, &p, 200, &st);
  assert_int_equal(st, BS_ERR_TIMEOUT);
  const char *rep = bs_world_report(w);
  fprintf(stderr, "%s", rep);
  assert_non_null(
      strstr(rep, "cause: a rank waited more than 200 ms in recv #1"));
  assert_non_null(strstr(rep, "rank 3: recv #1 from rank 2 (8 x fp32)"));
  assert_non_null(
      strstr(rep, "culprit: rank 2 (rank 3 waits for it in recv #1"));
  bs_world_destroy(w);
}

static void test_missing_send_sender_gone_at_once(void **state) {
  (void)state;
  plan p = {.skip_rank = 2, .skipper_exits = true};
  bs_status st;
  bs_world *w = run(pipeline, &p, 60000, &st);
  assert_int_equal(st, BS_ERR_RANK_DEAD);
  const char *rep = bs_world_report(w);
  fprintf(stderr, "%s", rep);
  assert_non_null(strstr(rep, "rank 2 is gone while rank 3 waits to receive "
                              "from it"));
  assert_non_null(strstr(rep, "culprit: rank 2"));
  bs_world_destroy(w);
}

/* Ranks 0 and 1 both receive first (a deadlock the sim sees), ranks 2 and
 * 3 disagree on the size. */
static bs_status crossed(bs_comm *c, void *arg) {
  (void)arg;
  int r = bs_comm_rank(c);
  float buf[COUNT] = {0};
  if (r < 2)
    return bs_comm_recv(c, buf, COUNT, BS_F32, 1 - r);
  if (r == 2)
    return bs_comm_send(c, buf, COUNT, BS_F32, 3);
  return bs_comm_recv(c, buf, COUNT / 2, BS_F32, 2);
}

static void test_p2p_deadlock_and_mismatch_seen_at_once(void **state) {
  (void)state;
  plan p = {.skip_rank = -1};
  bs_status st;
  bs_world *w = run(crossed, &p, 60000, &st);
  assert_int_equal(st, BS_ERR_DESYNC);
  const char *rep = bs_world_report(w);
  fprintf(stderr, "%s", rep);
  assert_true(
      strstr(rep, "ranks 0 and 1 each wait to receive from the other") ||
      strstr(rep, "rank 2 sends 32 bytes of f32 to rank 3, which "
                  "receives 16 bytes of f32"));
  assert_true(bs_world_detect_ms(w) < 30000);
  bs_world_destroy(w);
}

/* batch_isend_irecv: every rank sends to and receives from both
 * neighbours of a ring at once (blocking sends would deadlock). */
static bs_status ring_batch(bs_comm *c, void *arg) {
  plan *p = arg;
  int r = bs_comm_rank(c), next = (r + 1) % N, prev = (r + N - 1) % N;
  int64_t out = r, from_prev = -1, from_next = -1;
  bs_p2p_op ops[4] = {
      {.send = true, .buf = &out, .count = 1, .dt = BS_I64, .peer = next},
      {.send = true, .buf = &out, .count = 1, .dt = BS_I64, .peer = prev},
      {.buf = &from_prev, .count = 1, .dt = BS_I64, .peer = prev},
      {.buf = &from_next, .count = 1, .dt = BS_I64, .peer = next},
  };
  bs_status st = bs_comm_p2p(c, ops, 4);
  if (st == BS_OK && (from_prev != prev || from_next != next))
    atomic_fetch_add(&p->bad, 1);
  if (st == BS_OK && bs_comm_p2p_seq(c) != 1)
    atomic_fetch_add(&p->bad, 1);
  return st;
}

static void test_p2p_batch_ring(void **state) {
  (void)state;
  plan p = {.skip_rank = -1};
  bs_status st;
  bs_world *w = run(ring_batch, &p, 5000, &st);
  assert_int_equal(st, BS_OK);
  assert_int_equal(atomic_load(&p.bad), 0);
  bs_world_destroy(w);
}

static bs_status bad_groups(bs_comm *c, void *arg) {
  (void)arg;
  bs_comm *g = NULL;
  int not_me[1] = {(bs_comm_rank(c) + 1) % N}, unsorted[2] = {1, 0};
  int all[N] = {0, 1, 2, 3};
  if (bs_comm_group(c, "x", NULL, not_me, 1, &g) != BS_ERR_INVALID ||
      bs_comm_group(c, "y", NULL, unsorted, 2, &g) != BS_ERR_INVALID ||
      bs_comm_send(c, all, 1, BS_I32, bs_comm_rank(c)) != BS_ERR_INVALID)
    return BS_ERR_INTERNAL;
  bs_err_clear();
  return BS_OK;
}

static void test_bad_groups_and_peers_refused(void **state) {
  (void)state;
  plan p = {.skip_rank = -1};
  bs_status st;
  bs_world *w = run(bad_groups, &p, 5000, &st);
  assert_int_equal(st, BS_OK);
  bs_world_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_groups_reduce_and_record),
      cmocka_unit_test(test_stuck_group_times_out_naming_it),
      cmocka_unit_test(test_stuck_group_rank_gone_at_once),
      cmocka_unit_test(test_p2p_pipeline_moves_and_records),
      cmocka_unit_test(test_missing_send_times_out_blaming_sender),
      cmocka_unit_test(test_missing_send_sender_gone_at_once),
      cmocka_unit_test(test_p2p_deadlock_and_mismatch_seen_at_once),
      cmocka_unit_test(test_p2p_batch_ring),
      cmocka_unit_test(test_bad_groups_and_peers_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
