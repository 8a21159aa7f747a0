/* The nccl communicator on real GPUs: data of every collective, agree, the
 * fingerprint check, a contained hang, a process group and p2p, and a
 * recv whose send never comes. Where there is no NCCL in the
 * build or no GPU, each test skips and says why. */
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

#ifdef BS_HAVE_NCCL
#include <cuda_runtime_api.h>
#endif

enum { MAX_RANKS = 8 };

/* The world size to test with, or 0 (and the reason) when nccl cannot run. */
static int usable_ranks(char *why, size_t n) {
  bs_world_opts o = {.backend = "nccl", .size = 1};
  bs_world *w = NULL;
  bs_status st = bs_world_create(&o, &w);
  bs_world_destroy(w);
  if (st != BS_OK) {
    snprintf(why, n, "%s", bs_err()->message);
    bs_err_clear();
    return 0;
  }
#ifdef BS_HAVE_NCCL
  int ndev = 0;
  cudaGetDeviceCount(&ndev);
  return ndev < MAX_RANKS ? ndev : MAX_RANKS;
#else
  return 0;
#endif
}

#define NEED_RANKS(min)                                                        \
  char why[256] = "";                                                          \
  int n = usable_ranks(why, sizeof why);                                       \
  if (n < (min)) {                                                             \
    fprintf(stderr, "skipped: %s\n", n ? "needs more GPUs" : why);             \
    skip();                                                                    \
  }

static void test_unavailable_says_why(void **state) {
  (void)state;
  char why[256] = "";
  if (usable_ranks(why, sizeof why) == 0) {
    assert_true(strlen(why) > 10); /* a reason, not an empty error */
    fprintf(stderr, "nccl unavailable here: %s\n", why);
  }
}

#ifdef BS_HAVE_NCCL
static atomic_int bad;

static bs_status to_dev(void **d, const void *h, size_t n) {
  if (cudaMalloc(d, n ? n : 1) != cudaSuccess ||
      cudaMemcpy(*d, h, n, cudaMemcpyHostToDevice) != cudaSuccess)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "device buffer of %zu bytes", n);
  return BS_OK;
}

static void expect_dev(const void *d, const float *want, size_t count) {
  float got[64];
  cudaMemcpy(got, d, count * sizeof *got, cudaMemcpyDeviceToHost);
  for (size_t i = 0; i < count; i++)
    if (got[i] != want[i])
      atomic_fetch_add(&bad, 1);
}

/* fp32 all_gather, reduce_scatter (sum), all_reduce (max), broadcast. */
static bs_status collectives(bs_comm *c, void *arg) {
  (void)arg;
  bs_status st = BS_OK;
  int r = bs_comm_rank(c), n = bs_comm_size(c);
  float in[MAX_RANKS * 4], want[MAX_RANKS * 4];
  void *din = NULL, *dout = NULL;
  for (int i = 0; i < n * 4; i++)
    in[i] = (float)(r * 100 + i);
  BS_CHECK(to_dev(&din, in, sizeof in));
  BS_CHECK(to_dev(&dout, in, sizeof in));
  BS_CHECK(bs_comm_all_gather(c, din, dout, 4, BS_F32));
  for (int i = 0; i < n * 4; i++)
    want[i] = (float)((i / 4) * 100 + i % 4);
  expect_dev(dout, want, (size_t)n * 4);
  BS_CHECK(bs_comm_reduce_scatter(c, din, dout, 4, BS_F32, BS_SUM));
  for (int i = 0; i < 4; i++)
    want[i] = (float)(100 * n * (n - 1) / 2 + n * (r * 4 + i));
  expect_dev(dout, want, 4);
  BS_CHECK(bs_comm_all_reduce(c, din, dout, 4, BS_F32, BS_MAX));
  for (int i = 0; i < 4; i++)
    want[i] = (float)((n - 1) * 100 + i);
  expect_dev(dout, want, 4);
  BS_CHECK(bs_comm_broadcast(c, din, 4, BS_F32, n - 1));
  expect_dev(din, want, 4);
  BS_CHECK(bs_comm_barrier(c));
out:
  cudaFree(din);
  cudaFree(dout);
  return st;
}

static bs_world *run(int n, int timeout_ms, bool fingerprint, bs_rank_fn fn,
                     bs_status want) {
  bs_world_opts o = {.backend = "nccl",
                     .size = n,
                     .timeout_ms = timeout_ms,
                     .fingerprint = fingerprint};
  bs_world *w = NULL;
  assert_int_equal(bs_world_create(&o, &w), BS_OK);
  assert_int_equal(bs_world_run(w, NULL, fn, NULL), want);
  bs_err_clear();
  return w;
}

