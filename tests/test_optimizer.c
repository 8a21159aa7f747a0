/* The distributed optimizer on the host device: master init, Adam against a
 * reference, bit-identical cast after steps (plain, chained, HDO), the HDO
 * host-wins-on-overlap rule, shard-only writes for dp 1..4, bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bs_kernels.h"
#include "dev/bs_dev.h"
#include "memsaver/bs_memsaver.h"
#include "memsaver/bs_memsaver_testing.h"
#include "model/bs_ddp.h"
#include "model/bs_model.h"
#include "model/bs_model_parse.h"
#include "train/bs_optimizer.h"
#include "train/bs_train_testing.h"

/* Several buckets per buffer at bucket_numel 20; a frozen and an fp32 param
 * stay outside the buffers. */
static const char *const DENSE_MODEL = "model opt-dense\n"
                                       "layers.0.w bf16 37\n"
                                       "layers.0.rel_proj bf16 11 frozen\n"
                                       "layers.0.b bf16 5x10\n"
                                       "layers.0.norm fp32 7 fp32\n"
                                       "layers.1.w bf16 23\n";
static const char *const MOE_MODEL = "model opt-moe\n"
                                     "layers.0.w bf16 37\n"
                                     "layers.0.rel_proj bf16 11 frozen\n"
                                     "experts.0.w bf16 29 expert\n"
                                     "layers.0.b bf16 5x10\n"
                                     "experts.1.w bf16 3x5 expert\n"
                                     "layers.1.w bf16 23\n";
#define BUCKET 20
#define SEED 0x5eedull

static const bs_optimizer_cfg PLAIN = {.lr = 0.01f,
                                       .beta1 = 0.9f,
                                       .beta2 = 0.999f,
                                       .eps = 1e-8f,
                                       .weight_decay = 0.01f};

static bs_optimizer_cfg hdo_cfg(double fraction) {
  bs_optimizer_cfg c = PLAIN;
  c.precision_aware = c.cpu_offload = true;
  c.offload_fraction = fraction;
  return c;
}

typedef struct fx {
  bs_dev *dev;
  bs_memsaver *ms;
  bs_model_spec spec;
  bs_ddp_layout l;
  uint16_t *param[BS_BUF_COUNT];
  float *grad[BS_BUF_COUNT];
  bs_optimizer *o;
} fx;

static void fx_init(fx *f, const char *model, int dp) {
  memset(f, 0, sizeof *f);
  assert_int_equal(bs_dev_host_create(&f->dev), BS_OK);
  assert_int_equal(bs_memsaver_create(f->dev, SEED, &f->ms), BS_OK);
  assert_int_equal(bs_model_parse(model, "opt.model", 1.0, &f->spec), BS_OK);
  assert_int_equal(bs_ddp_layout_build(&f->spec, dp, BUCKET, &f->l), BS_OK);
  for (int k = 0; k < BS_BUF_COUNT; k++) {
    size_t n = f->l.buf[k].numel;
    if (!n)
      continue;
    void *p, *g;
    assert_int_equal(bs_memsaver_alloc(f->ms, BS_TAG_PARAM, false, n * 2, &p),
                     BS_OK);
    assert_int_equal(bs_memsaver_alloc(f->ms, BS_TAG_GRAD, false, n * 4, &g),
                     BS_OK);
    f->param[k] = p;
    f->grad[k] = g;
    for (size_t i = 0; i < n; i++)
      f->param[k][i] = bs_k_cast_f32_to_bf16(bs_k_grad_hash_unit(SEED, k, i));
  }
}

static void fx_opt(fx *f, int rank, const bs_optimizer_cfg *cfg) {
  assert_int_equal(
      bs_optimizer_create(f->dev, f->ms, &f->l, rank, cfg, f->param, &f->o),
      BS_OK);
}

