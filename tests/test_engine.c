/* The engine stand-in. This binary is also the engine: started with
 * "engine" as its first argument it runs bs_engine_main, exactly as the
 * backstop CLI dispatches its hidden `engine` command. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#ifdef FIU_ENABLE
#include <fiu-control.h>
#include <fiu.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bs_digest.h"
#include "bs_err.h"
#include "bs_fault_control.h"
#include "bs_test_faults.h"
#include "sync/bs_engine.h"
#include "sync/bs_engine_keep.h"
#include "sync/bs_engine_main.h"
#include "sync/bs_sync_testing.h"
#include "sync/bs_wire.h"

#define SELF "/proc/self/exe"
#define NT 4

/* Tensors of one update: distinct seeded bytes, one of them empty. */
typedef struct update {
  const char *names[NT];
  bs_dtype dtypes[NT];
  unsigned char bytes[NT][256];
  size_t nbytes[NT];
  bs_digest digests[NT];
} update;

static void make_update(update *u, unsigned seed) {
  static const char *names[NT] = {"layers.0.w", "layers.0.bias", "empty",
                                  "layers.1.expert_bias"};
  static const bs_dtype dt[NT] = {BS_BF16, BS_F32, BS_BF16, BS_F32};
  static const size_t nb[NT] = {256, 64, 0, 128};
  uint32_t x = seed * 2654435761u + 1;
  for (int i = 0; i < NT; i++) {
    u->names[i] = names[i];
    u->dtypes[i] = dt[i];
    u->nbytes[i] = nb[i];
    for (size_t j = 0; j < nb[i]; j++) {
      x = x * 1664525u + 1013904223u;
      u->bytes[i][j] = (unsigned char)(x >> 24);
    }
    assert_int_equal(bs_digest_sha256(u->bytes[i], nb[i], &u->digests[i]),
                     BS_OK);
  }
}

/* Tensors [from, to) of u, one bucket each. */
static bs_status send_range(bs_engine *e, const update *u, int from, int to) {
  for (int i = from; i < to; i++) {
    bs_engine_bucket(e, i);
    bs_status st = bs_engine_send(e, u->names[i], u->dtypes[i], u->bytes[i],
                                  u->nbytes[i], &u->digests[i]);
    if (st != BS_OK)
      return st;
  }
  return BS_OK;
}

static bs_status run_update(bs_engine *e, const update *u, int cycle,
                            bs_engine_result *res) {
  bs_status st = bs_engine_update_begin(e, cycle);
  if (st == BS_OK)
    st = send_range(e, u, 0, NT);
  if (st == BS_OK)
    st = bs_engine_update_end(e, res);
  return st;
}

static void expect_err(bs_status st, bs_status code, const char *substr) {
  assert_int_equal(st, code);
  assert_int_equal(bs_err()->code, code);
  if (!strstr(bs_err()->message, substr))
    fail_msg("message '%s' lacks '%s'", bs_err()->message, substr);
}