static void test_collectives(void **state) {
  (void)state;
  NEED_RANKS(1);
  atomic_store(&bad, 0);
  bs_world_destroy(run(n, 10000, true, collectives, BS_OK));
  assert_int_equal(atomic_load(&bad), 0);
}

/* The communicator across sleep on real NCCL: destroyed (finalized), a
 * collective is refused; re-created from a fresh unique id, collectives
 * move bytes again, twice over. */
static bs_status recreated(bs_comm *c, void *arg) {
  bs_status st = BS_OK;
  for (int round = 0; round < 2; round++) {
    BS_CHECK(bs_comm_destroy(c));
    if (bs_comm_barrier(c) != BS_ERR_STATE)
      return bs_err_fail(BS_ERR_INTERNAL, NULL, "a destroyed comm was used");
    bs_err_clear();
    BS_CHECK(bs_comm_init(c, "wake_up"));
    BS_CHECK(collectives(c, arg));
  }
out:
  return st;
}

static void test_destroy_and_init(void **state) {
  (void)state;
  NEED_RANKS(1);
  atomic_store(&bad, 0);
  bs_world_destroy(run(n, 10000, true, recreated, BS_OK));
  assert_int_equal(atomic_load(&bad), 0);
}

/* The same under torch 2.3-2.5's teardown (BS_NCCL_TEARDOWN=abort):
 * each destroy is an ncclCommAbort, and the next init still works. */
static void test_destroy_by_abort_and_init(void **state) {
  (void)state;
  NEED_RANKS(1);
  atomic_store(&bad, 0);
  setenv("BS_NCCL_TEARDOWN", "abort", 1);
  bs_world_destroy(run(n, 10000, true, recreated, BS_OK));
  unsetenv("BS_NCCL_TEARDOWN");
  assert_int_equal(atomic_load(&bad), 0);
}

static bs_status agrees(bs_comm *c, void *arg) {
  (void)arg;
  bs_status mine = BS_OK;
  if (bs_comm_rank(c) == bs_comm_size(c) - 1)
    mine = bs_err_fail(BS_ERR_HASH_MISMATCH, "w", "last rank saw it");
  return bs_comm_agree(c, mine);
}

static void test_agree(void **state) {
  (void)state;
  NEED_RANKS(1);
  bs_world *w = run(n, 10000, false, agrees, BS_ERR_HASH_MISMATCH);
  for (int r = 0; r < n; r++) {
    bs_error e;
    assert_int_equal(bs_world_rank_status(w, r, &e), BS_ERR_HASH_MISMATCH);
    assert_int_equal(e.rank, n - 1);
  }
  bs_world_destroy(w);
}

static bs_status size_mismatch(bs_comm *c, void *arg) {
  (void)arg;
  float h[64] = {0};
  void *d = NULL;
  bs_status st = to_dev(&d, h, sizeof h);
  if (st == BS_OK)
    st = bs_comm_all_gather(c, d, (float *)d + 8, bs_comm_rank(c) ? 3 : 4,
                            BS_F32);
  cudaFree(d);
  return st;
}

static void test_fingerprint(void **state) {
  (void)state;
  NEED_RANKS(2);
  bs_world *w = run(n, 10000, true, size_mismatch, BS_ERR_DESYNC);
  assert_non_null(strstr(bs_world_report(w), "fingerprint mismatch"));
  bs_world_destroy(w);
}

/* Rank 0 leaves before the second all-reduce: its peers hang inside NCCL
 * until the timeout aborts their communicators. */
static bs_status skips_one(bs_comm *c, void *arg) {
  (void)arg;
  float h[4] = {0};
  void *d = NULL;
  bs_status st = to_dev(&d, h, sizeof h);
  if (st == BS_OK)
    st = bs_comm_all_reduce(c, d, d, 4, BS_F32, BS_SUM);
  if (st == BS_OK && bs_comm_rank(c) != 0)
    st = bs_comm_all_reduce(c, d, d, 4, BS_F32, BS_SUM);
  cudaFree(d);
  return st;
}

static void test_hang_is_contained(void **state) {
  (void)state;
  NEED_RANKS(2);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  bs_world *w = run(n, 1500, false, skips_one, BS_ERR_TIMEOUT);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_true(t1.tv_sec - t0.tv_sec < 30);
  assert_non_null(strstr(bs_world_report(w), "missing from #2: rank 0"));
  fprintf(stderr, "%s", bs_world_report(w));
  bs_world_destroy(w);
}