/* A known gradient, different for every step, buffer and element. */
static float grad_at(int step, int k, size_t i) {
  return 0.5f *
         bs_k_grad_hash_unit(SEED + 1, (uint64_t)step * 2 + (uint64_t)k, i);
}

static void fx_step(fx *f, int step) {
  for (int k = 0; k < BS_BUF_COUNT; k++)
    for (size_t i = 0; i < f->l.buf[k].numel; i++)
      f->grad[k][i] = grad_at(step, k, i);
  assert_int_equal(bs_optimizer_step(f->o, f->grad, step), BS_OK);
}

static void fx_free(fx *f) {
  bs_optimizer_destroy(f->o);
  for (int k = 0; k < BS_BUF_COUNT; k++) {
    if (f->param[k])
      bs_memsaver_free(f->ms, f->param[k]);
    if (f->grad[k])
      bs_memsaver_free(f->ms, f->grad[k]);
  }
  bs_memsaver_destroy(f->ms);
  bs_dev_destroy(f->dev);
  bs_ddp_layout_free(&f->l);
  bs_model_free(&f->spec);
}

/* Buffer positions of the rank's shard of buffer k, in shard order. */
static size_t *shard_pos(const fx *f, int k, int rank, size_t *n) {
  size_t *pos = calloc(f->l.buf[k].numel + 1, sizeof *pos);
  assert_non_null(pos);
  *n = 0;
  for (size_t b = 0; b < f->l.buf[k].nbuckets; b++) {
    size_t first, count;
    bs_ddp_shard(&f->l, k, b, rank, &first, &count);
    for (size_t i = 0; i < count; i++)
      pos[(*n)++] = first + i;
  }
  return pos;
}

static bool *shard_mask(const fx *f, int k, int rank) {
  size_t n;
  size_t *pos = shard_pos(f, k, rank, &n);
  bool *mask = calloc(f->l.buf[k].numel + 1, sizeof *mask);
  assert_non_null(mask);
  for (size_t i = 0; i < n; i++)
    mask[pos[i]] = true;
  free(pos);
  return mask;
}

static uint16_t *snapshot(const fx *f, int k) {
  size_t bytes = f->l.buf[k].numel * 2;
  uint16_t *s = malloc(bytes + 2);
  assert_non_null(s);
  memcpy(s, f->param[k], bytes);
  return s;
}

static void poison_params(fx *f, uint64_t seed) {
  for (int k = 0; k < BS_BUF_COUNT; k++)
    bs_k_poison(f->param[k], f->l.buf[k].numel * 2, seed + (uint64_t)k);
}

/* Master value of shard element i (host device: directly readable). */
static float master_at(const bs_optimizer_view *v, size_t i) {
  return i < v->host_n ? v->host[i] : v->dev[i - v->dev_first];
}

static bs_optimizer_view view_of(const fx *f, int inner) {
  bs_optimizer_view v;
  assert_int_equal(bs_optimizer_view_get(f->o, inner, &v), BS_OK);
  return v;
}

static void check_init(const bs_optimizer_cfg *cfg) {
  fx f;
  fx_init(&f, MOE_MODEL, 3);
  fx_opt(&f, 2, cfg);
  assert_int_equal(bs_optimizer_num_inner(f.o), 2);
  for (int j = 0; j < 2; j++) {
    bs_optimizer_view v = view_of(&f, j);
    size_t n;
    size_t *pos = shard_pos(&f, v.buf, 2, &n);
    assert_int_equal(v.n, n);
    for (size_t i = 0; i < n; i++) {
      float want = bs_k_cast_bf16_to_f32(f.param[v.buf][pos[i]]);
      assert_true(master_at(&v, i) == want);
      if (i >= v.dev_first) /* the overlap starts equal too */
        assert_true(v.dev[i - v.dev_first] == want);
    }
    /* Optimizer state is in "default" with a cpu backup. */
    assert_string_equal(bs_memsaver_tag_of(f.ms, v.dev), BS_TAG_DEFAULT);
    assert_true(bs_memsaver_has_backup(f.ms, v.dev));
    free(pos);
  }
  fx_free(&f);
}

