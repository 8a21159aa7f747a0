#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#ifdef FIU_ENABLE
#include <fiu-control.h>
#include <fiu.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bs_fault_control.h"
#include "bs_fault_parse.h"
#include "bs_test_faults.h"

#define MAX_RANKS 4
#define MAX_CYCLES 3
#define MAX_HITS 512

#ifdef FIU_ENABLE
/* One rank's thread: reaches `point` `hits` times in each of `cycles`. */
typedef struct rank_job {
  bs_fault_point_id point;
  int rank, cycles, hits;
  bool fired[MAX_CYCLES][MAX_HITS];
  uint64_t info[MAX_CYCLES][MAX_HITS];
  int n_fired;
} rank_job;

static void *rank_main(void *arg) {
  rank_job *j = arg;
  bs_err_set_rank(j->rank);
  for (int c = 0; c < j->cycles; c++) {
    bs_fault_set_cycle(c);
    for (int h = 0; h < j->hits; h++) {
      j->fired[c][h] = bs_fault_hit(j->point, &j->info[c][h]);
      j->n_fired += j->fired[c][h];
    }
  }
  return NULL;
}

/* Runs ranks 0..n-1 as concurrent threads, as the sim backend does. */
static void run_ranks(rank_job *jobs, int n, bs_fault_point_id point,
                      int cycles, int hits) {
  pthread_t t[MAX_RANKS];
  for (int r = 0; r < n; r++) {
    jobs[r] =
        (rank_job){.point = point, .rank = r, .cycles = cycles, .hits = hits};
    assert_int_equal(pthread_create(&t[r], NULL, rank_main, &jobs[r]), 0);
  }
  for (int r = 0; r < n; r++)
    assert_int_equal(pthread_join(t[r], NULL), 0);
}

static void arm_ok(const char *spec, uint64_t seed) {
  bs_err_clear();
  bs_status st = bs_test_arm(spec, seed);
  if (st != BS_OK)
    fail_msg("arming '%s': %s", spec, bs_err()->message);
}

#endif

static int reset(void **state) {
  (void)state;
  bs_fault_disarm_all();
  bs_fault_log_reset();
  bs_err_set_rank(-1);
  bs_err_clear();
  bs_fault_set_cycle(0);
  return 0;
}

static void test_catalogue(void **state) {
  (void)state;
  static const char *const required[] = {
      "engine/send",    "engine/verify",    "restore/bitflip",
      "backup/corrupt", "master/corrupt",   "backup/pin_alloc",
      "copy/fail",      "region/resume",    "comm/rank_exit",
      "comm/stall",     "comm/diverge",     "sync/tensor_set",
      "optimizer/step", "engine/reconnect", "comm/init_skip",
      "comm/init_late", "comm/init_fail",   "source/change",
      "dev/alloc"};
  for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
    const bs_fault_point *p = bs_fault_catalogue_find(required[i]);
    assert_non_null(p);
    assert_true(strlen(p->where) > 0 && strlen(p->failinfo) > 0);
    assert_true(strlen(p->name) < BS_FAULT_NAME_MAX);
  }
  assert_null(bs_fault_catalogue_find("engine/sned"));
  assert_int_equal(bs_fault_catalogue_index("engine/sned"), -1);
  assert_null(bs_fault_catalogue_get(BS_FP_COUNT));
  /* One row per point: ids are the rows' order, names are distinct (a new
   * row needs no change here). */
  assert_true(BS_FP_COUNT >= sizeof required / sizeof *required);
  for (int i = 0; i < BS_FP_COUNT; i++) {
    const bs_fault_point *p = bs_fault_catalogue_get(i);
    assert_int_equal(p->id, i);
    assert_int_equal(bs_fault_catalogue_index(p->name), i);
  }
  assert_string_equal(bs_fault_catalogue_get(BS_FP_ENGINE_SEND)->name,
                      "engine/send");
  assert_string_equal(bs_fault_catalogue_get(BS_FP_SYNC_TENSOR_SET)->name,
                      "sync/tensor_set");
  assert_true(bs_fault_spec_name_valid("engine/*"));
  assert_true(bs_fault_spec_name_valid("*"));
  assert_false(bs_fault_spec_name_valid("engine/send/r3"));
  assert_false(bs_fault_spec_name_valid("eng*/send"));
  assert_true(bs_fault_spec_matches("comm/*", "comm/stall"));
  assert_false(bs_fault_spec_matches("comm/*", "copy/fail"));
}

/* The explained oracle's table of causes as it was written by hand, by name
 * prefix: the generated one must say the same for every point and status. */
