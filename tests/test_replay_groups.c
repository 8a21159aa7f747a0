/* `replay` of dumps with several process groups, p2p and coalesced ops:
 * the sim world's own dumps of a TP x DP job whose rank 3 skips its DP
 * all_reduce and of a pipeline whose rank 2 never sends, and PyTorch's
 * own (tests/data/fr/torch-*): the replay names the group and culprit
 * analyze names, and its flight recorders read back alike. */
#include "bs_test_groups.h"

#include <unistd.h>

#include "bs_test_cli.h"
#include "bs_test_split.h"

#include <sys/stat.h>

#include "bs_file.h"
#include "dev/bs_dev.h"
#include "dumps/bs_dumps.h"
#include "dumps/bs_dumps_report.h"
#include "dumps/bs_replay.h"

static void has(const char *text, const char *what) {
  if (!strstr(text, what))
    fail_msg("no '%s' in:\n%s", what, text);
}

/* The world's flight recorders as rank<R>.flight.json in dir/sub. */
static void dump(bs_world *w, const char *sub) {
  char folder[128];
  snprintf(folder, sizeof folder, "%s/%s", dir, sub);
  assert_int_equal(mkdir(folder, 0777), 0);
  for (int r = 0; r < TG_N; r++) {
    char path[160];
    char *j = bs_world_flight_json(w, r);
    assert_non_null(j);
    snprintf(path, sizeof path, "%s/rank%d.flight.json", folder, r);
    assert_int_equal(bs_file_publish(path, j, strlen(j)), BS_OK);
    free(j);
  }
}

static void made(bs_rank_fn fn, int skip, const char *sub) {
  tg_plan p = {.skip_rank = skip};
  bs_status st;
  bs_world *w = tg_run(fn, &p, 500, &st);
  assert_int_equal(st, BS_ERR_TIMEOUT);
  dump(w, sub);
  bs_world_destroy(w);
}

/* The replay of folder in this process blames whom analyze blames, in
 * the group analyze names, in the world's own report and in its flight
 * recorders read back; its text has every one of want (NULL-ended). */
static void agrees(const char *folder, const char *const *want) {
  bs_dumps d;
  bs_dumps_verdict v = {0};
  bs_replay_result res;
  bs_replay_opts o = {.timeout_ms = 100};
  char line[160];
  assert_int_equal(bs_dumps_load(folder, NULL, &d), BS_OK);
  assert_int_equal(bs_dumps_report(&d, &v), BS_OK);
  assert_int_equal(bs_replay_run(&d, &o, &res), BS_OK);
  bs_dumps_free(&d);
  fprintf(stderr, "analyze:\n%s\nreplay:\n%s\n", v.text, res.text);
  assert_int_not_equal(res.status, BS_OK);
  assert_int_equal(v.nculprits, 1);
  char *back = strstr(res.text, "the replayed ranks' flight recorders");
  assert_non_null(back);
  snprintf(line, sizeof line, "  culprit: rank %d (", v.culprits[0]);
  has(back, line);
  /* A p2p hang: the replayed recorders stop at the op analyze names. */
  if (!strncmp(v.text, "backstop: hang at p2p #", 23)) {
    char at[160];
    snprintf(at, sizeof at, "%.*s(", (int)strcspn(v.text, "("), v.text);
    has(back, at);
  }
  *back = '\0'; /* the world's own report, before */
  has(res.text, line);
  snprintf(line, sizeof line, ", group %s (", v.pg);
  if (strcmp(v.pg, "0") != 0)
    has(res.text, line);
  for (size_t i = 0; want[i]; i++)
    has(res.text, want[i]);
  bs_dumps_report_verdict_free(&v);
  bs_replay_result_free(&res);
}

static void replayed(const char *sub, const char *const *want) {
  char folder[128];
  snprintf(folder, sizeof folder, "%s/%s", dir, sub);
  agrees(folder, want);
}

static void test_stuck_group_replayed(void **state) {
  (void)state;
  static const char *const want[] = {
      "4 ranks from 4 dumps, ", "group dp1 (data_parallel)",
      "cause: a rank waited more than 100 ms in all_reduce #1 of group dp1",
      "missing from #1: rank 3\n  culprit: rank 3", NULL};
  replayed("dp", want);
}

static void test_missing_send_replayed(void **state) {
  (void)state;
  static const char *const want[] = {
      "rank 3: recv #1 from rank 2 (8 x fp32)",
      "culprit: rank 2 (rank 3 waits for it in recv #1", NULL};
  replayed("pipe", want);
}

/* PyTorch's own dumps: torch 2.15 on gloo (tests/data/fr/README.md) and
 * torch 2.11 on NCCL 2.30.7, 4 ranks on an H200 (tests/data/fr/nccl/),
 * each with what its report must hold besides the culprit and group. */