static void test_masters_from_params(void **state) {
  (void)state;
  check_init(&PLAIN);
  bs_optimizer_cfg h = hdo_cfg(0.6);
  check_init(&h);
}

/* AdamW (decoupled weight decay) in double, from its definition. */
static void ref_adam(double *p, double *m, double *v, double g,
                     const bs_optimizer_cfg *c, int step) {
  *m = c->beta1 * *m + (1 - c->beta1) * g;
  *v = c->beta2 * *v + (1 - c->beta2) * g * g;
  double mhat = *m / (1 - pow(c->beta1, step));
  double vhat = *v / (1 - pow(c->beta2, step));
  *p -= c->lr * (mhat / (sqrt(vhat) + c->eps) + c->weight_decay * *p);
}

static void check_reference(const bs_optimizer_cfg *cfg) {
  enum { STEPS = 3 };
  fx f;
  fx_init(&f, MOE_MODEL, 2);
  fx_opt(&f, 1, cfg);
  size_t n[2];
  size_t *pos[2];
  double *ref[2];
  for (int j = 0; j < 2; j++) {
    bs_optimizer_view v = view_of(&f, j);
    pos[j] = shard_pos(&f, v.buf, 1, &n[j]);
    ref[j] = calloc(3 * n[j], sizeof(double)); /* p, m, v */
    for (size_t i = 0; i < n[j]; i++)
      ref[j][i] = bs_k_cast_bf16_to_f32(f.param[v.buf][pos[j][i]]);
  }
  for (int s = 1; s <= STEPS; s++) {
    fx_step(&f, s);
    for (int j = 0; j < 2; j++) {
      bs_optimizer_view v = view_of(&f, j);
      for (size_t i = 0; i < n[j]; i++)
        ref_adam(&ref[j][i], &ref[j][n[j] + i], &ref[j][2 * n[j] + i],
                 grad_at(s, v.buf, pos[j][i]), cfg, s);
    }
  }
  for (int j = 0; j < 2; j++) {
    bs_optimizer_view v = view_of(&f, j);
    for (size_t i = 0; i < n[j]; i++) {
      float got = master_at(&v, i);
      assert_true(fabs(got - ref[j][i]) <= 1e-5 * (1 + fabs(ref[j][i])));
      /* The step-end cast wrote exactly bf16(master). */
      assert_int_equal(f.param[v.buf][pos[j][i]], bs_k_cast_f32_to_bf16(got));
    }
    free(pos[j]);
    free(ref[j]);
  }
  fx_free(&f);
}

static void test_step_matches_reference_adam(void **state) {
  (void)state;
  check_reference(&PLAIN);
  bs_optimizer_cfg h = hdo_cfg(0.5);
  check_reference(&h);
}

/* After steps: poison the param buffers, rebuild, compare with the bytes
 * the last step-end cast wrote; also after a pause/resume of "default". */
static void check_rebuild(const char *model, const bs_optimizer_cfg *cfg,
                          int dp, int rank) {
  fx f;
  fx_init(&f, model, dp);
  fx_opt(&f, rank, cfg);
  for (int s = 1; s <= 4; s++)
    fx_step(&f, s);
  uint16_t *snap[BS_BUF_COUNT] = {0};
  for (int k = 0; k < BS_BUF_COUNT; k++)
    if (f.param[k])
      snap[k] = snapshot(&f, k);
  for (int round = 0; round < 2; round++) {
    if (round == 1) {
      assert_int_equal(bs_memsaver_pause(f.ms, BS_TAG_DEFAULT), BS_OK);
      assert_int_equal(bs_memsaver_resume(f.ms, BS_TAG_DEFAULT), BS_OK);
    }
    poison_params(&f, 99 + (uint64_t)round);
    assert_int_equal(bs_optimizer_cast_to_params(f.o), BS_OK);
    for (int k = 0; k < BS_BUF_COUNT; k++) {
      if (!f.param[k])
        continue;
      size_t n;
      size_t *pos = shard_pos(&f, k, rank, &n);
      assert_true(n > 0);
      for (size_t i = 0; i < n; i++)
        assert_int_equal(f.param[k][pos[i]], snap[k][pos[i]]);
      free(pos);
    }
  }
  for (int k = 0; k < BS_BUF_COUNT; k++)
    free(snap[k]);
  fx_free(&f);
}

