/* `analyze` on dumps: PyTorch's own (a size-mismatched all-gather on 4
 * ranks; only the timed-out rank of 2 dumped), their JSON variant, and a
 * sim world's, whose report must name the same collective and culprit;
 * the culprit by majority, whichever rank it is; bad folders refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_buf.h"
#include "bs_file.h"
#include "comm/bs_comm.h"
#include "dumps/bs_dumps.h"
#include "dumps/bs_dumps_report.h"

static bs_dumps d;
static bs_dumps_verdict v;

static void analyze_dir(const char *dir) {
  assert_int_equal(bs_dumps_load(dir, NULL, &d), BS_OK);
  assert_int_equal(bs_dumps_report(&d, &v), BS_OK);
}

static void done(void) {
  bs_dumps_report_verdict_free(&v);
  bs_dumps_free(&d);
}

static void has(const char *text, const char *what) {
  if (!strstr(text, what))
    fail_msg("no '%s' in:\n%s", what, text);
}

static void culprits_are(const int *want, int n) {
  assert_int_equal(v.nculprits, n);
  for (int i = 0; i < n; i++)
    assert_int_equal(v.culprits[i], want[i]);
}

static void check_desync4(void) {
  static const int odd[] = {1, 3};
  assert_int_equal(v.finding, BS_DUMPS_DESYNC);
  assert_int_equal(v.mismatch_seq, 2);
  assert_string_equal(bs_dumps_finding_mismatch_name(v.kind), "size");
  culprits_are(odd, 2);
  has(v.text, "backstop: desync at collective #2 (4 ranks, 4 dumps, version "
              "2.10, comm lib 2.30.7)\n");
  has(v.text, "  ranks 0,2: _all_gather_base #2 (56974 x uint8)\n");
  has(v.text, "  ranks 1,3: _all_gather_base #2 (54242 x uint8)\n");
  has(v.text, "  culprit: ranks 1,3 (an even split");
  has(v.text, "  first mismatch: #2, size: [[54242]] -> [[216968]] on rank 1 "
              "against [[56974]] -> [[227896]] on rank 0\n");
}

/* Only the files matching glob of desync4, in a folder of their own. */
static void analyze_only(const char *glob, bool pickles) {
  char dir[] = "/tmp/bs_dumps_XXXXXX", cmd[512];
  assert_non_null(mkdtemp(dir));
  snprintf(cmd, sizeof cmd, "cd %s/fr/desync4 && cp %s %s/", BS_TEST_DATA, glob,
           dir);
  assert_int_equal(system(cmd), 0);
  analyze_dir(dir);
  assert_int_equal(d.pickle, pickles);
  assert_int_equal(d.n, 4);
  check_desync4();
  done();
  snprintf(cmd, sizeof cmd, "rm -r %s", dir);
  assert_int_equal(system(cmd), 0);
}

static void test_torch_pickles(void **state) {
  (void)state;
  analyze_only("rank_?", true);
}

/* The JSON conversion alone says the same, and so do both together. */
static void test_torch_json(void **state) {
  (void)state;
  analyze_only("../desync4-json/*.json", false);
  analyze_only("rank_? " BS_TEST_DATA "/fr/desync4-json/*.json", true);
  analyze_dir(BS_TEST_DATA "/fr/desync4-json");
  check_desync4();
  done();
}

/* Only the rank whose watchdog fired dumped: the other is missing. */
static void test_missing_rank(void **state) {
  (void)state;
  static const int one[] = {1};
  analyze_dir(BS_TEST_DATA "/fr/desync2");
  assert_int_equal(v.finding, BS_DUMPS_HANG);
  assert_int_equal(v.stuck_seq, 2);
  culprits_are(one, 1);
  has(v.text, "  rank 0: _all_gather_base #2 (56974 x uint8)\n");
  has(v.text, "  rank 1: no dump (where it is is not known)\n");
  has(v.text, "  missing from #2: rank 1\n");
  has(v.text, "  culprit: rank 1 (missing from #2)\n");
  has(v.text, "  root: rank 1 left no dump, missing from _all_gather_base #2 "
              "of process group 0 (default_pg)\n");
  done();
}

/* ---- dumps torch 2.15 wrote (tests/data/fr/README.md) ---- */

/* TP x DP on gloo: pg_config names no group the entries are in; group 4
 * ({1,3}, read from the entries) hangs where rank 3 skipped its DP
 * all_reduce and went on into its TP one (its peers issue the DP one
 * first), and holds up TP group 1: a chain back to rank 3. */
