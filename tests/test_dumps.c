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
  assert_string_equal(bs_dumps_report_mismatch_name(v.kind), "size");
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
  char dir[] = "/tmp/bs_dumps_XXXXXX", cmd[256];
  assert_non_null(mkdtemp(dir));
  snprintf(cmd, sizeof cmd, "cp %s/fr/desync4/%s %s/", BS_TEST_DATA, glob, dir);
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
  analyze_only("*.json", false);
  analyze_dir(BS_TEST_DATA "/fr/desync4");
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
  done();
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
    assert_int_equal(bs_dumps_add(&d, &root, name, NULL), BS_OK);
    bs_json_free(&root);
    free(json);
  }
  assert_int_equal(bs_dumps_finish(&d), BS_OK);
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
              "rank 9 is not in process group 0");
  assert_int_equal(bs_dumps_load("/nonexistent/fr", NULL, &d), BS_ERR_INVALID);
  bs_err_clear();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_torch_pickles),
      cmocka_unit_test(test_torch_json),
      cmocka_unit_test(test_missing_rank),
      cmocka_unit_test(test_world_agrees),
      cmocka_unit_test(test_majority_not_rank_order),
      cmocka_unit_test(test_clean),
      cmocka_unit_test(test_refuses),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