static void test_cast_bit_identical(void **state) {
  (void)state;
  bs_optimizer_cfg h = hdo_cfg(0.5), all_host = hdo_cfg(1.0),
                   no_host = hdo_cfg(0);
  check_rebuild(DENSE_MODEL, &PLAIN, 2, 0);
  check_rebuild(MOE_MODEL, &PLAIN, 3, 1);
  check_rebuild(MOE_MODEL, &h, 3, 2);
  check_rebuild(MOE_MODEL, &all_host, 2, 1);
  check_rebuild(MOE_MODEL, &no_host, 2, 0);
}

static void test_hdo_host_wins_on_overlap(void **state) {
  (void)state;
  fx f;
  bs_optimizer_cfg cfg = hdo_cfg(0.5);
  cfg.lr = 0.05f; /* moves every master by more than a bf16 step */
  fx_init(&f, MOE_MODEL, 2);
  fx_opt(&f, 0, &cfg);
  for (int s = 1; s <= 3; s++)
    fx_step(&f, s);
  assert_true(bs_optimizer_host_master_bytes(f.o) > 0);
  for (int j = 0; j < 2; j++) {
    bs_optimizer_view v = view_of(&f, j);
    int k = v.buf;
    size_t n, ov = v.host_n - v.dev_first;
    size_t *pos = shard_pos(&f, k, 0, &n);
    assert_true(v.dev_first < v.host_n &&
                v.host_n < v.n); /* overlap, and a
                                    live device part */
    uint16_t *snap = snapshot(&f, k);
    /* The device copy of the overlap is stale, so a replay letting the
     * device win would write other bytes. */
    assert_memory_not_equal(v.dev, v.host + v.dev_first, ov * sizeof(float));
    size_t differ = 0;
    for (size_t i = v.dev_first; i < v.host_n; i++)
      differ += bs_k_cast_f32_to_bf16(v.dev[i - v.dev_first]) != snap[pos[i]];
    assert_true(differ > 0);
    /* Corrupting the stale copy changes nothing. */
    bs_k_poison(v.dev, ov * sizeof(float), 7);
    poison_params(&f, 11);
    assert_int_equal(bs_optimizer_cast_to_params(f.o), BS_OK);
    for (size_t i = 0; i < n; i++)
      assert_int_equal(f.param[k][pos[i]], snap[pos[i]]);
    /* Both live maps are read: a flipped exponent bit in each shows. */
    float *live;
    size_t nlive;
    assert_int_equal(bs_optimizer_master_ptr(f.o, j, &live, &nlive), BS_OK);
    assert_int_equal(nlive, v.n - v.host_n);
    assert_ptr_equal(live, v.dev + ov);
    bs_k_bitflip(live, sizeof(float), 30);
    bs_k_bitflip(v.host, sizeof(float), 30);
    assert_int_equal(bs_optimizer_cast_to_params(f.o), BS_OK);
    assert_int_not_equal(f.param[k][pos[v.host_n]], snap[pos[v.host_n]]);
    assert_int_not_equal(f.param[k][pos[0]], snap[pos[0]]);
    free(snap);
    free(pos);
  }
  fx_free(&f);
}

/* For each dp and rank: the step and the rebuild write exactly the rank's
 * shard ranges; every other byte keeps its value. */