static void wait_dead(bs_engine *e) {
  struct timespec tick = {0, 1000000};
  for (int i = 0; i < 5000 && bs_engine_alive(e); i++)
    nanosleep(&tick, NULL);
  assert_false(bs_engine_alive(e));
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int setup(void **state) {
  (void)state;
#ifdef FIU_ENABLE
  fiu_init(0);
#endif
  bs_err_set_rank(0);
  bs_err_clear();
  return 0;
}

/* Every engine was reaped: no zombie, no child left. */
static int teardown(void **state) {
  (void)state;
#ifdef FIU_ENABLE
  fiu_disable("engine/send");
  fiu_disable("engine/send/r1");
  fiu_disable("engine/verify");
#endif
  errno = 0;
  assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
  assert_int_equal(errno, ECHILD);
  return 0;
}

/* Whether process pid is this process's child and runs the zygote's image
 * (its command line says "--zygote": forked from it, not executed). */
static bool forked_child(pid_t pid) {
  char path[64], buf[512], *at;
  int ppid = -1;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  assert_non_null(fgets(buf, sizeof buf, f));
  fclose(f);
  assert_non_null(at = strrchr(buf, ')'));
  assert_int_equal(sscanf(at + 1, " %*c %d", &ppid), 1);
  assert_int_equal(ppid, (int)getpid());
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
  f = fopen(path, "r");
  assert_non_null(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  for (size_t i = 0; i < n; i++)
    if (buf[i] == '\0' && strcmp(buf + i + 1, "--zygote") == 0)
      return true;
  return false;
}

/* A world of 1024 ranks: ranks 4..7 share one engine process (256 of
 * them for the world), each with its own connection and its own answers,
 * interleaved; rank 8 starts the next one. Stopped in any order, the
 * process ends cleanly with the last and is reaped (teardown). */
static void shared_process(bool zygote) {
  bs_engine *e[5] = {NULL};
  update u[4];
  bs_engine_result res;
  for (int i = 0; i < 5; i++)
    assert_int_equal(bs_engine_start_world(SELF, NULL, 4 + i, 1024, &e[i]),
                     BS_OK);
  for (int i = 1; i < 4; i++)
    assert_int_equal(bs_engine_pid(e[i]), bs_engine_pid(e[0]));
  assert_true(bs_engine_pid(e[4]) != bs_engine_pid(e[0]));
  assert_true(forked_child(bs_engine_pid(e[0])) == zygote);
  for (int i = 0; i < 4; i++) {
    make_update(&u[i], (unsigned)i + 7);
    assert_int_equal(bs_engine_update_begin(e[i], 1), BS_OK);
  }
  for (int i = 3; i >= 0; i--) /* their frames interleave */
    assert_int_equal(send_range(e[i], &u[i], 0, 2), BS_OK);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(send_range(e[i], &u[i], 2, NT), BS_OK);
    assert_int_equal(bs_engine_update_end(e[i], &res), BS_OK);
    assert_int_equal(res.ntensors, NT);
    assert_memory_equal(res.digests, u[i].digests, sizeof u[i].digests);
    bs_engine_result_free(&res);
  }
  const int order[] = {2, 0, 4, 3, 1};
  for (int i = 0; i < 5; i++)
    assert_int_equal(bs_engine_stop(e[order[i]]), BS_OK);
  bs_err_clear();
}

static void test_shared_process(void **state) {
  (void)state;
  shared_process(false);
}

/* The same from a process that keeps engines: the zygote is handed the 4
 * sockets of the shared process in one request. */
static void test_shared_process_forked(void **state) {
  (void)state;
  bs_engine_keep(2);
  shared_process(true);
  bs_engine_keep(0);
}

/* A restart in a world of groups starts a group process again, at the
 * engine's next use: ranks 4..7 restarted have no process until then, and
 * then share a fresh one, not one each; rank 5 restarted twice, the
 * second time after its group's process started, starts another. */
static void test_restart_in_group(void **state) {
  (void)state;
  bs_engine *e[4] = {NULL};
  bs_engine_result res;
  for (int i = 0; i < 4; i++)
    assert_int_equal(bs_engine_start_world(SELF, NULL, 4 + i, 1024, &e[i]),
                     BS_OK);
  pid_t old = bs_engine_pid(e[0]);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(bs_engine_restart(e[i]), BS_OK);
    assert_int_equal(bs_engine_pid(e[i]), -1);
    assert_false(bs_engine_alive(e[i]));
  }
  for (int i = 0; i < 4; i++)
    assert_int_equal(bs_engine_reconnect(e[i]), BS_OK);
  pid_t now = bs_engine_pid(e[0]);
  assert_true(now > 0 && now != old);
  for (int i = 1; i < 4; i++)
    assert_int_equal(bs_engine_pid(e[i]), now);
  assert_int_equal(bs_engine_restart(e[1]), BS_OK);
  assert_int_equal(bs_engine_update_begin(e[1], 1), BS_OK);
  assert_int_equal(bs_engine_update_end(e[1], &res), BS_OK);
  assert_int_equal(res.ntensors, 0);
  bs_engine_result_free(&res);
  assert_true(bs_engine_pid(e[1]) != now && bs_engine_pid(e[1]) > 0);
  assert_int_equal(bs_engine_pid(e[2]), now);
  for (int i = 0; i < 4; i++) {
    assert_true(bs_engine_alive(e[i]));
    assert_int_equal(bs_engine_stop(e[i]), BS_OK);
  }
  bs_err_clear();
}

static void test_clean_updates(void **state) {
  (void)state;
  bs_engine *e = NULL;
  update u;
  bs_engine_result res;
  assert_int_equal(bs_engine_start(SELF, NULL, 0, &e), BS_OK);
  assert_true(bs_engine_alive(e));
  assert_true(bs_engine_pid(e) > 0);
  assert_int_equal(bs_engine_rank(e), 0);
  for (int cycle = 0; cycle < 3; cycle++) {
    make_update(&u, (unsigned)cycle);
    assert_int_equal(run_update(e, &u, cycle, &res), BS_OK);
    assert_int_equal(res.cycle, cycle);
    assert_int_equal(res.ntensors, NT);
    assert_int_equal(res.nmismatch, 0);
    for (int i = 0; i < NT; i++)
      assert_true(bs_digest_eq(&res.digests[i], &u.digests[i]));
    bs_engine_result_free(&res);
  }
  assert_int_equal(bs_engine_stop(e), BS_OK); /* exit status 0 */
  assert_int_equal(bs_err()->code, BS_OK);
}

/* bs_engine_send_many: a bucket in one write gives the answer tensor by
 * tensor gives (more tensors than one write takes, too); a bad argument
 * anywhere sends none; a killed engine is named at the first tensor. */
