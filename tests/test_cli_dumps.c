/* `backstop analyze` and `backstop replay` as a user runs them: on
 * PyTorch's own dumps and on a failing run's artifacts, the same
 * collective and culprit as the framework's report; the same replay report
 * every time; exit statuses 0 / 1 / 2; the world limit a usage error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/bs_json.h"
#include "bs_test_cli.h"
#include "bs_test_split.h"
#include "dev/bs_dev.h"

static void has(const char *text, const char *what) {
  if (!strstr(text, what))
    fail_msg("no '%s' in:\n%s", what, text);
}

/* The culprit line, up to its reason. */
static char *culprit(const char *text) {
  static char line[256];
  const char *at = strstr(text, "  culprit: ");
  assert_non_null(at);
  snprintf(line, sizeof line, "%.*s", (int)strcspn(at, "("), at);
  return line;
}

/* The report without its one line of times. */
static char *timeless(const char *text) {
  char *s = strdup(text), *at = strstr(s, "  stall -> detection:");
  if (at)
    *at = '\0';
  return s;
}

static void test_torch_dumps(void **state) {
  (void)state;
  assert_int_equal(backstop("analyze " BS_TEST_DATA "/fr/desync4"), 1);
  has(out_text, "  culprit: ranks 1,3 (");
  has(out_text, "  first mismatch: #2, size:");
  assert_int_equal(backstop("replay " BS_TEST_DATA "/fr/desync4"), 1);
  has(out_text, "backstop: desync at collective #2 (4 ranks, sim backend)");
  has(out_text, "  culprit: ranks 1,3 (");
  char *first = timeless(out_text);
  assert_int_equal(backstop("replay " BS_TEST_DATA "/fr/desync4"), 1);
  char *again = timeless(out_text);
  assert_string_equal(first, again); /* same dump, same report */
  free(first);
  free(again);
  /* Only rank 0 dumped: rank 1 is missing, in both. */
  assert_int_equal(backstop("analyze " BS_TEST_DATA "/fr/desync2"), 1);
  has(out_text, "  culprit: rank 1 (missing from #2)");
  assert_int_equal(backstop("replay " BS_TEST_DATA "/fr/desync2 "
                            "--timeout-ms 200"),
                   1);
  has(out_text, "backstop: timeout at collective #2");
  has(out_text, "  culprit: rank 1 (missing from #2)");
  /* Too few bytes allowed: counts replaced, the same culprit. */
  assert_int_equal(backstop("replay " BS_TEST_DATA "/fr/desync4 "
                            "--max-mib 1"),
                   1);
  has(out_text, "  counts replaced: 1024 -> 1, 54242 -> 2, 56974 -> 3");
  has(out_text, "  culprit: ranks 1,3 (");
}

/* A folder with dumps of its own is read without its sub-folders, and
 * says which held dumps (a node's folder beside the others' files). */
static void test_unread_folders(void **state) {
  (void)state;
  char cmd[1024];
  const char *src = BS_TEST_DATA "/fr/desync4";
  snprintf(cmd, sizeof cmd,
           "cd %s && mkdir -p mixed/node1 mixed/notes && cp %s/rank_0 "
           "%s/rank_1 mixed/ && cp %s/rank_2 %s/rank_3 mixed/node1/ && "
           "echo x > mixed/notes/a.txt",
           dir, src, src, src, src);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(backstop("analyze mixed"), 1);
  has(err_text, "backstop analyze: not read: the dumps in node1 (");
  assert_null(strstr(err_text, "notes"));
  assert_int_equal(backstop("analyze " BS_TEST_DATA "/fr/desync4"), 1);
  assert_null(strstr(err_text, "not read"));
}

/* A failing run's artifacts: analyze and replay blame whom report.txt
 * blames. */