static void test_torch_groups(void **state) {
  (void)state;
  static const int three[] = {3};
  analyze_dir(BS_TEST_DATA "/fr/torch-groups");
  assert_int_equal(d.ngroups, 4); /* no default-group entry */
  int g = bs_dumps_group_find(&d, "4");
  assert_true(g >= 0);
  assert_int_equal(d.groups[g].n, 2);
  assert_int_equal(d.groups[g].ranks[0], 1);
  assert_int_equal(d.groups[g].ranks[1], 3);
  assert_false(d.groups[g].ranks_known);
  assert_string_equal(d.groups[g].desc, "undefined");
  assert_int_equal(bs_dumps_group_rank(&d, g, 3), 1);
  /* gloo: every entry scheduled, the done ones retired */
  const bs_dump_pg *p = bs_dumps_pg_of(bs_dumps_rank(&d, 1), g);
  assert_non_null(p);
  assert_int_equal(p->n, 2);
  assert_int_equal(p->c[0].state, BS_DUMP_COMPLETED);
  assert_int_equal(p->c[1].state, BS_DUMP_SCHEDULED);
  assert_null(bs_dumps_pg_of(bs_dumps_rank(&d, 0), g));
  assert_int_equal(v.finding, BS_DUMPS_HANG);
  assert_string_equal(v.pg, "4");
  assert_int_equal(v.stuck_seq, 2);
  culprits_are(three, 1);
  has(v.text, "backstop: hang at collective #2 (process group 4 (undefined) "
              "of ranks 1,3; 4 ranks, 4 dumps, version 2.10, comm lib gloo)\n");
  has(v.text, "  rank 1: all_reduce #2 (2 x fp32)\n");
  has(v.text, "  culprit: rank 3 (missing from #2)\n");
  has(v.text, "  root: rank 3 skipped all_reduce #2 of process group 4 "
              "(undefined) and went on into all_reduce #3 of process group 2 "
              "(undefined), where its peers issue this one first\n");
  /* group 1 waits for rank 1, held in group 4, back to rank 3 */
  has(v.text, "  held: all_reduce #3 of process group 1 (undefined): rank 0 "
              "waits for rank 1 (in all_reduce #2 of process group 4 "
              "(undefined)); its root: rank 3\n");
  has(v.text, "  completed: process groups 2 (undefined), 3 (undefined) "
              "(every member's every entry done)\n");
  done();
}

/* p2p recorded by PyTorch's FlightRecorderHook: every op retired, done or
 * not; rank 3's second recv from rank 2 has no send to match it. */
static void test_torch_pipeline(void **state) {
  (void)state;
  static const int two[] = {2};
  analyze_dir(BS_TEST_DATA "/fr/torch-pipeline");
  const bs_dump_pg *p = bs_dumps_pg_of(bs_dumps_rank(&d, 3), 0);
  assert_non_null(p);
  assert_int_equal(p->n, 3);
  assert_int_equal(p->c[2].kind, BS_DUMP_RECV);
  assert_int_equal(p->c[2].peer, 2);
  assert_int_equal(p->c[2].seq, 2);
  assert_true(p->c[2].p2p);
  assert_non_null(bs_dumps_pg_find_p2p(p, 2, BS_DUMP_RECV, 2));
  assert_null(bs_dumps_pg_find_p2p(p, 2, BS_DUMP_SEND, -1));
  assert_int_equal(v.finding, BS_DUMPS_HANG);
  assert_true(v.p2p);
  assert_int_equal(v.stuck_seq, 2);
  culprits_are(two, 1);
  has(v.text, "backstop: hang at p2p #2 (4 ranks, 4 dumps");
  has(v.text, "  rank 3: recv from rank 2, p2p #2 (8 x fp32)\n");
  has(v.text, "  culprit: rank 2 (rank 3 waits in recv from rank 2, p2p #2 "
              "(8 x fp32): rank 2 never issued it)\n");
  has(v.text, "  root: rank 2 stalled before its send to rank 3, whose recv "
              "from rank 2 (p2p #2 of process group 0 (default_pg)) waits "
              "for it");
  done();
}

/* all_reduce_coalesced of 3 tensors on rank 0, 2 on the others. */
static void test_torch_coalesced(void **state) {
  (void)state;
  static const int zero[] = {0};
  analyze_dir(BS_TEST_DATA "/fr/torch-coalesced");
  assert_false(d.pickle);
  const bs_dump_coll *c = bs_dumps_find(bs_dumps_rank(&d, 0), 2);
  assert_non_null(c);
  assert_int_equal(c->in_tensors, 3);
  assert_int_equal(c->in_numel, 9);
  assert_int_equal(v.finding, BS_DUMPS_DESYNC);
  assert_int_equal(v.mismatch_seq, 2);
  /* 9 elements in other tensors: the shape differs, not the size */
  assert_string_equal(bs_dumps_finding_mismatch_name(v.kind), "shape");
  culprits_are(zero, 1);
  has(v.text, "backstop: desync at collective #2 (4 ranks");
  has(v.text, "  torchfrtrace takes rank 0's dump (the first it reads) as "
              "right: it would blame ranks 1-3 instead\n");
  done();
}