static void test_send_many(void **state) {
  (void)state;
  enum { MANY = 150 };
  bs_engine *e = NULL;
  update u;
  bs_engine_result res;
  bs_engine_tensor t[MANY];
  char names[MANY][16];
  make_update(&u, 7);
  for (int i = 0; i < MANY; i++) {
    snprintf(names[i], sizeof names[i], "t%d", i);
    t[i] = (bs_engine_tensor){names[i], u.dtypes[i % NT], u.bytes[i % NT],
                              u.nbytes[i % NT], &u.digests[i % NT]};
  }
  assert_int_equal(bs_engine_start(SELF, NULL, 0, &e), BS_OK);
  assert_int_equal(bs_engine_update_begin(e, 0), BS_OK);
  assert_int_equal(bs_engine_send_many(e, t, MANY), BS_OK);
  assert_int_equal(bs_engine_update_end(e, &res), BS_OK);
  assert_int_equal(res.ntensors, MANY);
  assert_int_equal(res.nmismatch, 0);
  for (int i = 0; i < MANY; i++)
    assert_true(bs_digest_eq(&res.digests[i], &u.digests[i % NT]));
  bs_engine_result_free(&res);
  assert_int_equal(bs_engine_update_begin(e, 1), BS_OK);
  t[3].nbytes = 3; /* not a whole number of bf16 or fp32 elements */
  expect_err(bs_engine_send_many(e, t, MANY), BS_ERR_INVALID,
             "not a whole number");
  bs_err_clear();
  t[3].nbytes = u.nbytes[3];
  assert_int_equal(bs_engine_send_many(e, t, 2), BS_OK);
  assert_int_equal(bs_engine_update_end(e, &res), BS_OK);
  assert_int_equal(res.ntensors, 2); /* none of the bad call's */
  bs_engine_result_free(&res);
  assert_int_equal(bs_engine_update_begin(e, 2), BS_OK);
  bs_engine_bucket(e, 4);
  kill(bs_engine_pid(e), SIGKILL);
  wait_dead(e);
  expect_err(bs_engine_send_many(e, t + 1, 3), BS_ERR_ENGINE_DEAD,
             "died in bucket 4 at tensor 't1'");
  bs_err_clear();
  assert_int_equal(bs_engine_stop(e), BS_OK);
}

/* Kept engines (bs_engine_keep.h): a rank's engine stopped is kept and the
 * next rank's start takes it (reset: its rank, answers as a fresh one); a
 * dead one is never kept (its rank's next engine is a new process); with
 * keeping off, those kept quit and are reaped (teardown). */
static void test_kept_engines(void **state) {
  (void)state;
  bs_engine *e = NULL;
  update u;
  bs_engine_result res;
  make_update(&u, 3);
  bs_engine_keep(2);
  assert_int_equal(bs_engine_start(SELF, NULL, 0, &e), BS_OK);
  pid_t first = bs_engine_pid(e);
  assert_int_equal(bs_engine_keep_busy(), 1);
  assert_int_equal(run_update(e, &u, 0, NULL), BS_OK);
  assert_int_equal(bs_engine_stop(e), BS_OK);
  assert_int_equal(bs_engine_keep_busy(), 0);
  assert_int_equal(bs_engine_start(SELF, NULL, 5, &e), BS_OK);
  assert_int_equal(bs_engine_pid(e), first); /* kept, not spawned */
  assert_int_equal(bs_engine_rank(e), 5);
  u.digests[2].b[0] ^= 1;
  expect_err(run_update(e, &u, 9, &res), BS_ERR_ENGINE_VERIFY,
             "engine of rank 5: 1/4 received tensors do not match");
  assert_int_equal(res.nmismatch, 1); /* nothing of the last update kept */
  bs_engine_result_free(&res);
  bs_err_clear();
  assert_int_equal(kill(first, SIGKILL), 0);
  wait_dead(e);
  bs_engine_stop(e);
  bs_err_clear();
  assert_int_equal(bs_engine_start(SELF, NULL, 1, &e), BS_OK);
  assert_true(bs_engine_pid(e) != first); /* a death is never kept */
  assert_int_equal(bs_engine_stop(e), BS_OK);
  bs_engine_keep(0);
}

/* A process that keeps engines forks them from its zygote
 * (bs_engine_zygote.h): each is its child all the same (it waits for it,
 * it sees how it ended) and serves as an executed one does; with keeping
 * off, they are executed again. */
static void test_zygote_engines(void **state) {
  (void)state;
  bs_engine *e = NULL, *f = NULL;
  update u;
  make_update(&u, 4);
  bs_engine_keep(2);
  assert_int_equal(bs_engine_start(SELF, NULL, 0, &e), BS_OK);
  assert_int_equal(bs_engine_start(SELF, NULL, 1, &f), BS_OK);
  assert_true(forked_child(bs_engine_pid(e)));
  assert_true(forked_child(bs_engine_pid(f)));
  assert_int_equal(run_update(e, &u, 0, NULL), BS_OK);
  assert_int_equal(bs_engine_update_begin(f, 1), BS_OK);
  kill(bs_engine_pid(f), SIGKILL);
  wait_dead(f);
  expect_err(bs_engine_update_end(f, NULL), BS_ERR_ENGINE_DEAD,
             "killed by signal 9");
  bs_err_clear();
  assert_int_equal(bs_engine_stop(f), BS_OK); /* already reported */
  assert_int_equal(bs_engine_stop(e), BS_OK);
  bs_engine_keep(0);
  assert_int_equal(bs_engine_start(SELF, NULL, 0, &e), BS_OK);
  assert_false(forked_child(bs_engine_pid(e)));
  assert_int_equal(run_update(e, &u, 1, NULL), BS_OK);
  assert_int_equal(bs_engine_stop(e), BS_OK);
}