static bool cause_by_prefix(const char *point, bs_status st) {
  static const struct {
    bs_status st;
    const char *prefixes[6];
  } old[] = {
      {BS_ERR_ENGINE_DEAD, {"engine/send", "engine/reconnect"}},
      {BS_ERR_ENGINE_VERIFY,
       {"engine/verify", "backup/corrupt", "master/corrupt", "restore/bitflip",
        "comm/diverge"}},
      {BS_ERR_HASH_MISMATCH,
       {"restore/bitflip", "backup/corrupt", "master/corrupt", "comm/diverge"}},
      {BS_ERR_TENSOR_SET, {"sync/tensor_set", "comm/diverge", "source/change"}},
      {BS_ERR_COVERAGE, {"source/change"}},
      {BS_ERR_NOMEM, {"backup/pin_alloc", "optimizer/step", "dev/alloc"}},
      {BS_ERR_FATAL, {"region/resume"}},
      {BS_ERR_COPY, {"copy/fail"}},
      {BS_ERR_MISSING_BACKUP, {"backup/pin_alloc", "copy/fail"}},
      {BS_ERR_DESYNC,
       {"comm/", "sync/tensor_set", "source/change", "region/resume"}},
      {BS_ERR_ABORTED,
       {"comm/", "sync/tensor_set", "source/change", "region/resume"}},
      {BS_ERR_RANK_DEAD,
       {"comm/", "sync/tensor_set", "source/change", "region/resume"}},
      {BS_ERR_TIMEOUT,
       {"comm/", "sync/tensor_set", "source/change", "region/resume"}},
  };
  for (size_t i = 0; i < sizeof old / sizeof *old; i++)
    for (size_t k = 0; old[i].st == st && old[i].prefixes[k]; k++)
      if (strncmp(point, old[i].prefixes[k], strlen(old[i].prefixes[k])) == 0)
        return true;
  return false;
}

/* The points the hand-written tables knew (a later row is not in them). */
static bool of_old(const bs_fault_point *p) {
  return p->id <= BS_FP_SOURCE_CHANGE;
}

static void test_explains(void **state) {
  (void)state;
  for (int i = 0; i < BS_FP_COUNT; i++) {
    const bs_fault_point *p = bs_fault_catalogue_get(i);
    assert_true(p->explains[0] != BS_OK); /* every point explains something */
    for (int st = 0; st < BS_STATUS_COUNT && of_old(p); st++)
      if (bs_fault_catalogue_explains(i, st) != cause_by_prefix(p->name, st))
        fail_msg("%s explains %s: %d", p->name, bs_status_name(st),
                 bs_fault_catalogue_explains(i, st));
  }
  assert_false(bs_fault_catalogue_explains(BS_FP_COUNT, BS_ERR_COPY));
  assert_false(bs_fault_catalogue_explains(-1, BS_ERR_COPY));
  assert_false(bs_fault_catalogue_explains(BS_FP_COPY_FAIL, BS_OK));
}

/* The .def's WHAT and FAILINFO columns say what the hand-written lists did:
 * the uniform-schedule oracle's diverging points, agreement's rank_exit,
 * fuzz's corrupting points (those explaining a hash mismatch), its
 * switch of failinfo draws, and the deadline's waited-out init_skip. */
static void test_what(void **state) {
  (void)state;
  static const char *const off_schedule[] = {
      "comm/diverge",   "comm/rank_exit",  "comm/init_skip",
      "comm/init_fail", "sync/tensor_set", "region/resume"};
  for (int i = 0; i < BS_FP_COUNT; i++) {
    const bs_fault_point *p = bs_fault_catalogue_get(i);
    bool off = false;
    for (size_t k = 0; k < sizeof off_schedule / sizeof *off_schedule; k++)
      off |= strcmp(p->name, off_schedule[k]) == 0;
    unsigned known = BS_FAULT_OFF_SCHEDULE | BS_FAULT_LEAVES |
                     BS_FAULT_CORRUPTS | BS_FAULT_WAITS_OUT;
    assert_int_equal(p->what & ~known, 0);
    if (!of_old(p))
      continue;
    assert_int_equal(!!(p->what & BS_FAULT_OFF_SCHEDULE), off);
    assert_int_equal(!!(p->what & BS_FAULT_LEAVES), i == BS_FP_COMM_RANK_EXIT);
    assert_int_equal(!!(p->what & BS_FAULT_WAITS_OUT),
                     i == BS_FP_COMM_INIT_SKIP);
    assert_int_equal(!!(p->what & BS_FAULT_CORRUPTS),
                     bs_fault_catalogue_explains(i, BS_ERR_HASH_MISMATCH));
  }
  const bs_fault_failinfo draws[BS_FP_COUNT] = {
      [BS_FP_ENGINE_VERIFY] = BS_FAILINFO_TENSOR_BIT,
      [BS_FP_RESTORE_BITFLIP] = BS_FAILINFO_BIT,
      [BS_FP_BACKUP_CORRUPT] = BS_FAILINFO_BIT,
      [BS_FP_MASTER_CORRUPT] = BS_FAILINFO_BIT,
      [BS_FP_COMM_STALL] = BS_FAILINFO_MS,
      [BS_FP_COMM_INIT_LATE] = BS_FAILINFO_MS,
      [BS_FP_COMM_DIVERGE] = BS_FAILINFO_PARITY};
  for (int i = 0; i <= BS_FP_SOURCE_CHANGE; i++)
    assert_int_equal(bs_fault_catalogue_get(i)->draw, draws[i]);
}

