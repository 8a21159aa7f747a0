/* `replay` of dumps with several process groups and p2p: the sim world's
 * own dumps of a TP x DP job whose rank 3 skips its DP all_reduce, and of
 * a pipeline whose rank 2 never sends, replayed: the replay names the
 * stuck group, op and culprit of the job. */
#include "bs_test_groups.h"

#include <unistd.h>

#include "bs_file.h"
#include "dumps/bs_dumps.h"
#include "dumps/bs_dumps_report.h"
#include "dumps/bs_replay.h"

static char dir[64];

static void has(const char *text, const char *what) {
  if (!strstr(text, what))
    fail_msg("no '%s' in:\n%s", what, text);
}

/* The world's flight recorders as rank<R>.flight.json in a fresh dir. */
static void dump(bs_world *w) {
  snprintf(dir, sizeof dir, "/tmp/bs-replay-groups.XXXXXX");
  assert_non_null(mkdtemp(dir));
  for (int r = 0; r < TG_N; r++) {
    char path[128];
    char *j = bs_world_flight_json(w, r);
    assert_non_null(j);
    snprintf(path, sizeof path, "%s/rank%d.flight.json", dir, r);
    assert_int_equal(bs_file_publish(path, j, strlen(j)), BS_OK);
    free(j);
  }
}

static void made(bs_rank_fn fn, int skip) {
  tg_plan p = {.skip_rank = skip};
  bs_status st;
  bs_world *w = tg_run(fn, &p, 100, &st);
  assert_int_equal(st, BS_ERR_TIMEOUT);
  dump(w);
  bs_world_destroy(w);
}

static void analyze_and_replay(bs_dumps_verdict *v, bs_replay_result *res) {
  bs_dumps d;
  bs_replay_opts o = {.timeout_ms = 100};
  assert_int_equal(bs_dumps_load(dir, NULL, &d), BS_OK);
  assert_int_equal(bs_dumps_report(&d, v), BS_OK);
  assert_int_equal(bs_replay_run(&d, &o, res), BS_OK);
  bs_dumps_free(&d);
  fprintf(stderr, "analyze:\n%s\nreplay:\n%s\n", v->text, res->text);
  assert_int_equal(bs_file_remove_tree(dir), BS_OK);
}

static void test_stuck_group_replayed(void **state) {
  (void)state;
  bs_dumps_verdict v = {0};
  bs_replay_result res;
  made(tg_tp_dp, 3);
  analyze_and_replay(&v, &res);
  assert_int_equal(res.status, BS_ERR_TIMEOUT);
  has(res.text, "4 ranks from 4 dumps, ");
  has(res.text, "group dp1 (data_parallel)");
  has(res.text, "cause: a rank waited more than 100 ms in all_reduce #1 of "
                "group dp1");
  has(res.text, "missing from #1: rank 3\n  culprit: rank 3");
  bs_dumps_verdict_free(&v);
  bs_replay_result_free(&res);
}

static void test_missing_send_replayed(void **state) {
  (void)state;
  bs_dumps_verdict v = {0};
  bs_replay_result res;
  made(tg_pipeline, 2);
  analyze_and_replay(&v, &res);
  assert_int_equal(res.status, BS_ERR_TIMEOUT);
  has(res.text, "rank 3: recv #1 from rank 2 (8 x fp32)");
  has(res.text, "culprit: rank 2 (rank 3 waits for it in recv #1");
  bs_dumps_verdict_free(&v);
  bs_replay_result_free(&res);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stuck_group_replayed),
      cmocka_unit_test(test_missing_send_replayed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