static void test_own_artifacts(void **state) {
  (void)state;
  assert_int_equal(backstop("run frozen-params --mutant skip-frozen-backup "
                            "--ranks 8 -q --artifacts art"),
                   1);
  char *report = slurp("art/frozen-params-r8-s0-skip-frozen-backup/report.txt");
  char want[256], at[64];
  snprintf(want, sizeof want, "%s", culprit(report));
  assert_string_equal(want, "  culprit: ranks 1,3,5,7 ");
  const char *hash = strstr(report, " at collective #");
  assert_non_null(hash);
  snprintf(at, sizeof at, "%.*s", (int)strcspn(hash + 1, "(") + 1, hash);
  assert_int_equal(
      backstop("analyze art/frozen-params-r8-s0-skip-frozen-backup"), 1);
  assert_string_equal(culprit(out_text), want);
  has(out_text, at);
  assert_int_equal(
      backstop("replay art/frozen-params-r8-s0-skip-frozen-backup"), 1);
  assert_string_equal(culprit(out_text), want);
  has(out_text, at);
  free(report);
}

static void test_clean_and_bad_input(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/clean/rank_0.json", dir);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "mkdir -p %s/clean", dir);
  assert_int_equal(system(cmd), 0);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("{\"version\": \"2.10\", \"pg_config\": {\"0\": {\"name\": \"0\", "
        "\"desc\": \"default_pg\", \"ranks\": \"[0]\"}}, \"entries\": "
        "[{\"collective_seq_id\": 1, \"profiling_name\": \"nccl:all_reduce\", "
        "\"input_sizes\": [[4]], \"input_dtypes\": [\"Float\"], "
        "\"output_sizes\": [[4]], \"output_dtypes\": [\"Float\"], "
        "\"state\": \"completed\"}]}",
        f);
  fclose(f);
  assert_int_equal(backstop("analyze clean"), 0);
  has(out_text, "no hang and no desync in 1 dump of 1 ranks");
  assert_int_equal(backstop("replay clean"), 0);
  has(out_text, "every replayed op completed on every rank");
  has(out_text, "backstop replay: reproduced: ");
  /* Usage errors: one line on stderr, exit 2. */
  assert_int_equal(backstop("analyze"), 2);
  has(err_text, "backstop analyze: expected the folder");
  assert_int_equal(backstop("analyze /nonexistent/dumps"), 2);
  has(err_text, "backstop analyze: /nonexistent/dumps: cannot open");
  assert_int_equal(backstop("analyze clean --frobnicate"), 2);
  assert_int_equal(backstop("replay clean --backend gloo"), 2);
  has(err_text, "backstop replay: --backend: 'gloo' is not sim or nccl");
  assert_int_equal(backstop("replay clean --timeout-ms 0"), 2);
  has(err_text, "backstop replay: --timeout-ms: '0' is not an integer in [1,");
  assert_int_equal(backstop("replay clean --frobnicate 1"), 2);
  has(err_text, "backstop replay: unknown option or a value missing after "
                "'--frobnicate'");
  /* NCCL on host buffers: an illegal address to its kernels, refused. */
  assert_int_equal(backstop("replay clean --backend nccl --device host"), 2);
  has(err_text, "--backend nccl needs --device cuda");
  assert_int_equal(backstop("replay"), 2);
  /* No GPU: refused before anything runs, saying why. */
  if (bs_dev_cuda_count() == 0) {
    assert_int_equal(
        backstop("replay " BS_TEST_DATA "/fr/desync4 --backend nccl"), 2);
    has(err_text, "backstop replay: --backend nccl: no ");
  }
}

/* A file of dir parsed as JSON (fails the test where it does not parse). */
static void parse(const char *path, bs_json *j) {
  char *text = slurp(path);
  assert_true(text[0]);
  assert_int_equal(bs_json_parse(text, strlen(text), j), BS_OK);
  free(text);
}

/* The root of cycle3 (rank 5 skipped dp #2), as analyze --json and replay
 * --json write it. */