static void test_wrong_expected_digest(void **state) {
  (void)state;
  bs_engine *e = NULL;
  update u;
  bs_engine_result res;
  make_update(&u, 7);
  bs_digest sent_ok = u.digests[1];
  u.digests[1].b[5] ^= 1; /* the trainer claims other bytes */
  u.digests[3].b[0] ^= 1;
  assert_int_equal(bs_engine_start(SELF, NULL, 3, &e), BS_OK);
  expect_err(run_update(e, &u, 4, &res), BS_ERR_ENGINE_VERIFY,
             "engine of rank 3: 2/4 received tensors do not match");
  assert_string_equal(bs_err()->tensor, "layers.0.bias");
  assert_non_null(strstr(bs_err()->message, "'layers.0.bias' (cycle 4)"));
  assert_int_equal(res.nmismatch, 2);
  assert_int_equal(res.first_bad, 1);
  assert_string_equal(res.first_bad_name, "layers.0.bias");
  assert_true(bs_digest_eq(&res.digests[1], &sent_ok)); /* bytes were fine */
  bs_engine_result_free(&res);
  /* the engine lives on: the next update verifies */
  bs_err_clear();
  make_update(&u, 8);
  assert_int_equal(run_update(e, &u, 5, NULL), BS_OK);
  assert_int_equal(bs_engine_stop(e), BS_OK);
}

static void test_kill_mid_stream_then_restart(void **state) {
  (void)state;
  bs_engine *e = NULL;
  update u;
  bs_engine_result res;
  make_update(&u, 1);
  bs_err_set_rank(2);
  assert_int_equal(bs_engine_start(SELF, NULL, 2, &e), BS_OK);
  bs_engine_set_timeout_ms(e, 60000);
  pid_t first = bs_engine_pid(e);
  double t0 = now_s();
  assert_int_equal(bs_engine_update_begin(e, 6), BS_OK);
  assert_int_equal(send_range(e, &u, 0, 1), BS_OK);
  assert_int_equal(kill(first, SIGKILL), 0);
  wait_dead(e);
  assert_int_equal(bs_engine_pid(e), -1);
  expect_err(send_range(e, &u, 1, NT), BS_ERR_ENGINE_DEAD,
             "engine of rank 2 died in bucket 1 at tensor 'layers.0.bias' "
             "(cycle 6): killed by signal 9");
  assert_string_equal(bs_err()->tensor, "layers.0.bias");
  assert_int_equal(bs_err()->rank, 2);
  /* generous: proves the death was seen, not the 60 s timeout */
  assert_true(now_s() - t0 < 30.0);
  expect_err(bs_engine_update_end(e, &res), BS_ERR_ENGINE_DEAD, "signal 9");
  assert_null(res.digests);
  bs_err_clear();
  assert_int_equal(bs_engine_restart(e), BS_OK);
  assert_true(bs_engine_pid(e) > 0);
  assert_true(bs_engine_pid(e) != first);
  assert_int_equal(run_update(e, &u, 7, &res), BS_OK);
  assert_true(bs_digest_eq(&res.digests[3], &u.digests[3]));
  bs_engine_result_free(&res);
  assert_int_equal(bs_engine_stop(e), BS_OK);
}

static void test_death_before_reply_and_begin(void **state) {
  (void)state;
  bs_engine *e = NULL;
  update u;
  make_update(&u, 2);
  assert_int_equal(bs_engine_start(SELF, NULL, 0, &e), BS_OK);
  assert_int_equal(bs_engine_update_begin(e, 1), BS_OK);
  assert_int_equal(send_range(e, &u, 0, NT), BS_OK);
  kill(bs_engine_pid(e), SIGKILL);
  wait_dead(e);
  expect_err(bs_engine_update_end(e, NULL), BS_ERR_ENGINE_DEAD,
             "died before answering (after bucket 3, 4 tensors) (cycle 1)");
  bs_err_clear();
  expect_err(bs_engine_update_begin(e, 2), BS_ERR_ENGINE_DEAD,
             "died before the update (cycle 2): killed by signal 9");
  bs_err_clear();
  assert_int_equal(bs_engine_stop(e), BS_OK); /* already reported */
  /* a death nobody noticed is reported by stop */
  assert_int_equal(bs_engine_start(SELF, NULL, 0, &e), BS_OK);
  kill(bs_engine_pid(e), SIGKILL);
  expect_err(bs_engine_stop(e), BS_ERR_ENGINE_DEAD,
             "did not stop cleanly: killed by signal 9");
}

#ifdef FIU_ENABLE
/* libfiu's own name, rank-qualified: only rank 1's engine dies, at the
 * bucket where the point is reached, and the next write fails. */