static void check_shard_only(const bs_optimizer_cfg *cfg, int dp, int rank) {
  fx f;
  fx_init(&f, MOE_MODEL, dp);
  fx_opt(&f, rank, cfg);
  uint16_t *before[BS_BUF_COUNT];
  for (int k = 0; k < BS_BUF_COUNT; k++)
    before[k] = snapshot(&f, k);
  fx_step(&f, 1);
  for (int k = 0; k < BS_BUF_COUNT; k++) {
    bool *mask = shard_mask(&f, k, rank);
    size_t changed = 0;
    for (size_t i = 0; i < f.l.buf[k].numel; i++) {
      if (!mask[i])
        assert_int_equal(f.param[k][i], before[k][i]);
      changed += mask[i] && f.param[k][i] != before[k][i];
    }
    assert_true(changed > 0);
    free(mask);
    free(before[k]);
    before[k] = snapshot(&f, k);
  }
  poison_params(&f, 5);
  uint16_t *poisoned[BS_BUF_COUNT];
  for (int k = 0; k < BS_BUF_COUNT; k++)
    poisoned[k] = snapshot(&f, k);
  assert_int_equal(bs_optimizer_cast_to_params(f.o), BS_OK);
  for (int k = 0; k < BS_BUF_COUNT; k++) {
    bool *mask = shard_mask(&f, k, rank);
    for (size_t i = 0; i < f.l.buf[k].numel; i++)
      assert_int_equal(f.param[k][i], mask[i] ? before[k][i] : poisoned[k][i]);
    free(mask);
    free(before[k]);
    free(poisoned[k]);
  }
  fx_free(&f);
}

static void test_only_shard_written(void **state) {
  (void)state;
  bs_optimizer_cfg h = hdo_cfg(0.5);
  for (int dp = 1; dp <= 4; dp++)
    for (int r = 0; r < dp; r++) {
      check_shard_only(&PLAIN, dp, r);
      check_shard_only(&h, dp, r);
    }
}

static void test_chained_casts_every_buffer(void **state) {
  (void)state;
  fx f;
  fx_init(&f, MOE_MODEL, 2);
  fx_opt(&f, 1, &PLAIN);
  assert_int_equal(bs_optimizer_num_inner(f.o), 2);
  assert_int_equal(view_of(&f, 0).buf, BS_BUF_DENSE);
  assert_int_equal(view_of(&f, 1).buf, BS_BUF_EXPERT);
  fx_step(&f, 1);
  uint16_t *snap[BS_BUF_COUNT];
  for (int k = 0; k < BS_BUF_COUNT; k++)
    snap[k] = snapshot(&f, k);
  poison_params(&f, 3);
  assert_int_equal(bs_optimizer_cast_to_params(f.o), BS_OK);
  for (int k = 0; k < BS_BUF_COUNT; k++) {
    size_t n;
    size_t *pos = shard_pos(&f, k, 1, &n);
    for (size_t i = 0; i < n; i++)
      assert_int_equal(f.param[k][pos[i]], snap[k][pos[i]]);
    free(pos);
    free(snap[k]);
  }
  fx_free(&f);
  /* A dense-only model has one inner optimizer. */
  fx_init(&f, DENSE_MODEL, 2);
  fx_opt(&f, 0, &PLAIN);
  assert_int_equal(bs_optimizer_num_inner(f.o), 1);
  assert_int_equal(bs_optimizer_view_get(f.o, 1, &(bs_optimizer_view){0}),
                   BS_ERR_INVALID);
  fx_free(&f);
}

static void expect_create(fx *f, int rank, const bs_optimizer_cfg *cfg,
                          bs_status want) {
  bs_optimizer *o = (void *)1;
  bs_err_clear();
  assert_int_equal(
      bs_optimizer_create(f->dev, f->ms, &f->l, rank, cfg, f->param, &o), want);
  assert_null(o);
  assert_int_equal(bs_err()->code, want);
  bs_err_clear();
}

