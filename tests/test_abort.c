/* Failures shared across the processes of a job: the note a world
 * publishes, what another world finds, and a world that fails when it
 * finds another's (or publishes its own). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/backend/bs_comm_backend.h"
#include "comm/bs_comm.h"
#include "comm/front/bs_abort.h"

static char dir[64];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/bs_abortXXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s/*", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static int group_teardown(void **state) {
  (void)state;
  return rmdir(dir);
}

static void put(const char *name, const char *text) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_publish_find(void **state) {
  (void)state;
  bs_abort_note n = {.st = BS_ERR_RANK_DEAD,
                     .real_ns = 123,
                     .first = 4,
                     .size = 2,
                     .done = 41,
                     .torn = 3},
                got;
  snprintf(n.cause, sizeof n.cause, "rank 5 died: fault comm/rank_exit");
  assert_false(bs_abort_find(dir, 0, &got));
  assert_int_equal(bs_abort_publish(dir, &n), BS_OK);
  /* Its own note is not news to the world that wrote it. */
  assert_false(bs_abort_find(dir, 4, &got));
  assert_true(bs_abort_find(dir, 0, &got));
  assert_int_equal(got.st, BS_ERR_RANK_DEAD);
  assert_int_equal(got.real_ns, 123);
  assert_int_equal(got.first, 4);
  assert_int_equal(got.size, 2);
  assert_int_equal(got.done, n.done);
  assert_int_equal(got.torn, 3);
  assert_string_equal(got.cause, n.cause);
  /* Several: the lowest first rank; junk and half-written files are not
   * notes. */
  put("abort.2", "16 77 2 2 0 9 1\nrank 2 waited more than 10 ms\n");
  put("abort.8", "18 77 8 2 1 9 1\nfollows: not an original\n");
  put("abort.1", "not a note\n");
  put("abort.3", "99 1 3 1 0 9 1\nstatus out of range\n");
  put("abort.0.tmp.42", "18 1 0 2 0 9 1\nhalf written\n");
  put("abort.6", "16 1 7 2 0 9 1\nfirst rank disagrees with the name\n");
  put("abort.5", "16 1 5 2 0\nan old five-field note\n");
  put("abort.4", "16 1 4 2 0 9\nan old six-field note\n");
  assert_true(bs_abort_find(dir, 0, &got));
  assert_int_equal(got.first, 2);
  assert_int_equal(got.st, 16);
  assert_int_equal(got.done, 9);
  assert_int_equal(bs_abort_publish("/nonexistent/dir", &n), BS_ERR_INVALID);
}

static bs_status barriers(bs_comm *c, void *arg) {
  (void)arg;
  struct timespec nap = {0, 1000000L};
  for (int i = 0; i < 2000; i++) {
    bs_status st = bs_comm_barrier(c);
    if (st != BS_OK)
      return st;
    nanosleep(&nap, NULL);
  }
  return BS_OK;
}

/* Another process's note stops this world's ranks with its status. */
static void test_world_finds_note(void **state) {
  (void)state;
  bs_world *w = NULL;
  bs_world_opts o = {.size = 1, .timeout_ms = 5000, .abort_dir = dir};
  bs_abort_note n = {.st = BS_ERR_RANK_DEAD,
                     .real_ns = bs_abort_real_ns(),
                     .first = 1,
                     .size = 1,
                     .done = 3,
                     .torn = 2};
  snprintf(n.cause, sizeof n.cause, "rank 1 died: fault comm/rank_exit");
  assert_int_equal(bs_world_create(&o, &w), BS_OK);
  assert_int_equal(bs_abort_publish(dir, &n), BS_OK);
  bs_err_clear();
  assert_int_equal(bs_world_run(w, NULL, barriers, NULL), BS_ERR_RANK_DEAD);
  assert_non_null(strstr(bs_world_report(w), "rank 1 died: fault"));
  assert_true(bs_world_detect_ms(w) >= 0);
  /* A collective of the world communicator the note's world went through
   * completes here too: a wait in it is not aborted; the next one, a
   * subgroup's or a p2p op is. */
  bs_rank_pos p = {.state = BS_RANK_IN_COLL,
                   .at = {.op = BS_COLL_ALL_REDUCE, .seq = 3}};
  assert_true(bs_world_joined_by_failer(w, &p));
  p.at.seq = 4;
  assert_false(bs_world_joined_by_failer(w, &p));
  p.at.seq = 3;
  p.at.pg = 1;
  assert_false(bs_world_joined_by_failer(w, &p));
  p.at.pg = 0;
  p.at.op = BS_COLL_SEND;
  assert_false(bs_world_joined_by_failer(w, &p));
  p.at.op = BS_COLL_ALL_REDUCE;
  p.state = BS_RANK_RUNNING;
  assert_false(bs_world_joined_by_failer(w, &p));
  /* So does a teardown it finished (its second: torn 2), not a later
   * one, and not outside a teardown. */
  p.tearing = true;
  p.torn = 1;
  assert_true(bs_world_joined_by_failer(w, &p));
  p.torn = 2;
  assert_false(bs_world_joined_by_failer(w, &p));
  p.torn = 1;
  p.tearing = false;
  assert_false(bs_world_joined_by_failer(w, &p));
  bs_world_destroy(w);
}