static void test_pytorch_dumps_replayed(void **state) {
  (void)state;
  static const struct {
    const char *folder, *want;
  } jobs[] = {
      {"torch-groups", "all_reduce #2"},
      {"torch-pipeline", "rank 3: recv #2 from rank 2"},
      /* isend and irecv of a ring: each completes on its own */
      {"torch-ring", "rank 2: recv #4 from rank 1"},
      /* one coalesced op is one collective, numbered as analyze does */
      {"torch-coalesced", "desync at collective #2 (4 ranks, sim"},
      {"torch-coalesced", "rank 0: all_reduce #2 ("},
      {"torch-nodump", "missing from #2: rank 3"},
      /* ops the communicator lacks: stand-ins, under their own names */
      {"torch-a2a", "stand-ins (the communicator has none of these; each "
                    "recorded and compared under its own name): all_to_all "
                    "as barrier\n"},
      {"torch-a2a", "ranks 0-1,3: all_to_all #2"},
      {"torch-gather", "gather as all_reduce\n"},
      {"torch-gather", "ranks 0-1,3: gather #2 (4 x fp32)"},
      {"nccl/groups", "all_reduce #2"},
      {"nccl/p2p", "rank 3: recv #2 from rank 2"},
      {"nccl/coalesced", "desync at collective #2 (4 ranks, sim"},
      {"nccl/coalesced", "rank 1: all_reduce #2 ("},
      {"nccl/nodump", "missing from #4: rank 3"},
      {"nccl/size", "desync at collective #3"},
      {"nccl/op", "desync at collective #3"},
      {"nccl/skip", "missing from #4: rank 3"},
      {"nccl/a2a", "ranks 0-1,3: all_to_all #2"},
      /* batch_isend_irecv: its end marker's state, its parts' peers */
      {"nccl/batch", "rank 0: send #2 to rank 1 (1024 x fp32)"},
  };
  for (size_t k = 0; k < sizeof jobs / sizeof jobs[0]; k++) {
    char folder[256];
    const char *want[] = {jobs[k].want, NULL};
    snprintf(folder, sizeof folder, "%s/fr/%s", BS_TEST_DATA, jobs[k].folder);
    agrees(folder, want);
  }
}

/* More ranks than run at once (BS_WORLD_RUNNING_MAX, 64: they take
 * turns), in TP pairs; the last skips the world's all_reduce. */
enum { WIDE = 96 };

static bs_status wide_rank(bs_comm *c, void *arg) {
  tg_plan *p = arg;
  int r = bs_comm_rank(c), pair[2] = {r & ~1, r | 1};
  char name[16];
  float buf[TG_COUNT] = {0};
  bs_comm *tp = NULL;
  snprintf(name, sizeof name, "tp%d", r / 2);
  bs_status st = bs_comm_group(c, name, "tensor_parallel", pair, 2, &tp);
  if (st == BS_OK)
    st = bs_comm_all_reduce(tp, buf, buf, TG_COUNT, BS_F32, BS_SUM);
  if (st == BS_OK && r == WIDE - 1)
    tg_wait(c, p);
  else if (st == BS_OK)
    st = bs_comm_all_reduce(c, buf, buf, TG_COUNT, BS_F32, BS_SUM);
  if (st != BS_OK)
    atomic_store(&p->failed, 1);
  bs_comm_group_free(tp);
  return st;
}

/* A replay of more ranks than run at once: their waits before and after
 * their plans give their turns (else the ranks still to start never get
 * one, and the replay never ends), and it names the skipper. */
static void test_wide_replay_ends(void **state) {
  (void)state;
  tg_plan p = {.skip_rank = WIDE - 1};
  bs_world_opts o = {.size = WIDE, .timeout_ms = 300, .fingerprint = true};
  bs_world *w = NULL;
  void *args[WIDE];
  char path[192];
  for (int r = 0; r < WIDE; r++)
    args[r] = &p;
  assert_int_equal(bs_world_create(&o, &w), BS_OK);
  assert_int_equal(bs_world_run(w, NULL, wide_rank, args), BS_ERR_TIMEOUT);
  bs_err_clear();
  snprintf(path, sizeof path, "%s/wide", dir);
  assert_int_equal(mkdir(path, 0777), 0);
  assert_int_equal(bs_world_dump_flight(w, path), BS_OK);
  bs_world_destroy(w);
  /* Bounded: a replay that never ends is killed (status 137). */
  assert_int_equal(
      backstop_after("timeout -s KILL 60 ", "replay wide --timeout-ms 300"), 1);
  has(out_text, "backstop replay: 96 ranks from 96 dumps, 49 process groups");
  has(out_text, "culprit: rank 95 (missing from #1)");
  /* 48 TP groups completed: 16 named, then their number, in one line. */
  has(out_text, "(tensor_parallel) and 32 more (every member's every entry "
                "done)\n");
}