static void test_send_fault_kills_engine(void **state) {
  (void)state;
  bs_engine *e0 = NULL, *e1 = NULL;
  update u;
  make_update(&u, 3);
  assert_int_equal(bs_engine_start(SELF, NULL, 0, &e0), BS_OK);
  assert_int_equal(bs_engine_start(SELF, NULL, 1, &e1), BS_OK);
  size_t fired = bs_fault_log_count();
  assert_int_equal(fiu_enable("engine/send/r1", 1, NULL, 0), 0);
  bs_err_set_rank(0);
  assert_int_equal(run_update(e0, &u, 0, NULL), BS_OK);
  assert_int_equal(bs_fault_log_count(), fired);
  bs_err_set_rank(1);
  assert_int_equal(bs_engine_update_begin(e1, 0), BS_OK);
  expect_err(send_range(e1, &u, 2, NT), BS_ERR_ENGINE_DEAD,
             "engine of rank 1 died in bucket 2 at tensor 'empty' (cycle 0): "
             "killed by signal 9");
  assert_int_equal(bs_fault_log_count(), fired + 1);
  assert_false(bs_engine_alive(e1));
  assert_true(bs_engine_alive(e0));
  fiu_disable("engine/send/r1");
  bs_err_clear();
  assert_int_equal(bs_engine_restart(e1), BS_OK);
  assert_int_equal(run_update(e1, &u, 1, NULL), BS_OK);
  /* the plain name reaches every rank */
  assert_int_equal(fiu_enable("engine/send", 1, NULL, FIU_ONETIME), 0);
  bs_err_set_rank(0);
  expect_err(run_update(e0, &u, 2, NULL), BS_ERR_ENGINE_DEAD,
             "engine of rank 0 died in bucket 0");
  bs_err_clear();
  assert_int_equal(bs_engine_stop(e0), BS_OK);
  assert_int_equal(bs_engine_stop(e1), BS_OK);
}

/* engine/verify: the engine really corrupts what it received. */
static void test_verify_fault_flips_a_bit(void **state) {
  (void)state;
  bs_engine *e = NULL;
  update u;
  bs_engine_result res;
  make_update(&u, 4);
  assert_int_equal(bs_engine_start(SELF, NULL, 0, &e), BS_OK);
  uint64_t info = (13ull << 32) | 1; /* tensor 1, bit 13 */
  assert_int_equal(
      fiu_enable("engine/verify", 1, (void *)(uintptr_t)info, FIU_ONETIME), 0);
  expect_err(run_update(e, &u, 0, &res), BS_ERR_ENGINE_VERIFY,
             "1/4 received tensors");
  assert_string_equal(bs_err()->tensor, "layers.0.bias");
  unsigned char flipped[64];
  memcpy(flipped, u.bytes[1], sizeof flipped);
  flipped[1] ^= 1u << 5;
  bs_digest want;
  assert_int_equal(bs_digest_sha256(flipped, sizeof flipped, &want), BS_OK);
  assert_true(bs_digest_eq(&res.digests[1], &want));
  assert_true(bs_digest_eq(&res.digests[0], &u.digests[0]));
  bs_engine_result_free(&res);
  bs_err_clear();
  /* onetime: the next update is clean */
  assert_int_equal(run_update(e, &u, 1, NULL), BS_OK);
  /* a tensor index past the update lands on the last tensor (libfiu leaks
   * the name when a fired onetime point is enabled again undisabled) */
  fiu_disable("engine/verify");
  assert_int_equal(fiu_enable("engine/verify", 1, (void *)99, FIU_ONETIME), 0);
  expect_err(run_update(e, &u, 2, &res), BS_ERR_ENGINE_VERIFY,
             "first 'layers.1.expert_bias'");
  assert_int_equal(res.first_bad, 3);
  bs_engine_result_free(&res);
  bs_err_clear();
  assert_int_equal(bs_engine_stop(e), BS_OK);
}
#else
BS_TEST_SKIP_WITHOUT_FAULTS(test_send_fault_kills_engine)
BS_TEST_SKIP_WITHOUT_FAULTS(test_verify_fault_flips_a_bit)
#endif