static void test_parse_good(void **state) {
  (void)state;
  bs_fault_spec s;
  assert_int_equal(bs_fault_spec_parse("name=engine/send", &s), BS_OK);
  assert_string_equal(s.name, "engine/send");
  assert_int_equal(s.rank, -1);
  assert_int_equal(s.cycle, -1);
  assert_int_equal(s.nth, 0);
  assert_true(s.prob == 1.0);
  assert_false(s.onetime);

  assert_int_equal(bs_fault_spec_parse("nth=2,name=comm/stall,rank=3,cycle=1,"
                                       "prob=0.25,failinfo=250,onetime",
                                       &s),
                   BS_OK);
  assert_string_equal(s.name, "comm/stall");
  assert_int_equal(s.rank, 3);
  assert_int_equal(s.cycle, 1);
  assert_int_equal(s.nth, 2);
  assert_true(s.prob == 0.25);
  assert_int_equal(s.failinfo, 250);
  assert_true(s.onetime);

  assert_int_equal(
      bs_fault_spec_parse("name=restore/*,failinfo=18446744073709551615", &s),
      BS_OK);
  assert_string_equal(s.name, "restore/*");
  assert_true(s.failinfo == UINT64_MAX);
  assert_int_equal(s.times, 1);
  assert_int_equal(bs_fault_spec_parse("name=engine/send,nth=3,times=2", &s),
                   BS_OK);
  assert_int_equal(s.nth, 3);
  assert_int_equal(s.times, 2);
  assert_int_equal(bs_fault_spec_parse("name=copy/fail,persistent", &s), BS_OK);
  assert_int_equal(s.nth, 1); /* a window starts at the first reach */
  assert_int_equal(s.times, 0);
  assert_int_equal(bs_fault_spec_parse("name=copy/fail,times=4", &s), BS_OK);
  assert_int_equal(s.nth, 1);
  assert_int_equal(s.times, 4);
  assert_int_equal(bs_fault_armed_count(), 0); /* parsing arms nothing */
}

static void test_parse_bad(void **state) {
  (void)state;
  static const struct {
    const char *spec, *says;
  } bad[] = {
      {"", "empty"},
      {"name=engine/sned", "unknown fault point 'engine/sned' (did you mean "
                           "'engine/send'?) (see backstop faults)"},
      {"name=foo/*", "unknown fault point 'foo/*'"},
      {"name=eng*ine/send", "unknown fault point 'eng*ine/send'"},
      {"name=engine/send/r3", "unknown fault point 'engine/send/r3'"},
      {"name=engine/send,rnak=1", "unknown key 'rnak'"},
      {"name=engine/send,rank=1,rank=2", "duplicate key 'rank'"},
      {"name=engine/send,name=copy/fail", "duplicate key 'name'"},
      {"rank=1,nth=2", "missing name=POINT"},
      {"name=engine/send,rank=x", "rank=x is not a decimal integer"},
      {"name=engine/send,rank=-1", "rank=-1 is negative"},
      {"name=engine/send,rank=99999999999", "rank=99999999999 is out of range"},
      {"name=engine/send,nth=0", "nth=0 is out of range"},
      {"name=engine/send,nth=2 ", "nth=2  is not a decimal integer"},
      {"name=engine/send,failinfo=0x10", "failinfo=0x10 is not a decimal"},
      {"name=engine/send,failinfo=18446744073709551616", "out of range"},
      {"name=engine/send,prob=1.5", "prob=1.5 is outside [0,1]"},
      {"name=engine/send,prob=-0.1", "prob=-0.1 is outside [0,1]"},
      {"name=engine/send,prob=abc", "prob=abc is not a number"},
      {"name=engine/send,prob=nan", "prob=nan is not a number"},
      {"name=*,prob=0", "prob=0 never fires"},
      {"name=engine/send,prob=0.0", "prob=0.0 never fires"},
      {"name=engine/send,times=0", "times=0 is out of range"},
      {"name=engine/send,times=2,persistent", "times and persistent"},
      {"name=engine/send,persistent=1", "persistent takes no value"},
      {"name=engine/send,,rank=1", "empty field"},
      {"name=engine/send,", "empty field"},
      {"name=engine/send,onetime=1", "onetime takes no value"},
      {"name=engine/send,rank", "rank needs a value"},
      {"name=", "name needs a value"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    bs_fault_spec s;
    bs_err_clear();
    assert_int_equal(bs_fault_spec_parse(bad[i].spec, &s), BS_ERR_INVALID);
    if (!strstr(bs_err()->message, bad[i].says))
      fail_msg("'%s': message '%s' does not say '%s'", bad[i].spec,
               bs_err()->message, bad[i].says);
    assert_null(strchr(bs_err()->message, '\n'));
    bs_err_clear();
    assert_int_equal(bs_test_arm(bad[i].spec, 0), BS_ERR_INVALID);
    assert_non_null(strstr(bs_err()->message, bad[i].says));
  }
  assert_int_equal(bs_fault_armed_count(), 0);
  bs_err_clear();
  assert_int_equal(bs_fault_spec_parse(NULL, NULL), BS_ERR_INVALID);
  char big[400];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  memcpy(big, "name=", 5);
  bs_err_clear();
  bs_fault_spec s;
  assert_int_equal(bs_fault_spec_parse(big, &s), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "too long"));
}