static void root_is_rank5(const bs_json *j, const char *verdict) {
  const bs_json *roots = bs_json_get(j, "roots");
  assert_string_equal(bs_json_get_str(j, "schema", ""),
                      "backstop-hang-report/1");
  assert_string_equal(bs_json_get_str(j, "verdict", ""), verdict);
  assert_non_null(roots);
  assert_int_equal(roots->n, 1);
  assert_int_equal(bs_json_get_int(&roots->items[0], "rank", -1), 5);
  assert_string_equal(bs_json_get_str(&roots->items[0], "kind", ""), "skipped");
  assert_string_equal(bs_json_get_str(&roots->items[0], "desc", ""), "mesh_dp");
  assert_int_equal(bs_json_get_int(&roots->items[0], "op", -1), 2);
}

/* --json, --graph and --trace: each written whole, the JSON's roots those
 * of the text, the graph through dot where it is installed, the trace a
 * Chrome trace; a path that cannot be written is named (exit 1), an
 * option without its value is a usage error (exit 2). */
static void test_outputs(void **state) {
  (void)state;
  bs_json j = {0}, t = {0};
  assert_int_equal(backstop("analyze " BS_TEST_DATA "/fr/torch-cycle3 "
                            "--json v.json --graph g.dot --trace t.json"),
                   1);
  has(out_text, "  root: rank 5 skipped all_reduce #2 of process group 8");
  parse("v.json", &j);
  root_is_rank5(&j, "hang");
  assert_int_equal(bs_json_get(&j, "stuck")->n, 3);
  bs_json_free(&j);
  char *dot = slurp("g.dot");
  has(dot, "digraph waits {");
  has(dot, "rank 5\\nskipped all_reduce #2 of process group 8");
  free(dot);
  char cmd[256];
  snprintf(cmd, sizeof cmd,
           "! command -v dot >/dev/null || dot -Tsvg -o /dev/null %s/g.dot",
           dir);
  assert_int_equal(system(cmd), 0);
  parse("t.json", &t);
  assert_true(bs_json_get(&t, "traceEvents")->n > 8 * 3);
  bs_json_free(&t);
  assert_int_equal(backstop("replay " BS_TEST_DATA "/fr/torch-cycle3 "
                            "--timeout-ms 300 --json r.json"),
                   1);
  parse("r.json", &j);
  root_is_rank5(&j, "hang");
  assert_true(bs_json_get(&j, "reproduced") != NULL);
  bs_json_free(&j);
  assert_int_equal(backstop("analyze " BS_TEST_DATA "/fr/torch-cycle3 "
                            "--json /nonexistent/v.json"),
                   1);
  has(err_text, "backstop analyze: --json /nonexistent/v.json: cannot write");
  assert_int_equal(backstop("analyze " BS_TEST_DATA "/fr/torch-cycle3 "
                            "--graph"),
                   2);
  has(err_text, "a value missing after '--graph'");
}

/* No root and one order deadlock, through groups 21 and 22 alone, as
 * tests/data/fr/torch-s7_p108's analyze, replay and replay --spawn write
 * it. */
static void deadlock_21_22(const char *path) {
  bs_json j = {0};
  parse(path, &j);
  assert_string_equal(bs_json_get_str(&j, "verdict", ""), "hang");
  assert_int_equal(bs_json_get(&j, "roots")->n, 0);
  const bs_json *cs = bs_json_get(&j, "cycles");
  assert_int_equal(cs->n, 1);
  assert_true(bs_json_get_bool(&cs->items[0], "order_deadlock", false));
  const bs_json *ops = bs_json_get(&cs->items[0], "ops");
  assert_int_equal(ops->n, 2);
  assert_string_equal(
      bs_json_get_str(bs_json_get(&ops->items[0], "at"), "group", ""), "21");
  assert_string_equal(
      bs_json_get_str(bs_json_get(&ops->items[1], "at"), "group", ""), "22");
  bs_json_free(&j);
}

/* Torch's gloo dumps of corpus program s7-p108: ranks 0 and 8 share groups
 * 21 and 22 and issue them in opposite orders, and neither ever issued an
 * op of the other's group, so no entry names rank 8 in 21 or rank 0 in 22.
 * Rank 8's pg_ids put it in 21 (the one group made between its 17 and 22
 * that did not complete an all_reduce without it); 22's other member is
 * not known, but every rank it may be waits in an op that waits for rank
 * 8: the cycle is certain, and said with what is not known. */
