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
#include <sys/resource.h>

#include "bs_test_groups.h"
#include "comm/bs_comm.h"
#include "record/bs_record.h"
#include "record/bs_schedule.h"

/* Every rank's collectives as the flight recorder gives them are the ones
 * a reader of its dump takes, byte for byte: the record keeps the first
 * so that the oracles need not read the second back. */
static size_t expect_colls_as_dumps(const bs_world *w, int n) {
  size_t total = 0;
  bs_rank_rec rr[TG_N] = {0};
  bs_record r = {.nranks = n, .rank = rr};
  for (int k = 0; k < n; k++) {
    bs_schedule a, b;
    rr[k].flight = bs_world_flight_json_marked(w, k);
    assert_int_equal(bs_world_flight_colls(w, k, &rr[k].colls, &rr[k].ncolls),
                     BS_OK);
    total += rr[k].ncolls;
    assert_int_equal(bs_schedule_of_rank(&r, k, &a), BS_OK);
    free(rr[k].colls);
    rr[k].colls = NULL;
    assert_int_equal(bs_schedule_of_rank(&r, k, &b), BS_OK);
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.c, b.c, a.n * sizeof *a.c);
    bs_schedule_free(&a);
    bs_schedule_free(&b);
    free(rr[k].flight);
  }
  return total;
}

static void test_groups_reduce_and_record(void **state) {
  (void)state;
  tg_plan p = {.skip_rank = -1};
  bs_status st;
  bs_world *w = tg_run(tg_tp_dp, &p, 5000, &st);
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
  /* pg_status keyed by pg_id, as PyTorch keys it. */
  const char *at = strstr(f, ",\"process_group\":[\"dp1\"");
  assert_non_null(at);
  while (at > f && strncmp(at, "\"pg_id\":", 8))
    at--;
  char key[48];
  snprintf(key, sizeof key, "\"%d\":{\"last_enqueued_collective\":1,",
           atoi(at + 8));
  assert_non_null(strstr(f, key));
  expect_colls_as_dumps(w, TG_N);
  bs_world_destroy(w);
}

static void test_stuck_group_times_out_naming_it(void **state) {
  (void)state;
  tg_plan p = {.skip_rank = 3};
  bs_status st;
  bs_world *w = tg_run(tg_tp_dp, &p, 500, &st);
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
  tg_plan p = {.skip_rank = 3, .skipper_exits = true};
  bs_status st;
  bs_world *w = tg_run(tg_tp_dp, &p, 60000, &st);
  assert_int_equal(st, BS_ERR_RANK_DEAD);
  const char *rep = bs_world_report(w);
  fprintf(stderr, "%s", rep);
  assert_non_null(strstr(rep, "rank 3 is gone while 1 rank waits for it in a "
                              "collective of group dp1"));
  assert_non_null(strstr(rep, "culprit: rank 3"));
  assert_true(bs_world_detect_ms(w) < 30000);
  bs_world_destroy(w);
}

static void test_p2p_pipeline_moves_and_records(void **state) {
  (void)state;
  tg_plan p = {.skip_rank = -1};
  bs_status st;
  bs_world *w = tg_run(tg_pipeline, &p, 5000, &st);
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
  tg_plan p = {.skip_rank = 2};
  bs_status st;
  bs_world *w = tg_run(tg_pipeline, &p, 500, &st);
  assert_int_equal(st, BS_ERR_TIMEOUT);
  const char *rep = bs_world_report(w);
  fprintf(stderr, "%s", rep);
  assert_non_null(
      strstr(rep, "cause: a rank waited more than 500 ms in recv #1"));
  assert_non_null(strstr(rep, "rank 3: recv #1 from rank 2 (8 x fp32)"));
  assert_non_null(
      strstr(rep, "culprit: rank 2 (rank 3 waits for it in recv #1"));
  bs_world_destroy(w);
}

static void test_missing_send_sender_gone_at_once(void **state) {
  (void)state;
  tg_plan p = {.skip_rank = 2, .skipper_exits = true};
  bs_status st;
  bs_world *w = tg_run(tg_pipeline, &p, 60000, &st);
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
  float buf[TG_COUNT] = {0};
  if (r < 2)
    return bs_comm_p2p_recv(c, buf, TG_COUNT, BS_F32, 1 - r);
  if (r == 2)
    return bs_comm_p2p_send(c, buf, TG_COUNT, BS_F32, 3);
  return bs_comm_p2p_recv(c, buf, TG_COUNT / 2, BS_F32, 2);
}