/* A group of ranks 0 and 1 (a communicator of its own) all-reduces; then
 * every rank sends its rank to the next of a ring and receives the
 * previous one's, in one batch. */
static bs_status group_and_ring(bs_comm *c, void *arg) {
  (void)arg;
  int r = bs_comm_rank(c), n = bs_comm_size(c), pair[2] = {0, 1};
  float h[4] = {(float)r + 1, (float)r + 1, (float)r + 1, (float)r + 1};
  float from[1] = {-1}, mine[1] = {(float)r};
  void *d = NULL, *out = NULL, *in = NULL;
  bs_comm *g = NULL;
  bs_status st = to_dev(&d, h, sizeof h);
  if (st == BS_OK)
    st = to_dev(&out, mine, sizeof mine);
  if (st == BS_OK)
    st = to_dev(&in, from, sizeof from);
  if (st == BS_OK && r < 2)
    st = bs_comm_group(c, "pair", "pair_of_two", pair, 2, &g);
  if (st == BS_OK && g)
    st = bs_comm_all_reduce(g, d, d, 4, BS_F32, BS_SUM);
  float want[4] = {3, 3, 3, 3}, prev[1] = {(float)((r + n - 1) % n)};
  if (st == BS_OK && g)
    expect_dev(d, want, 4);
  bs_p2p_op ops[2] = {
      {.send = true, .buf = out, .count = 1, .dt = BS_F32, .peer = (r + 1) % n},
      {.buf = in, .count = 1, .dt = BS_F32, .peer = (r + n - 1) % n}};
  if (st == BS_OK)
    st = bs_comm_p2p(c, ops, 2);
  if (st == BS_OK)
    expect_dev(in, prev, 1);
  bs_comm_group_free(g);
  cudaFree(d);
  cudaFree(out);
  cudaFree(in);
  return st;
}

static void test_group_and_p2p(void **state) {
  (void)state;
  NEED_RANKS(2);
  atomic_store(&bad, 0);
  bs_world_destroy(run(n, 10000, true, group_and_ring, BS_OK));
  assert_int_equal(atomic_load(&bad), 0);
}

/* Rank 1 waits to receive from rank 0, which never sends: the timeout
 * aborts it, and the report blames rank 0. */
static bs_status never_sent(bs_comm *c, void *arg) {
  (void)arg;
  float h[4] = {0};
  void *d = NULL;
  bs_status st = to_dev(&d, h, sizeof h);
  if (st == BS_OK && bs_comm_rank(c) == 1)
    st = bs_comm_p2p_recv(c, d, 4, BS_F32, 0);
  cudaFree(d);
  return st;
}

static void test_missing_send_is_contained(void **state) {
  (void)state;
  NEED_RANKS(2);
  bs_world *w = run(n, 1500, false, never_sent, BS_ERR_TIMEOUT);
  const char *rep = bs_world_report(w);
  fprintf(stderr, "%s", rep);
  assert_non_null(strstr(rep, "rank 1: recv #1 from rank 0 (4 x fp32)"));
  assert_non_null(strstr(rep, "culprit: rank 0"));
  bs_world_destroy(w);
}

/* A teardown that is neither: the world is refused, naming the variable
 * and the choices (before any GPU is asked for, so on every machine). */
static void test_bad_teardown_is_refused(void **state) {
  (void)state;
  bs_world_opts o = {.backend = "nccl", .size = 1};
  bs_world *w = NULL;
  setenv("BS_NCCL_TEARDOWN", "polite", 1);
  bs_status st = bs_world_create(&o, &w);
  unsetenv("BS_NCCL_TEARDOWN");
  bs_world_destroy(w);
  assert_int_equal(st, BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "BS_NCCL_TEARDOWN='polite'"));
  assert_non_null(strstr(bs_err()->message, "finalize"));
  bs_err_clear();
}
#endif

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unavailable_says_why),
#ifdef BS_HAVE_NCCL
      cmocka_unit_test(test_collectives),
      cmocka_unit_test(test_destroy_and_init),
      cmocka_unit_test(test_destroy_by_abort_and_init),
      cmocka_unit_test(test_bad_teardown_is_refused),
      cmocka_unit_test(test_agree),
      cmocka_unit_test(test_fingerprint),
      cmocka_unit_test(test_hang_is_contained),
      cmocka_unit_test(test_group_and_p2p),
      cmocka_unit_test(test_missing_send_is_contained),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
