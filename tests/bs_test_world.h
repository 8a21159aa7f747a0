/* Test support for the MainCast, actor, weight-sync and lifecycle tests
 * (header-only: CMake builds one binary per tests/test_*.c). A world of N
 * simulated ranks, each with its own host device and, optionally, its own
 * actor and engine process. Binaries that start engines re-execute
 * themselves: their main() hands argv "engine ..." to bs_engine_main. */
#ifndef BS_TEST_WORLD_H
#define BS_TEST_WORLD_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup/bs_backuper.h"
#include "backup/bs_restore_check.h"
#include "bs_actor.h"
#include "bs_actor_testing.h"
#include "bs_fault_control.h"
#include "bs_mutant.h"
#include "bs_test_faults.h"
#include "comm/bs_comm.h"
#include "memsaver/bs_memsaver.h"
#include "model/bs_model_parse.h"
#include "sync/bs_engine_zygote.h"

#define TW_MAX 8
#define TW_SELF "/proc/self/exe"
#define TW_DIG_MAX 64 /* synced tensors of the largest preset, with room */

typedef struct tw tw;
typedef bs_status (*tw_body)(bs_actor *a, bs_comm *c, tw *t);

struct tw {
  int n;
  bs_config cfg;
  bs_model_spec model;
  uint64_t seed;
  bool engine;  /* start an engine per rank */
  tw_body body; /* runs on every rank after a successful init */
  void *user;
  bs_world *w;
  /* filled per rank once the body returned */
  bs_status st[TW_MAX];
  bs_error err[TW_MAX];
  int param_paused[TW_MAX]; /* 1 paused, 0 not, -1 no actor */
  size_t pinned[TW_MAX];    /* backuper pinned bytes */
  long out[TW_MAX];         /* whatever the body reports */
};

/* Offloaded, colocated defaults; offload_train off unless a test turns it
 * on, so a fresh actor is awake. */
static inline void tw_init(tw *t, int n, const char *preset) {
  /* A test that failed midway never reached tw_free. */
  bs_fault_disarm_all();
  bs_mutant_reset();
  bs_err_clear();
  memset(t, 0, sizeof *t);
  t->n = n;
  t->seed = 7;
  bs_config_defaults(&t->cfg);
  t->cfg.offload_train = false;
  assert_int_equal(bs_model_preset(preset, 1.0, &t->model), BS_OK);
}

static inline bs_status tw_rank(bs_comm *c, void *arg) {
  tw *t = arg;
  bs_actor *a = NULL;
  int r = bs_comm_rank(c);
  bs_actor_opts o = {.cfg = &t->cfg,
                     .model = &t->model,
                     .seed = t->seed,
                     .engine_exe = t->engine ? TW_SELF : NULL};
  bs_status st = bs_actor_init(c, &o, &a);
  if (st == BS_OK && t->body)
    st = t->body(a, c, t);
  t->param_paused[r] =
      a ? bs_memsaver_all_in_state(bs_actor_ms(a), BS_TAG_PARAM, BS_PAUSED)
        : -1;
  t->pinned[r] = bs_dev_pinned(bs_comm_dev(c), BS_PIN_BACKUPER);
  t->st[r] = st;
  t->err[r] = *bs_err();
  bs_actor_destroy(a);
  return st;
}

/* Runs an arbitrary rank function on n ranks with host devices. Their
 * engines are forked by this process's zygote, as a worker's are (an
 * execution each was most of these tests' process starts; test_engine
 * spawns them). */
static inline bs_status tw_run_fn(int n, bs_rank_fn fn, void *const *args,
                                  bs_world **out) {
  bs_dev *devs[TW_MAX] = {0};
  bs_world_opts wo = {.size = n, .timeout_ms = 5000, .fingerprint = true};
  assert_true(n >= 1 && n <= TW_MAX);
  bs_engine_zygote_enable(true);
  for (int r = 0; r < n; r++)
    assert_int_equal(bs_dev_host_create(&devs[r]), BS_OK);
  assert_int_equal(bs_world_create(&wo, out), BS_OK);
  bs_status st = bs_world_run(*out, devs, fn, args);
  for (int r = 0; r < n; r++)
    bs_dev_destroy(devs[r]);
  return st;
}

static inline bs_status tw_run(tw *t) {
  void *args[TW_MAX];
  for (int r = 0; r < t->n; r++)
    args[r] = t;
  return tw_run_fn(t->n, tw_rank, args, &t->w);
}

static inline void tw_free(tw *t) {
  bs_world_destroy(t->w);
  bs_model_free(&t->model);
  bs_fault_disarm_all();
  bs_mutant_reset();
  bs_err_clear();
}

/* Every rank ended with want, with the identical error record. */
static inline void tw_expect_all(const tw *t, bs_status want,
                                 const char *msg_part) {
  for (int r = 0; r < t->n; r++) {
    if (t->st[r] != want)
      fail_msg("rank %d: %s, want %s (%s)", r, bs_status_name(t->st[r]),
               bs_status_name(want), t->err[r].message);
    if (want == BS_OK)
      continue;
    assert_memory_equal(&t->err[r], &t->err[0], sizeof t->err[0]);
    if (msg_part && !strstr(t->err[r].message, msg_part))
      fail_msg("rank %d: '%s' lacks '%s'", r, t->err[r].message, msg_part);
  }
}

static inline void tw_arm(const char *spec) {
  assert_int_equal(bs_test_arm(spec, 0), BS_OK);
}

/* ---- helpers for rank bodies ---- */

static inline size_t tw_digests(bs_actor *a, bs_digest *d) {
  size_t npaused = 0;
  assert_true(bs_actor_synced_count(a) <= TW_DIG_MAX);
  assert_int_equal(bs_actor_live_digests(a, d, TW_DIG_MAX, &npaused), BS_OK);
  assert_int_equal(npaused, 0);
  return bs_actor_synced_count(a);
}

/* Tensors whose digests differ. */
static inline size_t tw_ndiff(const bs_digest *x, const bs_digest *y,
                              size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += !bs_digest_eq(&x[i], &y[i]);
  return k;
}

/* The param buffer's bytes are lost: a pause and a resume without backup
 * leave garbage, as under --offload-train. */
static inline void tw_poison_params(bs_actor *a) {
  assert_int_equal(bs_memsaver_pause(bs_actor_ms(a), BS_TAG_PARAM), BS_OK);
  assert_int_equal(bs_memsaver_resume(bs_actor_ms(a), BS_TAG_PARAM), BS_OK);
}

/* Garbage in every synced tensor outside the DDP buffers. */
static inline void tw_poison_extras(bs_actor *a) {
  bs_params *p = bs_actor_params(a);
  bs_dev *dev = bs_actor_dev(a);
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].buffer < 0 && bs_tensor_is_synced(p->t[i].spec))
      bs_dev_poison(dev, p->t[i].ptr, p->t[i].bytes, 99 + i);
}

#endif