/* Up to 1024 ranks every collective is replayed, those every rank's dump
 * shows done alike too (the order of a rank's ops across its groups then
 * reads back as in the dumps): nccl/skip's ranks did #1-#3, rank 3 skips
 * #4, 15 ops, and the replayed flight recorders read as the dumps do. */
static void test_settled_not_replayed(void **state) {
  (void)state;
  static const char *const want[] = {
      "4 ranks from 4 dumps, 1 process group, 15 ops,",
      "rank 3: not in a collective (last completed #3)", NULL};
  char folder[256];
  snprintf(folder, sizeof folder, "%s/fr/nccl/skip", BS_TEST_DATA);
  agrees(folder, want);
}

/* A job whose rank 3 left no dump while its peers' dumps show every op
 * done (gloo retires an op whose peer is gone): the replay completes
 * everything, which is no all-clear: it did not reproduce the dumps'
 * verdict, and says theirs: rank 3 is the culprit, as analyze's
 * missing-rank rule has it. */
/* The dumps of a TP x DP job that completed, but those of ranks `kept`
 * and above, in dir/sub. */
static void kept_dumps(const char *sub, int kept, char *folder, size_t n) {
  tg_plan p = {.skip_rank = -1};
  bs_status st;
  bs_world *w = tg_run(tg_tp_dp, &p, 500, &st);
  char path[192];
  assert_int_equal(st, BS_OK);
  snprintf(folder, n, "%s/%s", dir, sub);
  assert_int_equal(mkdir(folder, 0777), 0);
  for (int r = 0; r < kept; r++) {
    snprintf(path, sizeof path, "%s/rank%d.flight.json", folder, r);
    assert_int_equal(bs_file_publish(path, p.flight[r], strlen(p.flight[r])),
                     BS_OK);
  }
  bs_world_destroy(w);
}

static void test_dumpless_all_done_not_clear(void **state) {
  (void)state;
  char folder[128];
  kept_dumps("gone", TG_N - 1, folder, sizeof folder);
  bs_dumps d;
  bs_dumps_verdict v = {0};
  bs_replay_result res;
  bs_replay_opts o = {.timeout_ms = 100};
  assert_int_equal(bs_dumps_load(folder, NULL, &d), BS_OK);
  assert_int_equal(bs_dumps_report(&d, &v), BS_OK);
  assert_int_equal(bs_replay_run(&d, &o, &res), BS_OK);
  bs_dumps_free(&d);
  fprintf(stderr, "analyze:\n%s\nreplay:\n%s\n", v.text, res.text);
  assert_int_equal(v.nculprits, 1);
  assert_int_equal(v.culprits[0], 3);
  assert_int_equal(res.status, BS_ERR_STATE);
  has(res.text, "rank 3 left no dump");
  has(res.text, "backstop replay: not reproduced (verdict: want hang, got "
                "clean): the dumps' own verdict:\n");
  /* The verdict comes last: the dumps' (the replay's own ranks completed
   * what it replayed, which their read-back says). */
  const char *verdict = strstr(res.text, "backstop replay: not reproduced");
  assert_non_null(verdict);
  has(verdict, "  culprit: rank 3 (missing from #1)\n");
  assert_null(strstr(verdict, "no hang and no desync"));
  bs_dumps_report_verdict_free(&v);
  bs_replay_result_free(&res);
}

/* Ranks 2 and 3 left no dump (thousands do in a job killed while it
 * dumped): they replay what rank 0's and rank 1's dumps show done with
 * them, said in one line, and are the culprits. */
static void test_dumpless_ranks_one_line(void **state) {
  (void)state;
  char folder[128];
  kept_dumps("gone2", 2, folder, sizeof folder);
  bs_dumps d;
  bs_replay_result res;
  bs_replay_opts o = {.timeout_ms = 100};
  assert_int_equal(bs_dumps_load(folder, NULL, &d), BS_OK);
  assert_int_equal(bs_replay_run(&d, &o, &res), BS_OK);
  bs_dumps_free(&d);
  fprintf(stderr, "replay:\n%s\n", res.text);
  assert_int_not_equal(res.status, BS_OK);
  has(res.text, "\n  ranks 2-3: no dump: replay the 1 ops the dumps show "
                "completed with them, then stay out of every op\n");
  /* in one line: the head has no line of its own for rank 2 */
  const char *world = strstr(res.text, "\nbackstop");
  assert_non_null(world);
  assert_true(!strstr(res.text, "rank 2: no dump") ||
              strstr(res.text, "rank 2: no dump") > world);
  has(res.text, "  culprit: ranks 2-3 (");
  bs_replay_result_free(&res);
}