static void test_bad_input(void **state) {
  (void)state;
  bs_engine *e = NULL;
  update u;
  make_update(&u, 5);
  expect_err(bs_engine_start("/nonexistent/backstop", NULL, 0, &e),
             BS_ERR_INVALID, "cannot start the engine '/nonexistent/backstop'");
  assert_null(e);
  bs_err_clear();
  expect_err(bs_engine_start(SELF, NULL, -1, &e), BS_ERR_INVALID, "rank");
  bs_err_clear();
  expect_err(bs_engine_start(SELF, NULL, 0, NULL), BS_ERR_INVALID, "output");
  bs_err_clear();
  assert_int_equal(bs_engine_start(SELF, NULL, 0, &e), BS_OK);
  expect_err(bs_engine_send(e, "w", BS_BF16, u.bytes[0], 4, &u.digests[0]),
             BS_ERR_STATE, "outside an update");
  bs_err_clear();
  expect_err(bs_engine_update_end(e, NULL), BS_ERR_STATE, "without a begin");
  bs_err_clear();
  assert_int_equal(bs_engine_update_begin(e, 0), BS_OK);
  expect_err(bs_engine_send(e, "w", BS_F32, u.bytes[0], 6, &u.digests[0]),
             BS_ERR_INVALID, "6 bytes are not a whole number");
  bs_err_clear();
  expect_err(bs_engine_send(e, "w", BS_F32, NULL, 8, &u.digests[0]),
             BS_ERR_INVALID, "missing argument");
  bs_err_clear();
  char long_name[300];
  memset(long_name, 'n', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  expect_err(bs_engine_send(e, long_name, BS_U8, u.bytes[0], 1, &u.digests[0]),
             BS_ERR_INVALID, "name longer than 255");
  bs_err_clear();
  /* bytes that cannot be read (a paused region): reported, not a crash */
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  void *paused =
      mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(paused != MAP_FAILED);
  expect_err(bs_engine_send(e, "paused", BS_U8, paused, page, &u.digests[0]),
             BS_ERR_PAUSED_READ, "not readable");
  munmap(paused, page);
  assert_false(bs_engine_alive(e)); /* the stream was cut: stopped */
  bs_err_clear();
  assert_int_equal(bs_engine_restart(e), BS_OK);
  assert_int_equal(run_update(e, &u, 1, NULL), BS_OK);
  assert_int_equal(bs_engine_stop(e), BS_OK);
  assert_int_equal(bs_engine_stop(NULL), BS_OK);
}

/* An engine that never answers: the bounded wait, then it is killed. A
 * short bound: sleep never answers, so a longer one is only waited out. */
static void test_unresponsive_engine_times_out(void **state) {
  (void)state;
  bs_engine *e = NULL;
  const char *const sleeper[] = {"-c", "exec sleep 30", "sh", NULL};
  assert_int_equal(bs_engine_start("/bin/sh", sleeper, 4, &e), BS_OK);
  bs_engine_set_timeout_ms(e, 10);
  assert_int_equal(bs_engine_update_begin(e, 0), BS_OK);
  expect_err(bs_engine_update_end(e, NULL), BS_ERR_TIMEOUT,
             "engine of rank 4 did not respond within 10 ms");
  assert_false(bs_engine_alive(e));
  bs_err_clear();
  assert_int_equal(bs_engine_stop(e), BS_OK);
}

/* Ranks as threads, each with its engine, all started before one engine
 * dies mid-update: its death is seen at once (its socket end lives in no
 * sibling engine), the others are untouched. */
#define NRANKS 4
static pthread_barrier_t ranks_started, ranks_checked;
static bs_status rank_status[NRANKS];
static char rank_message[NRANKS][256];

static bs_status rank_update(bs_engine *e, int r) {
  update u;
  make_update(&u, (unsigned)r);
  bs_status st = bs_engine_update_begin(e, 0);
  pthread_barrier_wait(&ranks_started);
  if (st == BS_OK && r == 1) {
    bs_engine_set_timeout_ms(e, 60000);
    kill(bs_engine_pid(e), SIGKILL);
    struct timespec tick = {0, 1000000};
    for (int i = 0; i < 5000 && bs_engine_alive(e); i++)
      nanosleep(&tick, NULL);
  }
  if (st == BS_OK)
    st = send_range(e, &u, 0, NT);
  if (st == BS_OK)
    st = bs_engine_update_end(e, NULL);
  return st;
}

static void *rank_main(void *arg) {
  int r = (int)(intptr_t)arg;
  bs_engine *e = NULL;
  bs_err_set_rank(r);
  bs_err_clear();
  bs_status st = bs_engine_start(SELF, NULL, r, &e);
  if (st == BS_OK)
    st = rank_update(e, r);
  else
    pthread_barrier_wait(&ranks_started);
  pthread_barrier_wait(&ranks_checked);
  bs_engine_stop(e);
  rank_status[r] = st;
  snprintf(rank_message[r], sizeof rank_message[r], "%s", bs_err()->message);
  return NULL;
}

static void test_engines_of_concurrent_ranks(void **state) {
  (void)state;
  pthread_t t[NRANKS];
  pthread_barrier_init(&ranks_started, NULL, NRANKS);
  pthread_barrier_init(&ranks_checked, NULL, NRANKS);
  for (int r = 0; r < NRANKS; r++)
    assert_int_equal(
        pthread_create(&t[r], NULL, rank_main, (void *)(intptr_t)r), 0);
  for (int r = 0; r < NRANKS; r++)
    pthread_join(t[r], NULL);
  pthread_barrier_destroy(&ranks_started);
  pthread_barrier_destroy(&ranks_checked);
  for (int r = 0; r < NRANKS; r++)
    assert_int_equal(rank_status[r], r == 1 ? BS_ERR_ENGINE_DEAD : BS_OK);
  if (!strstr(rank_message[1], "engine of rank 1 died in bucket 0 at tensor"))
    print_error("rank 1 said: %s\n", rank_message[1]);
  assert_non_null(strstr(rank_message[1], "engine of rank 1 died in bucket 0 "
                                          "at tensor 'layers.0.w'"));
}

/* The engine body in this process, fed through a socket pair. */
static int run_engine_on(int fd, const char *idle_ms) {
  char fds[16];
  snprintf(fds, sizeof fds, "%d", fd);
  char *argv[] = {"engine",    "--fd",          fds, "--rank", "9",
                  "--idle-ms", (char *)idle_ms, NULL};
  return bs_engine_main(7, argv);
}

static void test_engine_main_protocol(void **state) {
  (void)state;
  int sv[2];
  char *bad_args[] = {"engine", "--fd", "x", NULL};
  assert_int_equal(bs_engine_main(3, bad_args), 2);
  char *no_fd[] = {"engine", "--fd", "999", "--rank", "0", NULL};
  assert_int_equal(bs_engine_main(5, no_fd), 2);
  /* a full update, then QUIT: exit 0 and a reply with the digests */
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  bs_emsg_begin b = {.cycle = 3};
  bs_emsg_tensor m = {.name_len = 1, .dtype = BS_U8, .nbytes = 3};
  bs_emsg_end end = {.ntensors = 1};
  bs_digest d;
  assert_int_equal(bs_digest_sha256("abc", 3, &d), BS_OK);
  memcpy(m.expected, d.b, sizeof m.expected);
  assert_int_equal(bs_wire_frame(sv[0], BS_EMSG_BEGIN, &b, sizeof b, 0, 100),
                   0);
  assert_int_equal(bs_wire_frame(sv[0], BS_EMSG_TENSOR, &m, sizeof m, 4, 100),
                   0);
  assert_int_equal(bs_wire_write(sv[0], "wabc", 4, 100), 0);
  assert_int_equal(bs_wire_frame(sv[0], BS_EMSG_END, &end, sizeof end, 0, 100),
                   0);
  assert_int_equal(bs_wire_frame(sv[0], BS_EMSG_QUIT, NULL, 0, 0, 100), 0);
  assert_int_equal(run_engine_on(sv[1], "1000"), 0);
  bs_eframe h;
  bs_emsg_reply r;
  bs_digest got;
  assert_int_equal(bs_wire_read(sv[0], &h, sizeof h, 100), 0);
  assert_int_equal(h.type, BS_EMSG_REPLY);
  assert_int_equal(bs_wire_read(sv[0], &r, sizeof r, 100), 0);
  assert_int_equal(r.ntensors, 1);
  assert_int_equal(r.nmismatch, 0);
  assert_int_equal(bs_wire_read(sv[0], &got, sizeof got, 100), 0);
  assert_true(bs_digest_eq(&got, &d));
  /* a garbled frame: protocol error, exit 3 */
  h = (bs_eframe){.magic = 1, .type = BS_EMSG_BEGIN};
  assert_int_equal(bs_wire_write(sv[0], &h, sizeof h, 100), 0);
  assert_int_equal(run_engine_on(sv[1], "1000"), 3);
  m.dtype = 99;
  assert_int_equal(bs_wire_frame(sv[0], BS_EMSG_TENSOR, &m, sizeof m, 4, 100),
                   0);
  assert_int_equal(run_engine_on(sv[1], "1000"), 3);
  /* END with a wrong count */
  end.ntensors = 5;
  assert_int_equal(bs_wire_frame(sv[0], BS_EMSG_END, &end, sizeof end, 0, 100),
                   0);
  assert_int_equal(run_engine_on(sv[1], "1000"), 3);
  /* nothing arrives within the idle limit */
  assert_int_equal(run_engine_on(sv[1], "10"), 1);
  /* the trainer is gone: exit 1 */
  close(sv[0]);
  assert_int_equal(run_engine_on(sv[1], "1000"), 1);
  close(sv[1]);
}

/* One update on fd, written whole before the engine reads any of it: a
 * tensor of 3 bytes, then one of BIG bytes (past what the engine reads
 * ahead), then QUIT. */
enum { BIG = 40000 };

static void write_update(int fd, unsigned char *big, bs_digest d[2]) {
  bs_emsg_begin b = {.cycle = 1};
  bs_emsg_tensor m[2] = {{.name_len = 1, .dtype = BS_U8, .nbytes = 3},
                         {.name_len = 1, .dtype = BS_U8, .nbytes = BIG}};
  bs_emsg_end end = {.ntensors = 2};
  assert_int_equal(bs_digest_sha256("abc", 3, &d[0]), BS_OK);
  assert_int_equal(bs_digest_sha256(big, BIG, &d[1]), BS_OK);
  for (int i = 0; i < 2; i++)
    memcpy(m[i].expected, d[i].b, sizeof m[i].expected);
  assert_int_equal(bs_wire_frame(fd, BS_EMSG_BEGIN, &b, sizeof b, 0, 100), 0);
  assert_int_equal(
      bs_wire_frame(fd, BS_EMSG_TENSOR, &m[0], sizeof m[0], 4, 100), 0);
  assert_int_equal(bs_wire_write(fd, "aabc", 4, 100), 0);
  assert_int_equal(
      bs_wire_frame(fd, BS_EMSG_TENSOR, &m[1], sizeof m[1], 1 + BIG, 100), 0);
  assert_int_equal(bs_wire_write(fd, "b", 1, 100), 0);
  assert_int_equal(bs_wire_write(fd, big, BIG, 100), 0);
  assert_int_equal(bs_wire_frame(fd, BS_EMSG_END, &end, sizeof end, 0, 100), 0);
  assert_int_equal(bs_wire_frame(fd, BS_EMSG_QUIT, NULL, 0, 0, 100), 0);
}

static void expect_reply(int fd, const bs_digest d[2]) {
  bs_eframe h;
  bs_emsg_reply r;
  bs_digest got[2];
  assert_int_equal(bs_wire_read(fd, &h, sizeof h, 1000), 0);
  assert_int_equal(h.type, BS_EMSG_REPLY);
  assert_int_equal(bs_wire_read(fd, &r, sizeof r, 1000), 0);
  assert_int_equal(r.ntensors, 2);
  assert_int_equal(r.nmismatch, 0);
  assert_int_equal(bs_wire_read(fd, got, sizeof got, 1000), 0);
  assert_true(bs_digest_eq(&got[0], &d[0]) && bs_digest_eq(&got[1], &d[1]));
}

/* The engine reads ahead of the frame it serves: frames that came in one
 * read are each served, a tensor larger than what it reads ahead arrives
 * whole, and in a process serving two ranks what was read ahead of one
 * rank's frames is none of the other's (each update verifies, and each
 * reply goes to its own rank). */
static void test_engine_reads_ahead(void **state) {
  (void)state;
  enum { FD = 200 };
  unsigned char *big = malloc(BIG);
  assert_non_null(big);
  for (int i = 0; i < BIG; i++)
    big[i] = (unsigned char)(i * 7 + 1);
  int sv[2][2];
  bs_digest d[2][2];
  for (int k = 0; k < 2; k++) {
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[k]), 0);
    assert_int_equal(dup2(sv[k][1], FD + k), FD + k);
    close(sv[k][1]);
    big[k] ^= 0xff; /* two ranks, two different tensors */
    write_update(sv[k][0], big, d[k]);
  }
  char *argv[] = {"engine",  "--fd", "200",       "--rank", "4",
                  "--count", "2",    "--idle-ms", "1000",   NULL};
  assert_int_equal(bs_engine_main(9, argv), 0);
  for (int k = 0; k < 2; k++) {
    expect_reply(sv[k][0], d[k]);
    close(sv[k][0]);
    close(FD + k);
  }
  free(big);
}