#ifndef FIU_ENABLE
static void test_arm_unsupported(void **state) {
  (void)state;
  assert_int_equal(bs_test_arm("name=engine/send", 0), BS_ERR_UNSUPPORTED);
  assert_int_equal(bs_test_arm("name=engine/sned", 0), BS_ERR_INVALID);
  uint64_t info = 0;
  assert_false(bs_fault_hit(BS_FP_ENGINE_SEND, &info));
}
BS_TEST_SKIP_WITHOUT_FAULTS(test_rank_filter)
BS_TEST_SKIP_WITHOUT_FAULTS(test_cycle_filter)
BS_TEST_SKIP_WITHOUT_FAULTS(test_nth_filter)
BS_TEST_SKIP_WITHOUT_FAULTS(test_prob_deterministic)
BS_TEST_SKIP_WITHOUT_FAULTS(test_failinfo)
BS_TEST_SKIP_WITHOUT_FAULTS(test_onetime)
BS_TEST_SKIP_WITHOUT_FAULTS(test_prefix)
BS_TEST_SKIP_WITHOUT_FAULTS(test_rank_qualified_libfiu)
BS_TEST_SKIP_WITHOUT_FAULTS(test_log)
BS_TEST_SKIP_WITHOUT_FAULTS(test_disarm_all)
BS_TEST_SKIP_WITHOUT_FAULTS(test_table_full)
BS_TEST_SKIP_WITHOUT_FAULTS(test_fiu_run)
BS_TEST_SKIP_WITHOUT_FAULTS(test_fiu_ctrl)
BS_TEST_SKIP_WITHOUT_FAULTS(test_reach_cost)
BS_TEST_SKIP_WITHOUT_FAULTS(test_times_persistent)
BS_TEST_SKIP_WITHOUT_FAULTS(test_framework_thread)
BS_TEST_SKIP_WITHOUT_FAULTS(test_reach_counts)
BS_TEST_SKIP_WITHOUT_FAULTS(test_external_list)
#else
static void test_rank_filter(void **state) {
  (void)state;
  arm_ok("name=engine/send,rank=2", 0);
  rank_job jobs[MAX_RANKS];
  run_ranks(jobs, 4, BS_FP_ENGINE_SEND, 1, 3);
  for (int r = 0; r < 4; r++)
    assert_int_equal(jobs[r].n_fired, r == 2 ? 3 : 0);
  assert_int_equal(bs_fault_log_count(), 3);
  for (size_t i = 0; i < 3; i++) {
    bs_fault_fired f;
    assert_true(bs_fault_log_get(i, &f));
    assert_int_equal(f.rank, 2);
  }
}

static void test_cycle_filter(void **state) {
  (void)state;
  arm_ok("name=copy/fail,cycle=1", 0);
  rank_job jobs[MAX_RANKS];
  run_ranks(jobs, 2, BS_FP_COPY_FAIL, 3, 2);
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < 3; c++)
      for (int h = 0; h < 2; h++)
        assert_int_equal(jobs[r].fired[c][h], c == 1);
}

static void test_nth_filter(void **state) {
  (void)state;
  arm_ok("name=engine/send,nth=2", 0);
  rank_job jobs[MAX_RANKS];
  run_ranks(jobs, 3, BS_FP_ENGINE_SEND, 2, 4);
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 2; c++)
      for (int h = 0; h < 4; h++)
        assert_int_equal(jobs[r].fired[c][h], h == 1);
  assert_int_equal(bs_fault_log_count(), 6);
  for (size_t i = 0; i < 6; i++) {
    bs_fault_fired f;
    assert_true(bs_fault_log_get(i, &f));
    assert_int_equal(f.nth, 2);
  }
}

/* Per-rank firing patterns of a prob spec, reached concurrently. */
static void prob_patterns(const char *spec, uint64_t seed, rank_job *jobs) {
  bs_fault_disarm_all();
  arm_ok(spec, seed);
  run_ranks(jobs, MAX_RANKS, BS_FP_COMM_STALL, 2, 500);
}

static bool same_patterns(const rank_job *a, const rank_job *b) {
  for (int r = 0; r < MAX_RANKS; r++)
    if (memcmp(a[r].fired, b[r].fired, sizeof a[r].fired) != 0)
      return false;
  return true;
}

static void test_prob_deterministic(void **state) {
  (void)state;
  static rank_job a[MAX_RANKS], b[MAX_RANKS], c[MAX_RANKS];
  prob_patterns("name=comm/stall,prob=0.3", 7, a);
  prob_patterns("name=comm/stall,prob=0.3", 7, b);
  prob_patterns("name=comm/stall,prob=0.3", 8, c);
  assert_true(same_patterns(a, b)); /* whatever the thread schedule */
  assert_false(same_patterns(a, c));
  int fired = 0;
  for (int r = 0; r < MAX_RANKS; r++)
    fired += a[r].n_fired;
  /* 4000 draws at p=0.3: mean 1200, sd 29; 1000..1400 is > 6 sd. */
  assert_in_range(fired, 1000, 1400);
  /* Ranks and cycles draw independently rather than in lockstep. */
  assert_memory_not_equal(a[0].fired[0], a[1].fired[0], 500);
  assert_memory_not_equal(a[0].fired[0], a[0].fired[1], 500);

  prob_patterns("name=comm/stall,prob=1", 7, b);
  for (int r = 0; r < MAX_RANKS; r++)
    assert_int_equal(b[r].n_fired, 1000);
}