/* Model chunks: the dense buffer's 3 buckets split over the chunks, each
 * its own inner optimizer, the expert buffer one more; the cast goes
 * through every one of them, plain and HDO alike. */
static void expect_chain(size_t chunks, const size_t (*want)[3], size_t n) {
  fx f;
  bs_optimizer_cfg cfg = PLAIN;
  cfg.chunks = chunks;
  fx_init(&f, MOE_MODEL, 2);
  assert_int_equal(f.l.buf[BS_BUF_DENSE].nbuckets, 3);
  fx_opt(&f, 1, &cfg);
  assert_int_equal(bs_optimizer_num_inner(f.o), n);
  for (size_t i = 0; i < n; i++) {
    bs_optimizer_view v = view_of(&f, (int)i);
    assert_int_equal(v.buf, want[i][0]);
    assert_int_equal(v.first_bucket, want[i][1]);
    assert_int_equal(v.nbuckets, want[i][2]);
    assert_false(v.hdo);
  }
  fx_free(&f);
  check_rebuild(MOE_MODEL, &cfg, 2, 1);
  bs_optimizer_cfg h = hdo_cfg(0.5);
  h.chunks = chunks;
  check_rebuild(MOE_MODEL, &h, 3, 2);
}

static void test_chained_model_chunks(void **state) {
  (void)state;
  static const size_t one[][3] = {{BS_BUF_DENSE, 0, 3}, {BS_BUF_EXPERT, 0, 2}};
  static const size_t two[][3] = {
      {BS_BUF_DENSE, 0, 1}, {BS_BUF_DENSE, 1, 2}, {BS_BUF_EXPERT, 0, 2}};
  static const size_t three[][3] = {{BS_BUF_DENSE, 0, 1},
                                    {BS_BUF_DENSE, 1, 1},
                                    {BS_BUF_DENSE, 2, 1},
                                    {BS_BUF_EXPERT, 0, 2}};
  expect_chain(1, one, 2); /* one chunk: no chain on the dense buffer */
  expect_chain(2, two, 3);
  expect_chain(3, three, 4);
  /* More chunks than buckets: refused, naming both. */
  fx f;
  bs_optimizer_cfg cfg = PLAIN;
  cfg.chunks = 4;
  fx_init(&f, MOE_MODEL, 2);
  expect_create(&f, 0, &cfg, BS_ERR_CONFIG);
  fx_free(&f);
}

static void test_pinned_accounting(void **state) {
  (void)state;
  fx f;
  fx_init(&f, MOE_MODEL, 2);
  fx_opt(&f, 0, &PLAIN);
  assert_int_equal(bs_optimizer_host_master_bytes(f.o), 0);
  assert_int_equal(bs_dev_pinned(f.dev, BS_PIN_OTHER), 0);
  bs_optimizer_destroy(f.o);
  bs_optimizer_cfg h = hdo_cfg(0.5);
  fx_opt(&f, 0, &h);
  size_t bytes = bs_optimizer_host_master_bytes(f.o);
  assert_true(bytes > 0);
  assert_int_equal(bs_dev_pinned(f.dev, BS_PIN_OTHER), bytes);
  assert_int_equal(bs_dev_pinned(f.dev, BS_PIN_BACKUPER), 0);
  bs_optimizer_destroy(f.o);
  f.o = NULL;
  assert_int_equal(bs_dev_pinned(f.dev, BS_PIN_OTHER), 0);
  fx_free(&f);
}