/* An engine that breaks the protocol: "payload" answers the reconnect's
 * HELLO with bytes after it, "magic" with a wrong magic, "reply" answers
 * an update's END with a REPLY of the wrong length. Then it waits for the
 * trainer to go. */
static int bad_engine(const char *how) {
  bs_eframe h;
  char junk[64] = {0};
  bool reply = strcmp(how, "reply") == 0;
  for (;;) { /* up to the frame it answers wrongly */
    if (bs_wire_read(BS_ENGINE_FD, &h, sizeof h, 5000) || h.len > sizeof junk ||
        (h.len && bs_wire_read(BS_ENGINE_FD, junk, h.len, 5000)))
      return 1;
    if (h.type == (reply ? BS_EMSG_END : BS_EMSG_HELLO))
      break;
  }
  uint64_t len = strcmp(how, "magic") == 0 ? 0 : 4;
  h = (bs_eframe){.magic = len ? BS_ENGINE_MAGIC : 7,
                  .type = reply ? BS_EMSG_REPLY : BS_EMSG_HELLO,
                  .len = len};
  if (bs_wire_write(BS_ENGINE_FD, &h, sizeof h, 1000) ||
      (len && bs_wire_write(BS_ENGINE_FD, junk, len, 1000)))
    return 1;
  return bs_wire_read(BS_ENGINE_FD, &h, sizeof h, 5000) ? 0 : 1;
}