/* Rank 3 left no dump: gloo's nameless pg_config ranks say it was there. */
static void test_torch_nodump(void **state) {
  (void)state;
  static const int three[] = {3};
  analyze_dir(BS_TEST_DATA "/fr/torch-nodump");
  assert_int_equal(d.ranks, 4);
  assert_int_equal(d.n, 3);
  assert_int_equal(d.world, 4);
  assert_int_equal(v.finding, BS_DUMPS_HANG);
  culprits_are(three, 1);
  has(v.text, "  ranks 0-2: all_reduce #2 (4 x fp32)\n");
  has(v.text, "  rank 3: no dump (where it is is not known)\n");
  done();
}

/* Ops whose ranks' sizes differ and match (torchfrtrace's rules): an
 * all_to_all_single of uneven splits (rank r sends r+1 elements to each),
 * a gather whose root alone holds outputs (gloo's other ranks retire
 * their part once sent). Rank 2 skips #2 of each: no mismatch, and the
 * root is not blamed. */
static void test_torch_uneven_sizes(void **state) {
  (void)state;
  static const int two[] = {2};
  static const struct {
    const char *dir, *line;
  } jobs[] = {
      {"torch-a2a", "  rank 1: all_to_all #2 (8 x fp32)\n"},
      {"torch-gather", "  rank 0: gather #2 (4 x fp32)\n"},
  };
  for (size_t k = 0; k < sizeof jobs / sizeof jobs[0]; k++) {
    char dir[256];
    snprintf(dir, sizeof dir, "%s/fr/%s", BS_TEST_DATA, jobs[k].dir);
    analyze_dir(dir);
    assert_int_equal(v.finding, BS_DUMPS_HANG);
    assert_int_equal(v.stuck_seq, 2);
    culprits_are(two, 1);
    has(v.text, jobs[k].line);
    has(v.text, "  culprit: rank 2 (missing from #2)\n");
    done();
  }
}

/* The uneven all_to_all with rank 1's first one sending 9 elements, not
 * 8: the group sends 41 and receives 40 (torchfrtrace's
 * check_size_alltoall); the dumps hold totals only, so no rank is blamed. */