static void test_failinfo(void **state) {
  (void)state;
  arm_ok("name=restore/bitflip,failinfo=17", 0);
  uint64_t info = 0;
  bs_err_set_rank(0);
  assert_true(bs_fault_hit(BS_FP_RESTORE_BITFLIP, &info));
  assert_int_equal(info, 17);
  assert_true(bs_fault_hit(BS_FP_RESTORE_BITFLIP, NULL)); /* NULL is allowed */
  bs_fault_disarm_all();
  /* Two specs on one libfiu name: each rank gets its own spec's failinfo. */
  arm_ok("name=restore/bitflip,rank=0,failinfo=5", 0);
  arm_ok("name=restore/bitflip,rank=1,failinfo=9", 0);
  rank_job jobs[MAX_RANKS];
  run_ranks(jobs, 3, BS_FP_RESTORE_BITFLIP, 1, 1);
  assert_true(jobs[0].fired[0][0] && jobs[0].info[0][0] == 5);
  assert_true(jobs[1].fired[0][0] && jobs[1].info[0][0] == 9);
  assert_false(jobs[2].fired[0][0]);
}

/* times=T: T consecutive reaches from nth on; persistent: every one. */
static void test_times_persistent(void **state) {
  (void)state;
  rank_job jobs[MAX_RANKS];
  arm_ok("name=engine/send,rank=1,nth=2,times=2", 0);
  run_ranks(jobs, 2, BS_FP_ENGINE_SEND, 2, 5);
  for (int c = 0; c < 2; c++)
    for (int h = 0; h < 5; h++) {
      assert_false(jobs[0].fired[c][h]);
      assert_int_equal(jobs[1].fired[c][h], h == 1 || h == 2);
    }
  bs_fault_disarm_all();
  arm_ok("name=engine/send,cycle=1,nth=3,persistent", 0);
  run_ranks(jobs, 2, BS_FP_ENGINE_SEND, 2, 6);
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < 2; c++)
      for (int h = 0; h < 6; h++)
        assert_int_equal(jobs[r].fired[c][h], c == 1 && h >= 2);
  bs_fault_disarm_all();
  arm_ok("name=copy/fail,times=3", 0);
  run_ranks(jobs, 1, BS_FP_COPY_FAIL, 1, 5);
  assert_int_equal(jobs[0].n_fired, 3);
  assert_true(jobs[0].fired[0][0] && jobs[0].fired[0][2]);
}

/* A thread that is no rank (the framework's own setup) never fires a fault
 * and its reaches are not counted: nth counts the ranks' work only. */
static void test_framework_thread(void **state) {
  (void)state;
  uint64_t info = 0;
  arm_ok("name=copy/fail,nth=1", 0);
  bs_err_set_rank(-1);
  assert_false(bs_fault_hit(BS_FP_COPY_FAIL, &info));
  assert_int_equal(bs_fault_count_reaches(NULL, 0), 0);
  bs_err_set_rank(0);
  assert_true(bs_fault_hit(BS_FP_COPY_FAIL, &info)); /* still the 1st */
  assert_int_equal(bs_fault_log_count(), 1);
}

/* Every (point, rank, cycle) reach count, armed or not, in catalogue, rank,
 * cycle order. */
static void test_reach_counts(void **state) {
  (void)state;
  rank_job jobs[MAX_RANKS];
  run_ranks(jobs, 3, BS_FP_COMM_STALL, 2, 4);
  run_ranks(jobs, 1, BS_FP_ENGINE_SEND, 1, 2);
  bs_fault_reach r[16];
  assert_int_equal(bs_fault_count_reaches(r, 16), 7);
  assert_int_equal(r[0].point, BS_FP_ENGINE_SEND);
  assert_int_equal(r[0].count, 2);
  for (int i = 1; i < 7; i++) {
    assert_int_equal(r[i].point, BS_FP_COMM_STALL);
    assert_int_equal(r[i].rank, (i - 1) / 2);
    assert_int_equal(r[i].cycle, (i - 1) % 2);
    assert_int_equal(r[i].count, 4);
  }
  assert_int_equal(bs_fault_count_reaches(r, 2), 7); /* the count, always */
  bs_fault_disarm_all();
  assert_int_equal(bs_fault_count_reaches(r, 16), 0);
}