static void test_unnamed_member(void **state) {
  (void)state;
  const char *dir = BS_TEST_DATA "/fr/torch-s7_p108";
  char cmd[512];
  snprintf(cmd, sizeof cmd, "analyze %s --json v.json", dir);
  assert_int_equal(backstop(cmd), 1);
  has(out_text, "  cause: an order deadlock: a cycle of waits through 2");
  has(out_text, "  held: all_reduce #1 of process group 21 (grad_sync): "
                "rank 0 waits for rank 8 (in all_reduce #1 of process group "
                "22 (metrics)); a cycle of waits\n");
  has(out_text, "  not known: all_reduce #1 of process group 22 (metrics) "
                "waits with every member the dumps name in it (rank 8)");
  deadlock_21_22("v.json");
  /* s7-p236: the ep groups' ops wait with 3 ranks each in them; they are
   * a DeviceMesh's (pp x ep x tp, mesh_ep then mesh_tp groups), and the
   * one grid that holds every member the dumps name puts ranks 0-3 in
   * them, each in its own: the ep ops wait for them, in tp #3 behind rank
   * 2, the root; no cycle. */
  bs_json j = {0};
  assert_int_equal(backstop("analyze " BS_TEST_DATA "/fr/torch-s7_p236 "
                            "--json w.json"),
                   1);
  has(out_text, "  held: all_to_all #1 of process group 1 (mesh_ep): ranks "
                "4,8,12 wait for rank 0 (in all_reduce #3 of process group 5 "
                "(mesh_tp)); its root: rank 2\n");
  parse("w.json", &j);
  assert_int_equal(bs_json_get(&j, "cycles")->n, 0);
  assert_int_equal(bs_json_get(&j, "roots")->n, 1);
  assert_int_equal(
      bs_json_get_int(&bs_json_get(&j, "roots")->items[0], "rank", -1), 2);
  bs_json_free(&j);
  snprintf(cmd, sizeof cmd, "replay %s --timeout-ms 300 --json r.json", dir);
  assert_int_equal(backstop(cmd), 1);
  deadlock_21_22("r.json");
}

/* Corpus program P of seed 1 (bench --hangs, up to `most` ranks): the
 * bench's replay reproduces the roots its dumps name; so does `replay` of
 * the dumps it keeps, saying `says`, where given. */
static void reproduces(int p, int most, const char *says) {
  char cmd[256];
  snprintf(cmd, sizeof cmd,
           "bench --hangs 1 --seed 1 --from %d --max-ranks %d%s", p, most,
           says ? " --keep k" : "");
  assert_int_equal(backstop(cmd), 0);
  has(out_text, "its run reproduced the dumps' roots on 1 (100.0%)");
  if (!says)
    return;
  snprintf(cmd, sizeof cmd, "replay k/s1-p%d --json r.json", p);
  assert_int_equal(backstop(cmd), 1);
  has(out_text, says);
  has(out_text, "backstop replay: reproduced: ");
  bs_json j = {0};
  parse("r.json", &j);
  assert_true(bs_json_get_bool(&j, "reproduced", false));
  bs_json_free(&j);
}

/* Replays that did not reproduce their dumps before (they named the
 * dumps' verdict instead). Rings that forgot entries, each direction's
 * p2p ops aligned at its last completed one: a context-parallel pair's
 * exchange (program 33: each sends first), a pipeline of 4 (457 of up to
 * 512 ranks: ranks 1, 3 and 7 wait in p2p ops with their neighbours). A
 * rank without a dump whose peers' clocks are skewed: rank 3 (88) in
 * all_reduce #2 of the world and a p2p op with rank 9, which rank 9's
 * dump puts first (the times, taken from two ranks' clocks, put them the
 * other way round). */
static void test_replay_reproduces(void **state) {
  (void)state;
  reproduces(33, 64, NULL);
  reproduces(457, 512, "  rank 3: in send #54 to rank 5 (8 x fp32) of group 2");
  reproduces(88, 64, "  rank 3: no dump: replays the 28 ops");
}