/* The same through the binary, as a user runs it. */
static void test_cli_replay(void **state) {
  (void)state;
  assert_int_equal(backstop("replay dp --timeout-ms 100"), 1);
  has(out_text, "culprit: rank 3 (missing from #1)");
  assert_int_equal(backstop("replay pipe --timeout-ms 100"), 1);
  has(out_text, "culprit: rank 2 (rank 3 waits for it in recv #1");
}

/* A process per rank: the groups' boards in files of their own (real
 * processes whose timeouts are real time: only test_replay_groups, on real
 * threads, label slow, runs it; its scheduled twins leave it out). */
static void test_cli_replay_spawn(void **state) {
  (void)state;
  assert_int_equal(backstop("replay dp --spawn --timeout-ms 300"), 1);
  has(out_text, "  rank 1: backstop: timeout at collective #1 (4 ranks, sim "
                "backend, group dp1 (data_parallel))\n");
  /* The processes' part names the culprit too (each process knows only
   * its rank: the line is the read-back's). */
  has(out_text, "(data_parallel))\n  culprit: rank 3 (missing from #1)\n"
                "the replayed ranks' flight recorders");
  /* p2p across processes: each send a file the recv takes. */
  assert_int_equal(backstop("replay pipe --spawn --timeout-ms 300"), 1);
  has(out_text, "  rank 3: backstop: timeout at collective #1");
  has(out_text, "  culprit: rank 2 (rank 3 waits in recv from rank 2");
}

/* Over NCCL where there is a GPU (a process per rank where they share
 * one): the stuck rank's verdict names the group, and the replayed flight
 * recorders, read as analyze reads them, the op and the culprit. */
static void test_cli_replay_nccl(void **state) {
  (void)state;
  if (bs_dev_cuda_count() == 0) {
    fprintf(stderr, "skipped: replay over NCCL: no usable GPU here\n");
    skip();
  }
  int rc = backstop("replay dp --backend nccl --timeout-ms 2000");
  if (rc == 2 && strstr(err_text, "needs NCCL >= 2.30")) {
    fprintf(stderr, "skipped: replay over NCCL: %s", err_text);
    skip();
  }
  fprintf(stderr, "%s%s", out_text, err_text);
  assert_int_equal(rc, 1);
  has(out_text, "nccl backend");
  has(out_text, "group dp1 (data_parallel)");
  has(out_text, "culprit: rank 3");
  assert_int_equal(backstop("replay pipe --backend nccl --timeout-ms 2000"), 1);
  fprintf(stderr, "%s%s", out_text, err_text);
  has(out_text, "rank 3: recv from rank 2, p2p #1");
  has(out_text, "culprit: rank 2");
}

static int setup(void **state) {
  (void)state;
  if (cli_setup("bs-replay-groups-") != 0)
    return -1;
  made(tg_tp_dp, 3, "dp");
  made(tg_pipeline, 2, "pipe");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return cli_teardown();
}

/* Counts replaced are listed, and numbered, in the order of their text:
 * torch's coalesced all_reduce of [[4], [2], [3]] on rank 0 and [[4], [5]]
 * on ranks 1-3 (one total, two shapes: replaced so that they differ) comes
 * out the same way on every run (by the interned strings' addresses it
 * need not). */
static void test_replaced_counts_by_text(void **state) {
  (void)state;
  bs_dumps d;
  bs_replay_result res;
  bs_replay_opts o = {.timeout_ms = 100};
  char folder[256];
  snprintf(folder, sizeof folder, "%s/fr/torch-coalesced", BS_TEST_DATA);
  assert_int_equal(bs_dumps_load(folder, NULL, &d), BS_OK);
  assert_int_equal(bs_replay_run(&d, &o, &res), BS_OK);
  bs_dumps_free(&d);
  assert_true(res.scaled);
  has(res.text, "9 ([[4], [2], [3]]) -> 2, 9 ([[4], [5]]) -> 3");
  has(res.text, "desync at collective #2");
  bs_replay_result_free(&res);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_stuck_group_replayed),
      cmocka_unit_test(test_missing_send_replayed),
      cmocka_unit_test(test_pytorch_dumps_replayed),
      cmocka_unit_test(test_cli_replay),
      cmocka_unit_test(test_cli_replay_spawn),
      cmocka_unit_test(test_wide_replay_ends),
      cmocka_unit_test(test_settled_not_replayed),
      cmocka_unit_test(test_dumpless_all_done_not_clear),
      cmocka_unit_test(test_dumpless_ranks_one_line),
      cmocka_unit_test(test_cli_replay_nccl),
      cmocka_unit_test(test_replaced_counts_by_text),
  };
  static const char *const real_time[] = {"test_cli_replay_spawn", NULL};
  return BS_TEST_RUN_SPLIT(tests, real_time, setup, teardown);
}