/* fiu-run's FIU_ENABLE commands that name our points are armed faults. */
static void test_external_list(void **state) {
  (void)state;
  bs_fault_external e[4];
  unsetenv("FIU_ENABLE");
  assert_int_equal(bs_fault_external_list(e, 4), 0);
  setenv("FIU_ENABLE",
         "enable name=engine/send/r3\n"
         "enable_random name=posix/io/*,probability=0.25\n"
         "enable name=comm/*,failinfo=5\n",
         1);
  assert_int_equal(bs_fault_external_list(e, 4), 2);
  unsetenv("FIU_ENABLE");
  assert_string_equal(e[0].command, "enable name=engine/send/r3");
  assert_string_equal(e[0].name, "engine/send/r3");
  assert_string_equal(e[1].name, "comm/*");
  assert_true(bs_fault_external_covers("engine/send/r3", BS_FP_ENGINE_SEND, 3));
  assert_false(
      bs_fault_external_covers("engine/send/r3", BS_FP_ENGINE_SEND, 2));
  assert_true(bs_fault_external_covers("comm/*", BS_FP_COMM_STALL, 0));
  assert_true(bs_fault_external_covers("engine/send/*", BS_FP_ENGINE_SEND, 1));
  assert_false(
      bs_fault_external_covers("engine/send/*", BS_FP_ENGINE_VERIFY, 1));
}

static void test_onetime(void **state) {
  (void)state;
  arm_ok("name=comm/rank_exit,onetime", 0);
  rank_job jobs[MAX_RANKS];
  run_ranks(jobs, 3, BS_FP_COMM_RANK_EXIT, 2, 5);
  for (int r = 0; r < 3; r++) {
    assert_int_equal(jobs[r].n_fired, 1); /* once per rank */
    assert_true(jobs[r].fired[0][0]);
  }
}

static void test_prefix(void **state) {
  (void)state;
  uint64_t info;
  bs_err_set_rank(0);
  /* Reached before arming, so libfiu's lookup cache has seen the name. */
  assert_false(bs_fault_hit(BS_FP_ENGINE_SEND, &info));
  arm_ok("name=engine/*,nth=2", 0);
  bs_fault_set_cycle(1);
  /* Reaches are counted per point: the 2nd of each fires. */
  assert_false(bs_fault_hit(BS_FP_ENGINE_SEND, &info));
  assert_false(bs_fault_hit(BS_FP_ENGINE_VERIFY, &info));
  assert_true(bs_fault_hit(BS_FP_ENGINE_SEND, &info));
  assert_true(bs_fault_hit(BS_FP_ENGINE_VERIFY, &info));
  assert_false(bs_fault_hit(BS_FP_COPY_FAIL, &info));
  assert_false(bs_fault_hit(BS_FP_COPY_FAIL, &info));
  bs_fault_disarm_all();
  /* A prefix spec with a probability: about half the reaches fire. */
  arm_ok("name=engine/*,prob=0.5", 3);
  int fired = 0;
  for (int i = 0; i < 1000; i++)
    fired +=
        bs_fault_hit(i % 2 ? BS_FP_ENGINE_SEND : BS_FP_ENGINE_VERIFY, &info);
  assert_in_range(fired, 400, 600); /* sd 16 */
}

static void test_rank_qualified_libfiu(void **state) {
  (void)state;
  /* libfiu's own API (what fiu-run and fiu-ctrl use), no spec involved. */
  assert_int_equal(fiu_enable("engine/send/r2", 1, (void *)33, 0), 0);
  rank_job jobs[MAX_RANKS];
  run_ranks(jobs, 4, BS_FP_ENGINE_SEND, 1, 2);
  fiu_disable("engine/send/r2");
  for (int r = 0; r < 4; r++)
    assert_int_equal(jobs[r].n_fired, r == 2 ? 2 : 0);
  assert_int_equal(jobs[2].info[0][1], 33);
  bs_fault_fired f;
  assert_true(bs_fault_log_get(0, &f));
  assert_int_equal(f.spec, -1);
  assert_int_equal(f.rank, 2);
  assert_int_equal(f.nth, 1);

  assert_int_equal(fiu_enable("comm/diverge", 1, NULL, 0), 0);
  run_ranks(jobs, 2, BS_FP_COMM_DIVERGE, 1, 1);
  fiu_disable("comm/diverge");
  assert_true(jobs[0].fired[0][0] && jobs[1].fired[0][0]);
}

static void test_log(void **state) {
  (void)state;
  arm_ok("name=engine/send,rank=1,nth=3,failinfo=4", 0);
  bs_err_set_rank(1);
  bs_fault_set_cycle(2);
  uint64_t info;
  for (int i = 0; i < 4; i++)
    bs_fault_hit(BS_FP_ENGINE_SEND, &info);
  assert_int_equal(bs_fault_log_count(), 1);
  assert_int_equal(bs_fault_log_total(), 1);
  bs_fault_fired f;
  assert_true(bs_fault_log_get(0, &f));
  assert_int_equal(f.point, BS_FP_ENGINE_SEND);
  assert_int_equal(f.rank, 1);
  assert_int_equal(f.cycle, 2);
  assert_int_equal(f.nth, 3);
  assert_int_equal(f.failinfo, 4);
  assert_int_equal(f.spec, 0);
  assert_false(bs_fault_log_get(1, &f));
  bs_fault_log_reset();
  assert_int_equal(bs_fault_log_count(), 0);
}