static void test_all_to_all_totals(void **state) {
  (void)state;
  char dir[] = "/tmp/bs_dumps_XXXXXX", cmd[512];
  assert_non_null(mkdtemp(dir));
  snprintf(cmd, sizeof cmd,
           "cp %s/fr/torch-a2a/rank_? %s/ && sed -i '0,/\\[\\[8\\]\\]/"
           "s//[[9]]/' %s/rank_1",
           BS_TEST_DATA, dir, dir);
  assert_int_equal(system(cmd), 0);
  analyze_dir(dir);
  assert_int_equal(v.finding, BS_DUMPS_DESYNC);
  assert_int_equal(v.mismatch_seq, 1);
  assert_int_equal(v.nculprits, 0);
  has(v.text, "  first mismatch: #1, size: the group's ranks send 41 elements "
              "in all and receive 40: ");
  done();
  snprintf(cmd, sizeof cmd, "rm -r %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* The pipeline without rank 2's dump: rank 3 waits in a recv from a rank
 * that left none, and the group holds p2p ops alone: the blame is the
 * p2p peer's, never an all-clear or a culprit-less hang. */
static void test_p2p_peer_left_no_dump(void **state) {
  (void)state;
  static const int two[] = {2};
  char dir[] = "/tmp/bs_dumps_XXXXXX", cmd[512];
  assert_non_null(mkdtemp(dir));
  snprintf(cmd, sizeof cmd, "cp %s/fr/torch-pipeline/rank_[013] %s/",
           BS_TEST_DATA, dir);
  assert_int_equal(system(cmd), 0);
  analyze_dir(dir);
  assert_int_equal(v.finding, BS_DUMPS_HANG);
  assert_true(v.p2p);
  culprits_are(two, 1);
  has(v.text, "  rank 2: no dump (where it is is not known)\n");
  /* Rank 1's last send to it is not known done (no later op of rank 1),
   * nor rank 3's first recv (its second may be an irecv issued with it). */
  has(v.text, "  root: rank 2 left no dump, missing from its recv from rank "
              "1, whose send to rank 2 (p2p #4 of process group 0 "
              "(default_pg)) waits for it (missing from 2 stuck ops: the "
              "dumps do not tell which it would issue first)");
  done();
  snprintf(cmd, sizeof cmd, "rm -r %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* Dumps a folder per node (a multi-node job's, gathered), as torchfrtrace
 * walks them: read as one job; one run's pickles with their JSON copies a
 * level down: one job; two jobs' folders: refused, naming both files. */
static void test_sub_folders(void **state) {
  (void)state;
  static const int three[] = {3}, one_three[] = {1, 3};
  char dir[] = "/tmp/bs_dumps_XXXXXX", cmd[1024], sub[128];
  const char *g = BS_TEST_DATA "/fr/torch-groups";
  assert_non_null(mkdtemp(dir));
  snprintf(cmd, sizeof cmd,
           "mkdir -p %s/n0 %s/n1/x && cp %s/rank_0 %s/rank_1 %s/n0/ && "
           "cp %s/rank_2 %s/rank_3 %s/n1/x/ && echo ok > %s/notes.txt",
           dir, dir, g, g, dir, g, g, dir, dir);
  assert_int_equal(system(cmd), 0);
  analyze_dir(dir);
  assert_true(d.walked);
  assert_int_equal(d.n, 4);
  culprits_are(three, 1);
  assert_string_equal(v.pg, "4");
  assert_string_equal(d.skipped, "notes.txt");
  done();
  snprintf(sub, sizeof sub, "%s/run", dir);
  snprintf(cmd, sizeof cmd,
           "rm -r %s/n0 %s/n1 && mkdir -p %s/json && cp %s/fr/desync4/rank_? "
           "%s/ && for r in 0 1 2 3; do cp %s/fr/desync4-json/rank_$r.json "
           "%s/json/rank$r.flight.json; done",
           dir, dir, sub, BS_TEST_DATA, sub, BS_TEST_DATA, sub);
  assert_int_equal(system(cmd), 0);
  analyze_dir(dir);
  assert_int_equal(d.n, 4);
  culprits_are(one_three, 2);
  done();
  snprintf(cmd, sizeof cmd, "cp -r %s %s/other", g, dir);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(bs_dumps_load(dir, NULL, &d), BS_ERR_INVALID);
  has(bs_err()->message, dir);
  has(bs_err()->message,
      "rank 0 has two dumps, run/json/rank0.flight.json and other/rank_0");
  has(bs_err()->message, "point at one job's folder");
  bs_err_clear();
  snprintf(cmd, sizeof cmd, "rm -r %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* A folder as a job leaves it: a JSON-lines log and a script skipped and
 * listed, a torn dump its rank's unreadable one, the others still read. */
static void test_logs_and_torn(void **state) {
  (void)state;
  static const int one_three[] = {1, 3};
  char dir[] = "/tmp/bs_dumps_XXXXXX", cmd[512];
  assert_non_null(mkdtemp(dir));
  snprintf(cmd, sizeof cmd,
           "cp %s/fr/torch-nodump/rank_? %s/ && head -c 200 %s/rank_1 > "
           "%s/t && mv %s/t %s/rank_1 && printf '{\"a\": 1}\\n{\"a\": 2}"
           "\\n' > %s/train.log && echo 'torchrun x.py' > %s/run.sh",
           BS_TEST_DATA, dir, dir, dir, dir, dir, dir, dir);
  assert_int_equal(system(cmd), 0);
  analyze_dir(dir);
  assert_int_equal(d.n, 2);
  assert_int_equal(d.nbad, 1);
  assert_int_equal(d.bad[0].rank, 1);
  assert_non_null(bs_dumps_bad_rank(&d, 1));
  assert_int_equal(d.nskipped, 2);
  assert_string_equal(d.skipped, "run.sh, train.log");
  culprits_are(one_three, 2);
  has(v.text, "  rank 1: dump unreadable (rank_1: pickle: ");
  done();
  snprintf(cmd, sizeof cmd, "rm -r %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* NCCL's forms, as entries of a JSON dump: a coalesced run (ops of one
 * seq ending in nccl:coalesced) is one op, a batch of sends and receives
 * one p2p op of parts; state from completed times, duration_ms, pg_status
 * (numbers or strings) as well as state. */
/* d made of one dump, the JSON text dump; its rank's. */
static const bs_dump *only_dump(const char *dump, int rank) {
  bs_json root;
  assert_int_equal(bs_json_parse(dump, strlen(dump), &root), BS_OK);
  memset(&d, 0, sizeof d);
  assert_int_equal(bs_dumps_add(&d, &root, "rank_0.json"), BS_OK);
  bs_json_free(&root);
  assert_int_equal(bs_dumps_finish(&d, NULL), BS_OK);
  const bs_dump *r = bs_dumps_rank(&d, rank);
  assert_non_null(r);
  return r;
}

static void test_nccl_forms(void **state) {
  (void)state;
  static const char *const dump =
      "{\"version\": \"2.4\", \"rank\": 1, \"pg_config\": {\"0\": "
      "{\"name\": \"0\", \"desc\": \"default_pg\", \"ranks\": \"[0, 1]\"}},"
      "\"pg_status\": {\"0\": {\"last_completed_collective\": \"1\"}},"
      "\"entries\": ["
      "{\"pg_id\": 0, \"collective_seq_id\": 1, \"profiling_name\": "
      "\"nccl:all_reduce\", \"state\": \"scheduled\", \"input_sizes\": "
      "[[4]], \"output_sizes\": [[4]]},"
      "{\"pg_id\": 0, \"collective_seq_id\": 2, \"profiling_name\": "
      "\"nccl:all_reduce\", \"input_sizes\": [[4]], \"output_sizes\": [[4]],"
      "\"state\": \"started\", \"duration_ms\": 1.5},"
      "{\"pg_id\": 0, \"collective_seq_id\": 3, \"profiling_name\": "
      "\"nccl:all_reduce\", \"input_sizes\": [[2]], \"output_sizes\": [[2]]},"
      "{\"pg_id\": 0, \"collective_seq_id\": 3, \"profiling_name\": "
      "\"nccl:all_reduce\", \"input_sizes\": [[3]], \"output_sizes\": [[3]]},"
      "{\"pg_id\": 0, \"collective_seq_id\": 3, \"profiling_name\": "
      "\"nccl:coalesced\", \"input_sizes\": [], \"output_sizes\": [], "
      "\"state\": \"started\"},"
      "{\"pg_id\": 0, \"collective_seq_id\": 3, \"p2p_seq_id\": 1, "
      "\"is_p2p\": true, \"profiling_name\": \"nccl:send 1->0\", "
      "\"input_sizes\": [[8]], \"output_sizes\": [[8]]},"
      "{\"pg_id\": 0, \"collective_seq_id\": 3, \"p2p_seq_id\": 1, "
      "\"is_p2p\": true, \"profiling_name\": \"nccl:recv 1<-0\", "
      "\"input_sizes\": [[8]], \"output_sizes\": [[8]]},"
      "{\"pg_id\": 0, \"collective_seq_id\": 3, \"p2p_seq_id\": 1, "
      "\"is_p2p\": true, \"profiling_name\": \"nccl:coalesced\", "
      "\"time_discovered_completed_ns\": 5}"
      "]}";
  const bs_dump *r = only_dump(dump, 1);
  assert_int_equal(r->n, 4);
  assert_int_equal(r->c[0].state, BS_DUMP_COMPLETED); /* pg_status's "1" */
  assert_int_equal(r->c[1].state, BS_DUMP_COMPLETED); /* duration_ms */
  const bs_dump_coll *co = &r->c[2];
  assert_int_equal(co->nparts, 3);
  assert_true(co->coalesced);
  assert_string_equal(co->op, "all_reduce");
  assert_string_equal(co->in, "[[2], [3]]");
  assert_int_equal(co->in_tensors, 2);
  assert_int_equal(co->state, BS_DUMP_STARTED);
  const bs_dump_coll *b = &r->c[3];
  assert_true(b->p2p);
  assert_int_equal(b->nparts, 3);
  assert_int_equal(b->kind, BS_DUMP_SEND);
  assert_int_equal(b->peer, -1); /* its parts go two ways */
  assert_int_equal(b->parts[0].peer, 0);
  assert_int_equal(b->parts[1].kind, BS_DUMP_RECV);
  assert_int_equal(b->state, BS_DUMP_COMPLETED);
  assert_int_equal(d.ranks, 2);
  bs_dumps_free(&d);
}

/* Numbers in dump text are plain decimals (bs_num): a peer "?" is none
 * (a send's too), a count "-1" none. */
static void test_plain_numbers(void **state) {
  (void)state;
  static const char *const dump =
      "{\"version\": \"2.4\", \"rank\": 0, \"pg_config\": {\"0\": "
      "{\"name\": \"0\", \"desc\": \"default_pg\", \"ranks\": \"[0, 1]\"}},"
      "\"pg_status\": {\"0\": {\"last_completed_collective\": \"-1\"}},"
      "\"entries\": ["
      "{\"pg_id\": 0, \"collective_seq_id\": 0, \"p2p_seq_id\": 1, "
      "\"is_p2p\": true, \"profiling_name\": \"nccl:send 0->?\", "
      "\"input_sizes\": [[8]], \"output_sizes\": [[8]]},"
      "{\"pg_id\": 0, \"collective_seq_id\": 0, \"p2p_seq_id\": 2, "
      "\"is_p2p\": true, \"profiling_name\": \"nccl:recv 0<-1\", "
      "\"input_sizes\": [[8]], \"output_sizes\": [[8]]}"
      "]}";
  const bs_dump *r = only_dump(dump, 0);
  assert_int_equal(r->n, 2);
  assert_int_equal(r->c[0].kind, BS_DUMP_SEND);
  assert_int_equal(r->c[0].peer, -1);
  assert_int_equal(r->c[1].kind, BS_DUMP_RECV);
  assert_int_equal(r->c[1].peer, 1);
  assert_int_equal(r->pg[0].last_completed, -1);
  bs_dumps_free(&d);
}

/* The oldest form read (format 2.0): seq_id, no process_group, no
 * pg_config, no is_p2p (a send named so), no dtypes. */
static void test_old_format(void **state) {
  (void)state;
  static const int one[] = {1};
  static const char *const dumps[2] = {
      "{\"version\": \"2.0\", \"entries\": [{\"seq_id\": 1, "
      "\"profiling_name\": \"nccl:all_reduce\", \"state\": \"completed\", "
      "\"input_sizes\": [[4]], \"output_sizes\": [[4]]}, {\"seq_id\": 2, "
      "\"profiling_name\": \"nccl:all_reduce\", \"state\": \"started\", "
      "\"input_sizes\": [[4]], \"output_sizes\": [[4]]}]}",
      "{\"version\": \"2.0\", \"entries\": [{\"seq_id\": 1, "
      "\"profiling_name\": \"nccl:all_reduce\", \"state\": \"completed\", "
      "\"input_sizes\": [[4]], \"output_sizes\": [[4]]}, {\"seq_id\": 2, "
      "\"profiling_name\": \"nccl:broadcast\", \"state\": \"started\", "
      "\"input_sizes\": [[4]], \"output_sizes\": [[4]]}]}"};
  memset(&d, 0, sizeof d);
  for (int r = 0; r < 2; r++) {
    char name[16];
    bs_json root;
    snprintf(name, sizeof name, "rank_%d", r);
    assert_int_equal(bs_json_parse(dumps[r], strlen(dumps[r]), &root), BS_OK);
    assert_int_equal(bs_dumps_add(&d, &root, name), BS_OK);
    bs_json_free(&root);
  }
  assert_int_equal(bs_dumps_finish(&d, NULL), BS_OK);
  assert_int_equal(d.ngroups, 1);
  assert_string_equal(d.groups[0].desc, "default_pg");
  assert_int_equal(d.world, 2);
  assert_int_equal(bs_dumps_report(&d, &v), BS_OK);
  assert_int_equal(v.finding, BS_DUMPS_DESYNC);
  assert_int_equal(v.mismatch_seq, 2);
  assert_string_equal(bs_dumps_finding_mismatch_name(v.kind), "op");
  culprits_are(one, 1); /* an even split: the lowest rank's side is right */
  done();
}

/* PyTorch's ProcessGroupNCCL dumps of the H200 (tests/data/fr/nccl, its
 * README gives the truth), as pickles and as their JSON variant. */
static void test_nccl_dumps(void **state) {
  (void)state;
  static const struct {
    const char *job;
    bs_dumps_finding finding;
    const char *pg;
    bool p2p;
    uint64_t seq;
    int culprit; /* -1: none */
  } truth[] = {
      {"ok", BS_DUMPS_CLEAN, "", false, 0, -1},
      {"skip", BS_DUMPS_HANG, "0", false, 4, 3},
      {"size", BS_DUMPS_DESYNC, "0", false, 3, 1},
      {"op", BS_DUMPS_DESYNC, "0", false, 3, 1},
      {"groups", BS_DUMPS_HANG, "4", false, 2, 3},
      {"p2p", BS_DUMPS_HANG, "0", true, 2, 2},
      {"coalesced", BS_DUMPS_DESYNC, "0", false, 2, 1},
      {"nodump", BS_DUMPS_HANG, "0", false, 4, 3},
      {"a2a", BS_DUMPS_HANG, "0", false, 2, 2},
      {"batch", BS_DUMPS_HANG, "0", true, 2, 1},
  };
  static const char *const forms[] = {"nccl", "nccl-json"};
  for (size_t f = 0; f < 2; f++)
    for (size_t i = 0; i < sizeof truth / sizeof truth[0]; i++) {
      char dir[256];
      snprintf(dir, sizeof dir, "%s/fr/%s/%s", BS_TEST_DATA, forms[f],
               truth[i].job);
      analyze_dir(dir);
      if (v.finding != truth[i].finding || strcmp(v.pg, truth[i].pg) ||
          v.p2p != truth[i].p2p || v.stuck_seq != truth[i].seq ||
          v.nculprits != (truth[i].culprit >= 0) ||
          (v.nculprits && v.culprits[0] != truth[i].culprit))
        fail_msg("%s: not as its README says:\n%s", dir, v.text);
      done();
    }
}

/* ---- a sim world's dumps ---- */

typedef struct plan {
  int odd; /* bit r: rank r sends 3 elements, not 2 */
} plan;

static bs_status gather(bs_comm *c, void *arg) {
  const plan *p = arg;
  uint8_t mine[3] = {1, 2, 3}, all[3 * 8];
  bs_status st = bs_comm_all_reduce(c, mine, mine, 3, BS_U8, BS_SUM);
  size_t n = (p->odd >> bs_comm_rank(c)) & 1 ? 3 : 2;
  return st == BS_OK ? bs_comm_all_gather(c, mine, all, n, BS_U8) : st;
}

/* The world's dumps, read as `analyze` reads a folder. */
static bs_world *run_world(int size, plan *p, bs_status want) {
  bs_world_opts o = {.size = size, .fingerprint = true, .timeout_ms = 2000};
  bs_world *w = NULL;
  void *args[8];
  for (int i = 0; i < size; i++)
    args[i] = p;
  assert_int_equal(bs_world_create(&o, &w), BS_OK);
  assert_int_equal(bs_world_run(w, NULL, gather, args), want);
  bs_err_clear();
  memset(&d, 0, sizeof d);
  for (int r = 0; r < size; r++) {
    char *json = bs_world_flight_json(w, r), name[32];
    bs_json root;
    snprintf(name, sizeof name, "rank%d.flight.json", r);
    assert_int_equal(bs_json_parse(json, strlen(json), &root), BS_OK);
    assert_int_equal(bs_dumps_add(&d, &root, name), BS_OK);
    bs_json_free(&root);
    free(json);
  }
  assert_int_equal(bs_dumps_finish(&d, NULL), BS_OK);
  assert_int_equal(bs_dumps_report(&d, &v), BS_OK);
  return w;
}

/* The line that names the culprit, up to its reason. */
static void culprit_line(const char *text, char *out, size_t n) {
  const char *at = strstr(text, "  culprit: ");
  assert_non_null(at);
  snprintf(out, n, "%.*s", (int)strcspn(at, "("), at);
}

static void test_world_agrees(void **state) {
  (void)state;
  static const int culprits[] = {1, 3};
  plan p = {.odd = 0x0a}; /* ranks 1 and 3 of 5 */
  bs_world *w = run_world(5, &p, BS_ERR_DESYNC);
  char a[64], b[64];
  culprit_line(bs_world_report(w), a, sizeof a);
  culprit_line(v.text, b, sizeof b);
  assert_string_equal(a, "  culprit: ranks 1,3 ");
  assert_string_equal(a, b);
  has(bs_world_report(w), "desync at collective #2 ");
  assert_int_equal(v.mismatch_seq, 2);
  culprits_are(culprits, 2);
  has(v.text, "  ranks 0,2,4: all_gather #2 (2 x uint8)\n");
  has(v.text, "  culprit: ranks 1,3 (against the majority: ranks 0,2,4 in "
              "all_gather #2 ([[2]] Byte -> [[10]] Byte))\n");
  done();
  bs_world_destroy(w);
}

/* A run's artifacts: the pickles rank_<R> and, in their sub-folder
 * (BS_DUMPS_JSON_DIR, which torchfrtrace does not read), the JSON copies,
 * which the loader reads first (they hold what the pickles leave out). */
static void test_json_copies_in_sub_folder(void **state) {
  (void)state;
  plan p = {.odd = 0x02};
  bs_world *w = run_world(4, &p, BS_ERR_DESYNC);
  done();
  char top[64] = "/tmp/bs-dumps-json-XXXXXX", path[160];
  assert_non_null(mkdtemp(top));
  snprintf(path, sizeof path, "%s/%s", top, BS_DUMPS_JSON_DIR);
  assert_int_equal(bs_file_mkdir_p(path), BS_OK);
  for (int r = 0; r < 4; r++) {
    char *json = bs_world_flight_json(w, r);
    bs_buf b = {0};
    assert_int_equal(bs_dumps_pickle(json, &b), BS_OK);
    snprintf(path, sizeof path, "%s/rank_%d", top, r);
    assert_int_equal(bs_file_publish(path, b.s, b.len), BS_OK);
    snprintf(path, sizeof path, "%s/%s/rank%d.flight.json", top,
             BS_DUMPS_JSON_DIR, r);
    assert_int_equal(bs_file_publish(path, json, strlen(json)), BS_OK);
    bs_buf_free(&b);
    free(json);
  }
  bs_world_destroy(w);
  assert_int_equal(bs_dumps_load(top, NULL, &d), BS_OK);
  assert_int_equal(d.n, 4);
  for (size_t i = 0; i < d.n; i++)
    assert_non_null(strstr(d.d[i].file, BS_DUMPS_JSON_DIR "/rank"));
  bs_dumps_free(&d);
  assert_int_equal(bs_file_remove_tree(top), BS_OK);
}

/* The odd one out is rank 0: blamed, however the files are ordered. */
static void test_majority_not_rank_order(void **state) {
  (void)state;
  static const int zero[] = {0};
  plan p = {.odd = 0x01};
  bs_world *w = run_world(4, &p, BS_ERR_DESYNC);
  culprits_are(zero, 1);
  has(bs_world_report(w), "  culprit: rank 0 (against the majority: ranks "
                          "1-3 in all_gather #2 (2 x uint8))\n");
  done();
  bs_world_destroy(w);
}

static void test_clean(void **state) {
  (void)state;
  plan p = {0};
  bs_world *w = run_world(3, &p, BS_OK);
  assert_int_equal(v.finding, BS_DUMPS_CLEAN);
  assert_int_equal(v.nculprits, 0);
  has(v.text, "no hang and no desync in 3 dumps of 3 ranks");
  done();
  bs_world_destroy(w);
}

/* Fewer dumps than the group names, all done: never an all-clear. */
static void test_missing_dump_not_clean(void **state) {
  (void)state;
  static const int two[] = {2};
  plan p = {0};
  bs_world *w = run_world(3, &p, BS_OK);
  done();
  memset(&d, 0, sizeof d);
  for (int r = 0; r < 2; r++) {
    char *json = bs_world_flight_json(w, r), name[32];
    bs_json root;
    snprintf(name, sizeof name, "rank%d.flight.json", r);
    assert_int_equal(bs_json_parse(json, strlen(json), &root), BS_OK);
    assert_int_equal(bs_dumps_add(&d, &root, name), BS_OK);
    bs_json_free(&root);
    free(json);
  }
  assert_int_equal(bs_dumps_finish(&d, NULL), BS_OK);
  assert_int_equal(bs_dumps_report(&d, &v), BS_OK);
  assert_int_equal(v.finding, BS_DUMPS_HANG);
  culprits_are(two, 1);
  has(v.text, "  rank 2: no dump (where it is is not known)\n");
  done();
  bs_world_destroy(w);
}

static void refused_dir(const char *file, const char *data, size_t n,
                        const char *what) {
  char dir[] = "/tmp/bs_dumps_XXXXXX", path[128];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/%s", dir, file);
  if (data)
    assert_int_equal(bs_file_publish(path, data, n), BS_OK);
  assert_int_equal(bs_dumps_load(dir, NULL, &d), BS_ERR_INVALID);
  if (!strstr(bs_err()->message, what))
    fail_msg("'%s' does not say '%s'", bs_err()->message, what);
  bs_err_clear();
  if (data)
    unlink(path);
  rmdir(dir);
}

static void test_refuses(void **state) {
  (void)state;
  refused_dir("rank_0",
              "\x80\x02"
              "cos\nsystem\n.",
              13, "rank_0: pickle: GLOBAL (0x63) at offset 2");
  refused_dir("rank_0", NULL, 0, "no Flight Recorder dump");
  refused_dir("trace.json", "{\"traceEvents\": []}", 19,
              "no Flight Recorder dump");
  refused_dir("dump.json", "{\"entries\": []}", 15, "no rank");
  refused_dir("rank_9", "{\"entries\": [], \"comm_size\": 2}", 31,
              "no collectives read: 1 dump of 10 ranks holds no entry");
  assert_int_equal(bs_dumps_load("/nonexistent/fr", NULL, &d), BS_ERR_INVALID);
  bs_err_clear();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_torch_pickles),
      cmocka_unit_test(test_torch_json),
      cmocka_unit_test(test_missing_rank),
      cmocka_unit_test(test_torch_groups),
      cmocka_unit_test(test_torch_pipeline),
      cmocka_unit_test(test_torch_coalesced),
      cmocka_unit_test(test_torch_nodump),
      cmocka_unit_test(test_torch_uneven_sizes),
      cmocka_unit_test(test_p2p_peer_left_no_dump),
      cmocka_unit_test(test_all_to_all_totals),
      cmocka_unit_test(test_sub_folders),
      cmocka_unit_test(test_logs_and_torn),
      cmocka_unit_test(test_nccl_forms),
      cmocka_unit_test(test_plain_numbers),
      cmocka_unit_test(test_nccl_dumps),
      cmocka_unit_test(test_old_format),
      cmocka_unit_test(test_world_agrees),
      cmocka_unit_test(test_majority_not_rank_order),
      cmocka_unit_test(test_clean),
      cmocka_unit_test(test_missing_dump_not_clean),
      cmocka_unit_test(test_refuses),
      cmocka_unit_test(test_json_copies_in_sub_folder),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
