/* Test support for process groups and point-to-point (header-only:
 * CMake builds one binary per tests/test_*.c): a 4-rank sim world whose
 * ranks run TP x DP all_reduces (TP groups {0,1},{2,3}, DP {0,2},{1,3}) or
 * a pipeline 0 -> 1 -> 2 -> 3, a rank skipping its part on request, and
 * every rank's flight recorder kept. */
#ifndef BS_TEST_GROUPS_H
#define BS_TEST_GROUPS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/bs_comm.h"

enum { TG_N = 4, TG_COUNT = 8 };

/* What a test's ranks do, and what they saw. */
typedef struct tg_plan {
  int skip_rank;      /* skips its DP all_reduce, or its send (-1: none) */
  bool skipper_exits; /* returns at once (else waits for the failure) */
  atomic_int bad;
  atomic_int failed; /* a rank's op failed: the skipper may go */
  char flight[TG_N][8192];
} tg_plan;

static inline bs_world *tg_run(bs_rank_fn fn, tg_plan *p, int timeout_ms,
                               bs_status *st) {
  bs_world_opts o = {
      .size = TG_N, .timeout_ms = timeout_ms, .fingerprint = true};
  bs_world *w = NULL;
  void *args[TG_N] = {p, p, p, p};
  assert_int_equal(bs_world_create(&o, &w), BS_OK);
  *st = bs_world_run(w, NULL, fn, args);
  for (int r = 0; r < TG_N; r++) {
    char *j = bs_world_flight_json(w, r);
    assert_non_null(j);
    snprintf(p->flight[r], sizeof p->flight[r], "%s", j);
    free(j);
  }
  bs_err_clear();
  return w;
}

/* A rank that skipped its part waits (outside any op) until a peer's op
 * failed, as a rank busy elsewhere would, within 10 s of its world's
 * clock. */
static inline void tg_wait(bs_comm *c, tg_plan *p) {
  if (p->skipper_exits)
    return;
  for (int i = 0; i < 1000 && !atomic_load(&p->failed); i++)
    bs_comm_sleep_ms(c, 10);
}

/* TP groups {0,1},{2,3}, DP groups {0,2},{1,3}: an all_reduce in each. */
static inline bs_status tg_tp_dp(bs_comm *c, void *arg) {
  tg_plan *p = arg;
  int r = bs_comm_rank(c);
  int tp[2] = {r & ~1, r | 1}, dp[2] = {r & 1, (r & 1) + 2};
  char tpn[16], dpn[16];
  snprintf(tpn, sizeof tpn, "tp%d", r / 2);
  snprintf(dpn, sizeof dpn, "dp%d", r & 1);
  bs_comm *gt = NULL, *gd = NULL;
  float buf[TG_COUNT];
  bs_status st = bs_comm_group(c, tpn, "tensor_parallel", tp, 2, &gt);
  if (st == BS_OK)
    st = bs_comm_group(c, dpn, "data_parallel", dp, 2, &gd);
  for (int k = 0; st == BS_OK && k < TG_COUNT; k++)
    buf[k] = (float)(r + 1);
  if (st == BS_OK)
    st = bs_comm_all_reduce(gt, buf, buf, TG_COUNT, BS_F32, BS_SUM);
  if (st == BS_OK && buf[0] != (float)(tp[0] + tp[1] + 2))
    atomic_fetch_add(&p->bad, 1);
  if (st == BS_OK && gt && bs_comm_seq(gt) != 1)
    atomic_fetch_add(&p->bad, 1);
  if (st == BS_OK && r == p->skip_rank) {
    tg_wait(c, p);
    goto out;
  }
  if (st == BS_OK)
    st = bs_comm_all_reduce(gd, buf, buf, TG_COUNT, BS_F32, BS_SUM);
  if (st == BS_OK && bs_comm_group_rank(gd) != (r >> 1))
    atomic_fetch_add(&p->bad, 1);
out:
  bs_comm_group_free(gt);
  bs_comm_group_free(gd);
  if (st != BS_OK)
    atomic_store(&p->failed, 1);
  return st;
}

/* A pipeline 0 -> 1 -> 2 -> 3 over the world: each adds its rank. */
static inline bs_status tg_pipeline(bs_comm *c, void *arg) {
  tg_plan *p = arg;
  int r = bs_comm_rank(c);
  float buf[TG_COUNT] = {0};
  bs_status st = BS_OK;
  if (r > 0)
    st = bs_comm_p2p_recv(c, buf, TG_COUNT, BS_F32, r - 1);
  for (int k = 0; k < TG_COUNT; k++)
    buf[k] += (float)r;
  if (st == BS_OK && r == p->skip_rank) {
    tg_wait(c, p);
    return st;
  }
  if (st == BS_OK && r < TG_N - 1)
    st = bs_comm_p2p_send(c, buf, TG_COUNT, BS_F32, r + 1);
  if (st == BS_OK && r == TG_N - 1 && buf[TG_COUNT - 1] != 6.0f)
    atomic_fetch_add(&p->bad, 1);
  if (st != BS_OK)
    atomic_store(&p->failed, 1);
  return st;
}

#endif