/* One rule, whatever the order the notes were read in: among originals the
 * most severe status wins (a death over the desync or timeout it caused),
 * then the lowest first rank; notes that only follow never win. */
static void test_best_rule(void **state) {
  (void)state;
  bs_abort_note n[5] = {
      {.st = BS_ERR_DESYNC, .first = 0},
      {.st = BS_ERR_RANK_DEAD, .first = 6},
      {.st = BS_ERR_RANK_DEAD, .first = 2},
      {.st = BS_ERR_ABORTED, .first = 1},
      {.st = BS_ERR_RANK_DEAD, .first = 0, .follows = true},
  };
  assert_ptr_equal(bs_abort_best(n, 5), &n[2]);
  bs_abort_note r[5] = {n[4], n[3], n[2], n[1], n[0]};
  assert_int_equal(bs_abort_best(r, 5)->first, 2);
  assert_int_equal(bs_abort_best(n, 1)->st, BS_ERR_DESYNC);
  assert_int_equal(bs_abort_best(&n[3], 1)->st, BS_ERR_ABORTED);
  assert_null(bs_abort_best(&n[4], 1));
  assert_null(bs_abort_best(n, 0));
}

/* A job of three processes: this world first reads the desync of the world
 * of rank 1 (the lowest original), but the death in the world of rank 2
 * is what the job settles on, so every rank here returns rank-dead with
 * that world's cause, as its own process does. */
static void test_settle_picks_the_rule_not_the_first_read(void **state) {
  (void)state;
  bs_world *w = NULL;
  bs_world_opts o = {
      .size = 1, .timeout_ms = 5000, .abort_dir = dir, .procs = 3};
  bs_abort_note desync = {.st = BS_ERR_DESYNC,
                          .real_ns = bs_abort_real_ns(),
                          .first = 1,
                          .size = 1};
  snprintf(desync.cause, sizeof desync.cause,
           "fingerprint mismatch before #7: rank 1 issues a different "
           "collective than rank 0");
  bs_abort_note death = desync;
  death.st = BS_ERR_RANK_DEAD;
  death.first = 2;
  snprintf(death.cause, sizeof death.cause, "rank 2 died: fault test");
  assert_int_equal(bs_world_create(&o, &w), BS_OK);
  assert_int_equal(bs_abort_publish(dir, &desync), BS_OK);
  assert_int_equal(bs_abort_publish(dir, &death), BS_OK);
  bs_err_clear();
  assert_int_equal(bs_world_run(w, NULL, barriers, NULL), BS_ERR_RANK_DEAD);
  bs_error e;
  assert_int_equal(bs_world_rank_status(w, 0, &e), BS_ERR_RANK_DEAD);
  assert_non_null(strstr(e.message, "rank 2 died: fault test"));
  assert_non_null(strstr(bs_world_report(w), "rank 2 died: fault test"));
  bs_world_destroy(w);
  /* This world published that it follows, and nothing of its own. */
  bs_abort_note got[4];
  assert_int_equal(bs_abort_collect(dir, got, 4), 3);
  for (int i = 0; i < 3; i++)
    if (got[i].first == 0)
      assert_true(got[i].follows);
}

static bs_status die_or_wait(bs_comm *c, void *arg) {
  (void)arg;
  for (int i = 0; i < 2; i++)
    if (bs_comm_barrier(c) != BS_OK)
      return BS_ERR_ABORTED;
  /* A teardown both finish, and the groups made again. */
  if (bs_comm_destroy(c) != BS_OK || bs_comm_init(c, "test") != BS_OK)
    return BS_ERR_ABORTED;
  if (bs_comm_rank(c) == 1) {
    bs_comm_die(c, "test");
    return BS_ERR_RANK_DEAD;
  }
  return bs_comm_barrier(c);
}

/* A world's own first failure is published for the others. */
static void test_world_publishes(void **state) {
  (void)state;
  bs_world *w = NULL;
  bs_world_opts o = {.size = 2, .timeout_ms = 5000, .abort_dir = dir};
  bs_abort_note got;
  assert_int_equal(bs_world_create(&o, &w), BS_OK);
  bs_err_clear();
  assert_int_equal(bs_world_run(w, NULL, die_or_wait, NULL), BS_ERR_RANK_DEAD);
  assert_true(bs_abort_find(dir, -1, &got));
  assert_int_equal(got.st, BS_ERR_RANK_DEAD);
  assert_int_equal(got.first, 0);
  assert_int_equal(got.size, 2);
  assert_non_null(strstr(got.cause, "rank 1"));
  assert_true(got.real_ns <= bs_abort_real_ns());
  /* Both ranks went through the two barriers, the teardown and the init
   * (a collective too) before the death. */
  assert_int_equal(got.done, 3);
  assert_int_equal(got.torn, 1);
  bs_world_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_publish_find, teardown),
      cmocka_unit_test_teardown(test_world_finds_note, teardown),
      cmocka_unit_test_teardown(test_world_publishes, teardown),
      cmocka_unit_test(test_best_rule),
      cmocka_unit_test_teardown(test_settle_picks_the_rule_not_the_first_read,
                                teardown),
  };
  return cmocka_run_group_tests(tests, setup, group_teardown);
}