/* Rank 3 gone before its peers issued all_reduce #2: gloo failed it on
 * all three for want of the peer and retired it, so every dump shows it
 * done, as if the job had completed with rank 3's dump lost. The rank
 * without a dump replays what the dumps show done, #2 too, and every op
 * completes: not reproduced, said so, with the dumps' own verdict (rank 3
 * missing from #2), never an all-clear. tests/fr_torch_gen.py's nodump
 * job made these dumps at times, and fr_torch_analyze failed on them. */
static void test_replay_dumpless_retired(void **state) {
  (void)state;
  assert_int_equal(
      backstop("replay " BS_TEST_DATA "/fr/torch-nodump_gone --timeout-ms 300"),
      1);
  has(out_text, "  rank 3: no dump: replays the 2 ops the dumps show "
                "completed with it");
  has(out_text, "backstop replay: not reproduced (verdict: want hang, got "
                "clean): the dumps' own verdict:\nbackstop: hang at "
                "collective #2 (4 ranks, 3 dumps");
  const char *verdict = strstr(out_text, "backstop replay: not reproduced");
  assert_non_null(verdict);
  has(verdict, "  culprit: rank 3 (missing from #2)\n");
}

/* The same deadlock replayed by a process per rank, on real time. */
static void test_unnamed_member_spawned(void **state) {
  (void)state;
  assert_int_equal(backstop("replay " BS_TEST_DATA "/fr/torch-s7_p108 "
                            "--spawn --timeout-ms 300 --json s.json"),
                   1);
  deadlock_21_22("s.json");
}

/* p2p inside groups, a process per rank: ranks 0-15 each exchange with
 * rank + 16 in a group of their own, and the others' groups differ from
 * process to process (program 13 of seed 1: rank 2 skips an all_to_all).
 * Each process numbered its groups in the order it made them, and a
 * send's file named that number: the peers looked for different files,
 * and the replay hung at its first p2p op instead of reproducing (25 of
 * 27 p2p programs of 40). */
static void test_group_p2p_spawned(void **state) {
  (void)state;
  assert_int_equal(
      backstop("bench --hangs 1 --seed 1 --from 13 --max-ranks 64 --keep k"),
      0);
  assert_int_equal(backstop("replay k/s1-p13 --spawn --json s.json"), 1);
  has(out_text, "backstop replay: reproduced: ");
  has(out_text, "  culprit: rank 2 (missing from #3)");
  bs_json j = {0};
  parse("s.json", &j);
  assert_true(bs_json_get_bool(&j, "reproduced", false));
  bs_json_free(&j);
}

/* A process per rank (--spawn; what NCCL ranks sharing a GPU get): each
 * rank's verdict, then the replayed flight recorders read as analyze reads
 * them, with analyze's culprit; the same text every time. */
static void test_spawned(void **state) {
  (void)state;
  assert_int_equal(backstop("replay " BS_TEST_DATA "/fr/desync4 --spawn"), 1);
  has(out_text, "sim backend, one process per rank");
  has(out_text, "  ranks 0-3: backstop: desync at collective #2\n");
  has(out_text, "as backstop analyze reads them:\nbackstop: desync at "
                "collective #2 (4 ranks, 4 dumps");
  has(out_text, "  culprit: ranks 1,3 (");
  char *first = strdup(out_text);
  assert_int_equal(backstop("replay " BS_TEST_DATA "/fr/desync4 --spawn"), 1);
  assert_string_equal(first, out_text);
  free(first);
  /* Rank 1 left no dump: it replays what completed, then stays out. */
  assert_int_equal(backstop("replay " BS_TEST_DATA "/fr/desync2 --spawn "
                            "--timeout-ms 200"),
                   1);
  has(out_text, "  rank 0: backstop: timeout at collective #2\n"
                "  rank 1: every collective of its plan completed\n");
  has(out_text, "  missing from #2: rank 1\n");
  has(out_text, "  culprit: rank 1 (missing from #2)");
  /* A device this machine lacks is refused before anything starts. */
  if (bs_dev_cuda_count() == 0) {
    assert_int_equal(
        backstop("replay " BS_TEST_DATA "/fr/desync4 --spawn --device cuda"),
        2);
    has(err_text, "backstop replay: --device cuda: no GPU here");
  }
}