static void test_p2p_deadlock_and_mismatch_seen_at_once(void **state) {
  (void)state;
  tg_plan p = {.skip_rank = -1};
  bs_status st;
  bs_world *w = tg_run(crossed, &p, 60000, &st);
  assert_int_equal(st, BS_ERR_DESYNC);
  const char *rep = bs_world_report(w);
  fprintf(stderr, "%s", rep);
  assert_true(
      strstr(rep, "ranks 0 and 1 each wait to receive from the other") ||
      strstr(rep, "rank 2 sends 32 bytes of fp32 to rank 3, which "
                  "receives 16 bytes of fp32"));
  assert_true(bs_world_detect_ms(w) < 30000);
  bs_world_destroy(w);
}

/* batch_isend_irecv: every rank sends to and receives from both
 * neighbours of a ring at once (blocking sends would deadlock). */
static bs_status ring_batch(bs_comm *c, void *arg) {
  tg_plan *p = arg;
  int r = bs_comm_rank(c), next = (r + 1) % TG_N, prev = (r + TG_N - 1) % TG_N;
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

/* fn on every rank, none skipping: every rank returns BS_OK, none
 * counted a bad result. */
/* fn runs clean on every rank; the collectives its ranks recorded. */
static size_t runs_clean(bs_rank_fn fn) {
  tg_plan p = {.skip_rank = -1};
  bs_status st;
  bs_world *w = tg_run(fn, &p, 5000, &st);
  assert_int_equal(st, BS_OK);
  assert_int_equal(atomic_load(&p.bad), 0);
  size_t colls = expect_colls_as_dumps(w, TG_N);
  bs_world_destroy(w);
  return colls;
}

/* A barrier, the front's own exchanges (labelled) and a collective with
 * data, each under a phase of its own. */
static bs_status labelled(bs_comm *c, void *arg) {
  (void)arg;
  bs_status st = BS_OK;
  float x = 1, y = 0;
  bs_err_set_phase("sleep");
  BS_CHECK(bs_comm_barrier(c));
  bs_err_set_phase("update_weights_and_more_than_a_phase_holds");
  BS_CHECK(bs_comm_check_same(c, "abc", 3, "tensor set"));
  BS_CHECK(bs_comm_agree(c, BS_OK));
  bs_err_set_phase("");
  BS_CHECK(bs_comm_all_reduce(c, &x, &y, 1, BS_F32, BS_SUM));
out:
  return st;
}

static void test_colls_as_dumps_say(void **state) {
  (void)state;
  assert_true(runs_clean(labelled) >= 4 * TG_N);
}

static void test_p2p_batch_ring(void **state) {
  (void)state;
  runs_clean(ring_batch);
}

/* isend and irecv numbered one by one (own seqs), a ring exchange twice;
 * the skip rank (1) leaves before the second: its neighbours' other halves
 * complete on their own, and the flight recorders show which op each still
 * waits in, as PyTorch's would. */
/* One int64 element to or from peer, numbered seq (0: the call's). */
static bs_p2p_op i64_op(bool send, int64_t *buf, int peer, uint64_t seq) {
  return (bs_p2p_op){.send = send,
                     .buf = buf,
                     .count = 1,
                     .dt = BS_I64,
                     .peer = peer,
                     .seq = seq};
}

static atomic_int ring_failed;

/* The skip rank stays (bounded) until a neighbour's wait failed: one that
 * returned at once would fail the world before rank 3 sent. */
static void stay_until_failed(bs_comm *c) {
  for (int i = 0; i < 1000 && !atomic_load(&ring_failed); i++)
    bs_comm_sleep_ms(c, 10);
}

static bs_status ring_own(bs_comm *c, void *arg) {
  tg_plan *p = arg;
  int r = bs_comm_rank(c), next = (r + 1) % TG_N, prev = (r + TG_N - 1) % TG_N;
  int64_t out = r, in = -1;
  bs_status st = BS_OK;
  for (uint64_t step = 0; st == BS_OK && step < 2; step++) {
    if (step == 1 && r == p->skip_rank) {
      stay_until_failed(c);
      break;
    }
    bs_p2p_op ops[2] = {i64_op(true, &out, next, 2 * step + 1),
                        i64_op(false, &in, prev, 2 * step + 2)};
    st = bs_comm_p2p(c, ops, 2);
    if (st == BS_OK && (in != prev || bs_comm_p2p_seq(c) != 2 * step + 2))
      atomic_fetch_add(&p->bad, 1);
  }
  if (st != BS_OK)
    atomic_store(&ring_failed, 1);
  return st;
}

/* The state of rank's flight entry of p2p_seq_id seq ("" if none). */
static void state_of(const bs_world *w, int rank, int seq, char *buf,
                     size_t n) {
  char *fr = bs_world_flight_json(w, rank), key[40];
  snprintf(key, sizeof key, "\"p2p_seq_id\":%d,", seq);
  const char *at = fr ? strstr(fr, key) : NULL;
  const char *st = at ? strstr(at, "\"state\":\"") : NULL;
  snprintf(buf, n, "%.*s", st ? (int)strcspn(st + 9, "\"") : 0,
           st ? st + 9 : "");
  free(fr);
}

static void expect_state(const bs_world *w, int rank, int seq,
                         const char *want) {
  char got[32];
  state_of(w, rank, seq, got, sizeof got);
  assert_string_equal(got, want);
}

static void test_p2p_own_seqs_complete_apart(void **state) {
  (void)state;
  runs_clean(ring_own);
  tg_plan p = {.skip_rank = 1};
  bs_status st;
  atomic_store(&ring_failed, 0);
  bs_world *w = tg_run(ring_own, &p, 300, &st);
  assert_int_not_equal(st, BS_OK);
  assert_int_equal(atomic_load(&p.bad), 0);
  expect_state(w, 0, 3, "started");   /* its send to rank 1 */
  expect_state(w, 0, 4, "completed"); /* its recv from rank 3 */
  expect_state(w, 2, 3, "completed"); /* its send to rank 3 */
  expect_state(w, 2, 4, "started");   /* its recv from rank 1 */
  expect_state(w, 3, 4, "completed");
  const char *rep = bs_world_report(w);
  assert_true(strstr(rep, "send #3 to rank 1") ||
              strstr(rep, "recv #4 from rank 1"));
  assert_non_null(strstr(rep, "culprit: rank 1"));
  expect_colls_as_dumps(w, TG_N);
  bs_world_destroy(w);
}

static bs_status bad_seqs(bs_comm *c, void *arg) {
  (void)arg;
  int64_t v = 0;
  int peer = (bs_comm_rank(c) + 1) % TG_N;
  bs_p2p_op down[2] = {i64_op(true, &v, peer, 2), i64_op(false, &v, peer, 1)};
  bs_p2p_op mixed[2] = {i64_op(true, &v, peer, 0), i64_op(false, &v, peer, 1)};
  bool ok = bs_comm_p2p(c, down, 2) == BS_ERR_INVALID &&
            strstr(bs_err()->message, "seq 1 is not past 2");
  bs_err_clear();
  ok = ok && bs_comm_p2p(c, mixed, 2) == BS_ERR_INVALID &&
       strstr(bs_err()->message, "op 1 has its own seq, op 0 has none");
  bs_err_clear();
  return ok ? BS_OK : BS_ERR_INTERNAL;
}

static void test_p2p_bad_seqs_refused(void **state) {
  (void)state;
  runs_clean(bad_seqs);
}

static bs_status bad_groups(bs_comm *c, void *arg) {
  (void)arg;
  bs_comm *g = NULL;
  int not_me[1] = {(bs_comm_rank(c) + 1) % TG_N}, unsorted[2] = {1, 0};
  int all[TG_N] = {0, 1, 2, 3};
  if (bs_comm_group(c, "x", NULL, not_me, 1, &g) != BS_ERR_INVALID ||
      bs_comm_group(c, "y", NULL, unsorted, 2, &g) != BS_ERR_INVALID ||
      bs_comm_p2p_send(c, all, 1, BS_I32, bs_comm_rank(c)) != BS_ERR_INVALID)
    return BS_ERR_INTERNAL;
  bs_err_clear();
  return BS_OK;
}

static void test_bad_groups_and_peers_refused(void **state) {
  (void)state;
  runs_clean(bad_groups);
}

/* ---- waits that sleep until woken ---- */

/* The wakes of the calling thread so far (voluntary context switches). */
static long thread_wakes(void) {
  struct rusage u;
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_nvcsw;
}

enum { LATE_MS = 500, MAX_WAKES = 50 };

/* Every rank in one group; rank 3 comes LATE_MS late to its barrier, and
 * rank 0 counts how often its thread woke meanwhile (in bad). */
static bs_status late_in_group(bs_comm *c, void *arg) {
  tg_plan *p = arg;
  int all[TG_N] = {0, 1, 2, 3};
  bs_comm *g = NULL;
  bs_status st = bs_comm_group(c, "all", "everyone", all, TG_N, &g);
  if (st != BS_OK)
    return st;
  if (bs_comm_rank(c) == 3)
    bs_comm_sleep_ms(c, LATE_MS);
  long before = thread_wakes();
  st = bs_comm_barrier(g);
  if (bs_comm_rank(c) == 0)
    atomic_store(&p->bad, (int)(thread_wakes() - before));
  bs_comm_group_free(g);
  return st;
}

/* A group's waiters sleep until woken: looking for the world's failure
 * every 2 ms, thousands of them took the CPU from the ranks they waited
 * for (a replay of 2048 ranks named a false culprit). */
static void test_group_waiter_sleeps(void **state) {
  (void)state;
  tg_plan p = {.skip_rank = -1};
  bs_status st;
  bs_world *w = tg_run(late_in_group, &p, 30000, &st);
  assert_int_equal(st, BS_OK);
  if (atomic_load(&p.bad) >= MAX_WAKES)
    fail_msg("rank 0 woke %d times in a %d ms wait", atomic_load(&p.bad),
             LATE_MS);
  bs_world_destroy(w);
}

/* Rank 0 sends to rank 1 LATE_MS late; rank 1 counts how often its
 * thread woke in its recv meanwhile (in bad). */
static bs_status late_send(bs_comm *c, void *arg) {
  tg_plan *p = arg;
  int r = bs_comm_rank(c);
  float buf[TG_COUNT] = {0};
  bs_status st = BS_OK;
  if (r == 0) {
    bs_comm_sleep_ms(c, LATE_MS);
    st = bs_comm_p2p_send(c, buf, TG_COUNT, BS_F32, 1);
  } else if (r == 1) {
    long before = thread_wakes();
    st = bs_comm_p2p_recv(c, buf, TG_COUNT, BS_F32, 0);
    atomic_store(&p->bad, (int)(thread_wakes() - before));
  }
  return st;
}

/* A p2p waiter sleeps until woken too (its list's epoch, the world's
 * nudge), not every 2 ms. */
static void test_p2p_waiter_sleeps(void **state) {
  (void)state;
  tg_plan p = {.skip_rank = -1};
  bs_status st;
  bs_world *w = tg_run(late_send, &p, 30000, &st);
  assert_int_equal(st, BS_OK);
  if (atomic_load(&p.bad) >= MAX_WAKES)
    fail_msg("rank 1 woke %d times in a %d ms recv", atomic_load(&p.bad),
             LATE_MS);
  bs_world_destroy(w);
}

/* Ranks 0 and 1 all_reduce different counts in tp0 (a desync the
 * fingerprint sees at once) once rank 2 waits in tp1's barrier for rank
 * 3, which stays out of every op until rank 2 has returned (in failed). */
static bs_status desync_beside(bs_comm *c, void *arg) {
  tg_plan *p = arg;
  int r = bs_comm_rank(c), tp[2] = {r & ~1, r | 1};
  char name[16];
  snprintf(name, sizeof name, "tp%d", r / 2);
  bs_comm *g = NULL;
  float buf[TG_COUNT] = {0};
  bs_status st = bs_comm_group(c, name, "tensor_parallel", tp, 2, &g);
  if (st != BS_OK)
    return st;
  if (r == 2) {
    atomic_store(&p->bad, 1); /* in its barrier from now on */
    st = bs_comm_barrier(g);
    atomic_store(&p->failed, 1);
  } else if (r < 2) {
    for (int i = 0; i < 1000 && !atomic_load(&p->bad); i++)
      bs_comm_sleep_ms(c, 10);
    bs_comm_sleep_ms(c, 100); /* rank 2 asleep in it */
    st = bs_comm_all_reduce(g, buf, buf, r ? TG_COUNT / 2 : TG_COUNT, BS_F32,
                            BS_SUM);
  } else {
    for (int i = 0; i < 3000 && !atomic_load(&p->failed); i++)
      bs_comm_sleep_ms(c, 10);
  }
  bs_comm_group_free(g);
  return st;
}

/* The world's failure in one group wakes the waiters of every other at
 * once, not at their own timeout (60 s here). */
static void test_failure_wakes_other_groups(void **state) {
  (void)state;
  tg_plan p = {.skip_rank = -1};
  bs_status st;
  bs_world *w = tg_run(desync_beside, &p, 60000, &st);
  assert_int_equal(st, BS_ERR_DESYNC);
  assert_int_equal(atomic_load(&p.failed), 1);
  double ms = bs_world_detect_ms(w);
  if (ms < 0 || ms > 20000)
    fail_msg("the ranks returned %.0f ms after the desync", ms);
  bs_world_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_groups_reduce_and_record),
      cmocka_unit_test(test_colls_as_dumps_say),
      cmocka_unit_test(test_stuck_group_times_out_naming_it),
      cmocka_unit_test(test_stuck_group_rank_gone_at_once),
      cmocka_unit_test(test_p2p_pipeline_moves_and_records),
      cmocka_unit_test(test_missing_send_times_out_blaming_sender),
      cmocka_unit_test(test_missing_send_sender_gone_at_once),
      cmocka_unit_test(test_p2p_deadlock_and_mismatch_seen_at_once),
      cmocka_unit_test(test_p2p_batch_ring),
      cmocka_unit_test(test_p2p_own_seqs_complete_apart),
      cmocka_unit_test(test_p2p_bad_seqs_refused),
      cmocka_unit_test(test_bad_groups_and_peers_refused),
      cmocka_unit_test(test_group_waiter_sleeps),
      cmocka_unit_test(test_p2p_waiter_sleeps),
      cmocka_unit_test(test_failure_wakes_other_groups),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