/* An engine that breaks the protocol (this program's own code: a bug, not
 * a death): the stream is unusable, the engine is killed at once and the
 * rank told so. */
static void test_protocol_errors(void **state) {
  (void)state;
  static const char *const hows[] = {"payload", "magic", "reply"};
  for (size_t i = 0; i < 3; i++) {
    const char *prefix[] = {"bad-engine", hows[i], NULL};
    bs_engine *e = NULL;
    bs_err_clear();
    assert_int_equal(bs_engine_start(SELF, prefix, 4, &e), BS_OK);
    if (i < 2) {
      expect_err(bs_engine_reconnect(e), BS_ERR_INTERNAL,
                 "engine of rank 4 broke the protocol at the reconnect");
    } else {
      assert_int_equal(bs_engine_update_begin(e, 2), BS_OK);
      expect_err(bs_engine_update_end(e, NULL), BS_ERR_INTERNAL,
                 "engine of rank 4 broke the protocol before answering");
    }
    assert_false(bs_engine_alive(e));
    bs_engine_stop(e);
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "engine") == 0)
    return bs_engine_main(argc - 1, argv + 1);
  if (argc > 2 && strcmp(argv[1], "bad-engine") == 0)
    return bad_engine(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_clean_updates, setup, teardown),
      cmocka_unit_test_setup_teardown(test_send_many, setup, teardown),
      cmocka_unit_test_setup_teardown(test_shared_process, setup, teardown),
      cmocka_unit_test_setup_teardown(test_shared_process_forked, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_restart_in_group, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kept_engines, setup, teardown),
      cmocka_unit_test_setup_teardown(test_zygote_engines, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wrong_expected_digest, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_kill_mid_stream_then_restart, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_death_before_reply_and_begin, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_send_fault_kills_engine, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_verify_fault_flips_a_bit, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unresponsive_engine_times_out, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_engines_of_concurrent_ranks, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_engine_main_protocol, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_engine_reads_ahead, setup, teardown),
      cmocka_unit_test_setup_teardown(test_protocol_errors, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