static void test_disarm_all(void **state) {
  (void)state;
  uint64_t info;
  bs_err_set_rank(0);
  arm_ok("name=copy/fail,nth=1", 0);
  arm_ok("name=comm/*", 0);
  assert_int_equal(bs_fault_armed_count(), 2);
  assert_true(bs_fault_hit(BS_FP_COPY_FAIL, &info));
  assert_true(bs_fault_hit(BS_FP_COMM_STALL, &info));
  bs_fault_disarm_all();
  assert_int_equal(bs_fault_armed_count(), 0);
  assert_false(bs_fault_hit(BS_FP_COPY_FAIL, &info));
  assert_false(bs_fault_hit(BS_FP_COMM_STALL, &info));
  /* Reach counts restart: nth=1 fires on the next reach again. */
  arm_ok("name=copy/fail,nth=1", 0);
  bs_fault_disarm_all();
  arm_ok("name=copy/fail,nth=1", 0);
  assert_true(bs_fault_hit(BS_FP_COPY_FAIL, &info));
}

static void test_table_full(void **state) {
  (void)state;
  for (int i = 0; i < BS_FAULT_MAX_SPECS; i++)
    arm_ok("name=comm/stall,rank=5", 0);
  bs_err_clear();
  assert_int_equal(bs_test_arm("name=copy/fail", 0), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "too many faults"));
  assert_int_equal(bs_fault_armed_count(), BS_FAULT_MAX_SPECS);
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* The cost of reaching an unarmed point, as every collective does: printed,
 * not asserted (a timing bound would be flaky on a shared machine). The
 * count check keeps the loop from being optimised away. */
static double reach_ns(int reaches) {
  uint64_t info = 0;
  int fired = 0;
  double t0 = now_ns();
  for (int i = 0; i < reaches; i++)
    fired += bs_fault_hit(BS_FP_COMM_STALL, &info);
  double ns = (now_ns() - t0) / reaches;
  assert_int_equal(fired, 0);
  return ns;
}

static void test_reach_cost(void **state) {
  (void)state;
  enum { REACHES = 200000 };
  bs_err_set_rank(3);
  double bare = reach_ns(REACHES);
  arm_ok("name=copy/fail,rank=7", 0); /* libfiu's table is not empty */
  double other = reach_ns(REACHES);
  print_message("reach of an unarmed point: %.0f ns; with another armed: "
                "%.0f ns\n",
                bare, other);
}

/* --- fiu-run: libfiu's launcher arms points in a program linked with us.
 * The test re-executes itself under fiu-run in this child mode. */
#define CHILD_FLAG "--fiu-run-child"