/* Over NCCL where there is a GPU: four ranks share it, a process each
 * (ci/gpu.sh's machine has an NCCL that allows it). */
static void test_nccl(void **state) {
  (void)state;
  if (bs_dev_cuda_count() == 0)
    skip();
  int rc = backstop("replay " BS_TEST_DATA "/fr/desync4 --backend nccl");
  if (rc == 2 && strstr(err_text, "needs NCCL >= 2.30"))
    skip();
  assert_int_equal(rc, 1);
  has(out_text, "nccl backend");
  has(out_text, "  culprit: ranks 1,3 (");
}

/* A process per rank for more ranks than a launcher may start: refused
 * before anything starts, naming the way that works. */
static void test_spawn_limit(void **state) {
  (void)state;
  char path[128], cmd[160];
  snprintf(cmd, sizeof cmd, "mkdir -p %s/wide", dir);
  assert_int_equal(system(cmd), 0);
  snprintf(path, sizeof path, "%s/wide/rank_0.json", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("{\"version\": \"2.10\", \"pg_config\": {\"0\": {\"name\": \"0\", "
        "\"desc\": \"default_pg\", \"ranks\": \"[0",
        f);
  for (int r = 1; r < 1025; r++)
    fprintf(f, ", %d", r);
  fputs("]\"}}, \"entries\": [{\"collective_seq_id\": 1, "
        "\"profiling_name\": \"nccl:barrier\", \"state\": \"completed\"}]}",
        f);
  fclose(f);
  assert_int_equal(backstop("replay wide --spawn"), 2);
  has(err_text, "backstop replay: 1025 ranks would take a process each, "
                "more than the 1024 allowed");
}

/* A process per rank needs a descriptor each in the parent: a low soft
 * limit is raised, a low hard one refused naming it. */
static void test_spawn_open_files(void **state) {
  (void)state;
  const char *args = "replay " BS_TEST_DATA "/fr/desync4 --spawn";
  /* raised: the desync replayed */
  assert_int_equal(backstop_after("ulimit -Sn 40 && ", args), 1);
  assert_int_equal(backstop_after("ulimit -n 40 && ", args), 2);
  has(err_text, "backstop replay: 4 processes need 68 open files, more than "
                "this shell's hard limit of 40 (ulimit -Hn)");
}

/* One world limit (BS_WORLD_MAX_RANKS, the layout's and replay's too):
 * --ranks says it, 16385 is a usage error. */
static void test_world_limit(void **state) {
  (void)state;
  assert_int_equal(backstop("run steady-normal --ranks 16385"), 2);
  has(err_text, "--ranks: '16385' is not an integer in [1, 16384]");
}

static int setup(void **state) {
  (void)state;
  return cli_setup("bs_dumps_cli_");
}

static int teardown(void **state) {
  (void)state;
  return cli_teardown();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_torch_dumps),
      cmocka_unit_test(test_unread_folders),
      cmocka_unit_test(test_own_artifacts),
      cmocka_unit_test(test_clean_and_bad_input),
      cmocka_unit_test(test_outputs),
      cmocka_unit_test(test_unnamed_member),
      cmocka_unit_test(test_unnamed_member_spawned),
      cmocka_unit_test(test_replay_reproduces),
      cmocka_unit_test(test_replay_dumpless_retired),
      cmocka_unit_test(test_world_limit),
      cmocka_unit_test(test_spawn_limit),
      cmocka_unit_test(test_spawn_open_files),
      cmocka_unit_test(test_spawned),
      cmocka_unit_test(test_group_p2p_spawned),
      cmocka_unit_test(test_nccl),
  };
  /* Replays of a process per rank, with real-time timeouts: label slow. */
  static const char *const slow[] = {"test_unnamed_member_spawned",
                                     "test_spawned", "test_group_p2p_spawned",
                                     NULL};
  return BS_TEST_RUN_SPLIT(tests, slow, setup, teardown);
}