static void test_precision_aware_without_offload(void **state) {
  (void)state;
  fx f;
  bs_optimizer_cfg cfg = PLAIN;
  cfg.precision_aware = true;
  fx_init(&f, DENSE_MODEL, 2);
  fx_opt(&f, 0, &cfg);
  fx_step(&f, 1);
  bs_err_clear();
  assert_int_equal(bs_optimizer_cast_to_params(f.o), BS_ERR_UNSUPPORTED);
  assert_non_null(strstr(bs_err()->message, "remainder"));
  assert_non_null(strstr(bs_err()->message, "inner optimizer 0 (dense"));
  assert_int_equal(bs_optimizer_check_rebuildable(f.o), BS_ERR_UNSUPPORTED);
  bs_err_clear();
  fx_free(&f);
}

static void test_bad_input(void **state) {
  (void)state;
  fx f;
  fx_init(&f, MOE_MODEL, 2);
  bs_optimizer *o = NULL;
  assert_int_equal(
      bs_optimizer_create(NULL, f.ms, &f.l, 0, &PLAIN, f.param, &o),
      BS_ERR_INVALID);
  assert_int_equal(
      bs_optimizer_create(f.dev, f.ms, &f.l, 0, &PLAIN, f.param, NULL),
      BS_ERR_INVALID);
  expect_create(&f, 2, &PLAIN, BS_ERR_INVALID);
  expect_create(&f, -1, &PLAIN, BS_ERR_INVALID);
  bs_optimizer_cfg c = PLAIN;
  c.cpu_offload = true;
  c.offload_fraction = 0.5;
  expect_create(&f, 0, &c, BS_ERR_CONFIG);
  c = hdo_cfg(1.5);
  expect_create(&f, 0, &c, BS_ERR_INVALID);
  c = PLAIN;
  c.eps = 0;
  expect_create(&f, 0, &c, BS_ERR_INVALID);
  c = PLAIN;
  c.lr = NAN;
  expect_create(&f, 0, &c, BS_ERR_INVALID);
  uint16_t *expert = f.param[BS_BUF_EXPERT];
  f.param[BS_BUF_EXPERT] = NULL;
  expect_create(&f, 0, &PLAIN, BS_ERR_INVALID);
  f.param[BS_BUF_EXPERT] = expert;

  fx_opt(&f, 0, &PLAIN);
  assert_int_equal(bs_optimizer_step(f.o, f.grad, 0), BS_ERR_INVALID);
  assert_int_equal(bs_optimizer_step(f.o, NULL, 1), BS_ERR_INVALID);
  float *grads[BS_BUF_COUNT] = {f.grad[0], NULL};
  assert_int_equal(bs_optimizer_step(f.o, grads, 1), BS_ERR_INVALID);
  assert_int_equal(bs_optimizer_step(NULL, f.grad, 1), BS_ERR_INVALID);
  assert_int_equal(bs_optimizer_cast_to_params(NULL), BS_ERR_INVALID);
  float *m;
  size_t n;
  assert_int_equal(bs_optimizer_master_ptr(f.o, 2, &m, &n), BS_ERR_INVALID);
  assert_int_equal(bs_optimizer_master_ptr(f.o, -1, &m, &n), BS_ERR_INVALID);
  assert_int_equal(bs_optimizer_master_ptr(f.o, 0, NULL, &n), BS_ERR_INVALID);
  assert_int_equal(bs_optimizer_view_get(f.o, 0, NULL), BS_ERR_INVALID);
  assert_int_equal(bs_optimizer_num_inner(NULL), 0);
  assert_int_equal(bs_optimizer_host_master_bytes(NULL), 0);
  bs_optimizer_destroy(NULL);
  bs_err_clear();
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_masters_from_params),
      cmocka_unit_test(test_step_matches_reference_adam),
      cmocka_unit_test(test_cast_bit_identical),
      cmocka_unit_test(test_hdo_host_wins_on_overlap),
      cmocka_unit_test(test_only_shard_written),
      cmocka_unit_test(test_chained_casts_every_buffer),
      cmocka_unit_test(test_chained_model_chunks),
      cmocka_unit_test(test_pinned_accounting),
      cmocka_unit_test(test_precision_aware_without_offload),
      cmocka_unit_test(test_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