static int fiu_run_child(void) {
  uint64_t info = 0;
  bs_err_set_rank(0);
  if (!bs_fault_hit(BS_FP_COMM_STALL, &info) || info != 250)
    return 10;
  if (bs_fault_hit(BS_FP_ENGINE_SEND, &info))
    return 11;
  bs_err_set_rank(3);
  if (!bs_fault_hit(BS_FP_ENGINE_SEND, &info))
    return 12;
  bs_fault_fired f;
  if (bs_fault_log_count() != 2 || !bs_fault_log_get(1, &f) || f.rank != 3 ||
      f.spec != -1)
    return 13;
  /* The same thread as another rank asks libfiu that rank's name. */
  bs_err_set_rank(2);
  if (bs_fault_hit(BS_FP_ENGINE_SEND, &info))
    return 14;
  bs_err_set_rank(3);
  if (!bs_fault_hit(BS_FP_ENGINE_SEND, &info))
    return 15;
  return 0;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* The waits below look again every 1 ms (what a look costs is nothing
 * beside a process start), at most TICKS times: ~10 s. */
#define TICK_NS (1000 * 1000)
#define TICKS 10000

/* Waits at most ~10 s for pid; kills it past that. */
static int wait_bounded(pid_t pid) {
  int status = 0;
  for (int i = 0; i < TICKS; i++) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    nanosleep(&(struct timespec){.tv_nsec = TICK_NS}, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

#define FIU_RUN "/usr/bin/fiu-run"
#define FIU_CTRL "/usr/bin/fiu-ctrl"

/* This test binary's path, for re-executing it under fiu-run. */
static bool self_path(char *self, size_t n) {
  ssize_t len = readlink("/proc/self/exe", self, n - 1);
  if (len <= 0 || access(FIU_RUN, X_OK) != 0 || access(FIU_CTRL, X_OK) != 0)
    return false;
  self[len] = '\0';
  return true;
}

static pid_t spawn(const char *const *argv) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* ASan insists on coming first in the library list, and the preload
     * library leaks its command string; the leak checks of our own code run
     * in the parent. libfiu's remote-control thread (fiu-run -f) runs until
     * the process exits, by its design: TSan's thread-leak report of it
     * (exit 66, now and then in CI) is not ours. */
    setenv("ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0", 1);
    setenv("TSAN_OPTIONS", "report_thread_leaks=0", 1);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  return pid;
}

static void test_fiu_run(void **state) {
  (void)state;
  char self[4096];
  if (!self_path(self, sizeof self))
    skip();
  /* No control fifo (-f ""). -x wraps malloc: only without sanitizers. */
  const char *argv[12];
  int n_arg = 0;
  argv[n_arg++] = FIU_RUN;
  argv[n_arg++] = "-f";
  argv[n_arg++] = "";
  if (!SANITIZED)
    argv[n_arg++] = "-x";
  argv[n_arg++] = "-c";
  argv[n_arg++] = "enable name=comm/stall,failinfo=250";
  argv[n_arg++] = "-c";
  argv[n_arg++] = "enable name=engine/send/r3";
  argv[n_arg++] = self;
  argv[n_arg++] = CHILD_FLAG;
  argv[n_arg] = NULL;
  assert_int_equal(wait_bounded(spawn(argv)), 0);
}

/* --- fiu-ctrl: arms a point of a running program from outside, after the
 * program has reached it unarmed (so nothing of ours may cache "unarmed"). */
#define CTRL_CHILD_FLAG "--fiu-ctrl-child"

static int fiu_ctrl_child(void) {
  uint64_t info = 0;
  bs_err_set_rank(1);
  for (int i = 0; i < TICKS; i++) { /* ~10 s */
    if (bs_fault_hit(BS_FP_COMM_STALL, &info)) {
      bs_err_set_rank(0);
      if (info != 7 || bs_fault_hit(BS_FP_COMM_STALL, &info))
        return 20;
      return 0;
    }
    nanosleep(&(struct timespec){.tv_nsec = TICK_NS}, NULL);
  }
  return 21;
}

static bool is_fifo(const char *prefix, const char *ext) {
  char path[160];
  struct stat st;
  snprintf(path, sizeof path, "%s%s", prefix, ext);
  return stat(path, &st) == 0 && S_ISFIFO(st.st_mode);
}

static void test_fiu_ctrl(void **state) {
  (void)state;
  char self[4096], base[64], fifo[96];
  if (!self_path(self, sizeof self))
    skip();
  snprintf(base, sizeof base, "/tmp/bs-test-fault-%d", (int)getpid());
  const char *run[] = {FIU_RUN, "-f", base, self, CTRL_CHILD_FLAG, NULL};
  pid_t pid = spawn(run);
  /* The preload library makes <base>-<pid>.{in,out} before main runs. */
  snprintf(fifo, sizeof fifo, "%s-%d", base, (int)pid);
  for (int i = 0; i < TICKS && !(is_fifo(fifo, ".in") && is_fifo(fifo, ".out"));
       i++)
    nanosleep(&(struct timespec){.tv_nsec = TICK_NS}, NULL);
  assert_true(is_fifo(fifo, ".in") && is_fifo(fifo, ".out"));
  const char *ctl[] = {FIU_CTRL, "-c", "enable name=comm/stall/r1,failinfo=7",
                       fifo, NULL};
  assert_int_equal(wait_bounded(spawn(ctl)), 0);
  assert_int_equal(wait_bounded(pid), 0);
}

#endif

int main(int argc, char **argv) {
#ifdef FIU_ENABLE
  if (argc > 1 && strcmp(argv[1], CHILD_FLAG) == 0)
    return fiu_run_child();
  if (argc > 1 && strcmp(argv[1], CTRL_CHILD_FLAG) == 0)
    return fiu_ctrl_child();
#else
  (void)argc, (void)argv;
#endif
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_catalogue, reset, reset),
      cmocka_unit_test_setup_teardown(test_explains, reset, reset),
      cmocka_unit_test(test_what),
      cmocka_unit_test_setup_teardown(test_parse_good, reset, reset),
      cmocka_unit_test_setup_teardown(test_parse_bad, reset, reset),
#ifndef FIU_ENABLE
      cmocka_unit_test_setup_teardown(test_arm_unsupported, reset, reset),
#endif
      cmocka_unit_test_setup_teardown(test_rank_filter, reset, reset),
      cmocka_unit_test_setup_teardown(test_cycle_filter, reset, reset),
      cmocka_unit_test_setup_teardown(test_nth_filter, reset, reset),
      cmocka_unit_test_setup_teardown(test_prob_deterministic, reset, reset),
      cmocka_unit_test_setup_teardown(test_failinfo, reset, reset),
      cmocka_unit_test_setup_teardown(test_onetime, reset, reset),
      cmocka_unit_test_setup_teardown(test_times_persistent, reset, reset),
      cmocka_unit_test_setup_teardown(test_framework_thread, reset, reset),
      cmocka_unit_test_setup_teardown(test_reach_counts, reset, reset),
      cmocka_unit_test_setup_teardown(test_external_list, reset, reset),
      cmocka_unit_test_setup_teardown(test_prefix, reset, reset),
      cmocka_unit_test_setup_teardown(test_rank_qualified_libfiu, reset, reset),
      cmocka_unit_test_setup_teardown(test_log, reset, reset),
      cmocka_unit_test_setup_teardown(test_disarm_all, reset, reset),
      cmocka_unit_test_setup_teardown(test_table_full, reset, reset),
      cmocka_unit_test_setup_teardown(test_fiu_run, reset, reset),
      cmocka_unit_test_setup_teardown(test_fiu_ctrl, reset, reset),
      cmocka_unit_test_setup_teardown(test_reach_cost, reset, reset),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
