#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "bs_fault_control.h"
#include "bs_kernels.h"
#include "bs_test_faults.h"
#include "memsaver/bs_memsaver_testing.h"
#include "model/bs_model_parse.h"
#include "model/bs_params.h"

typedef struct world {
  bs_dev *dev;
  bs_memsaver *ms;
  bs_model_spec m;
} world;

static void world_open(world *w, const char *preset) {
  bs_err_clear();
  assert_int_equal(bs_dev_host_create(&w->dev), BS_OK);
  assert_int_equal(bs_memsaver_create(w->dev, 7, &w->ms), BS_OK);
  assert_int_equal(bs_model_preset(preset, 1.0, &w->m), BS_OK);
}

static void world_close(world *w) {
  bs_model_free(&w->m);
  bs_memsaver_destroy(w->ms);
  bs_dev_destroy(w->dev);
}

/* The device bytes of [ptr, ptr+n), read through the seam. */
static void *read_dev(bs_dev *dev, const void *ptr, size_t n) {
  void *h = malloc(n);
  assert_non_null(h);
  assert_int_equal(bs_dev_copy_observe(dev, h, ptr, n, BS_D2H), BS_OK);
  assert_int_equal(bs_dev_sync(dev), BS_OK);
  return h;
}

static bool same_bytes(bs_dev *dev, const void *a, const void *b, size_t n) {
  void *x = read_dev(dev, a, n), *y = read_dev(dev, b, n);
  bool eq = memcmp(x, y, n) == 0;
  free(x);
  free(y);
  return eq;
}

static void check_placement(const world *w, const bs_params *p,
                            bool cpu_backup) {
  for (size_t i = 0; i < p->n; i++) {
    const bs_tensor *t = &p->t[i];
    assert_ptr_equal(t->spec, &w->m.t[i]);
    assert_int_equal(t->bytes, bs_tensor_bytes(t->spec));
    assert_true(bs_memsaver_contains(w->ms, t->ptr));
    assert_true(bs_memsaver_contains(w->ms, (char *)t->ptr + t->bytes - 1));
    if (bs_tensor_in_ddp(t->spec)) {
      assert_true(t->buffer == BS_BUF_DENSE || t->buffer == BS_BUF_EXPERT);
      assert_ptr_equal(t->ptr, p->param_buf[t->buffer] + t->offset);
      assert_string_equal(bs_memsaver_tag_of(w->ms, t->ptr), BS_TAG_PARAM);
      assert_int_equal(bs_memsaver_has_backup(w->ms, t->ptr), cpu_backup);
    } else {
      assert_int_equal(t->buffer, -1);
      assert_string_equal(bs_memsaver_tag_of(w->ms, t->ptr), BS_TAG_DEFAULT);
      assert_true(bs_memsaver_has_backup(w->ms, t->ptr));
    }
  }
  for (int k = 0; k < BS_BUF_COUNT; k++) {
    size_t numel = p->layout.buf[k].numel;
    assert_int_equal(numel == 0, p->param_buf[k] == NULL);
    assert_int_equal(numel == 0, p->grad_buf[k] == NULL);
    if (!numel)
      continue;
    assert_string_equal(bs_memsaver_tag_of(w->ms, p->grad_buf[k]), BS_TAG_GRAD);
    assert_int_equal(bs_memsaver_has_backup(w->ms, p->grad_buf[k]), cpu_backup);
    assert_true(bs_memsaver_contains(w->ms, p->grad_buf[k] + numel - 1));
  }
}

static void test_placement(void **state) {
  (void)state;
  for (const char *const *name = bs_model_preset_list(); *name; name++)
    for (int backup = 0; backup < 2; backup++) {
      world w;
      bs_params *p = NULL;
      world_open(&w, *name);
      assert_int_equal(bs_params_create(w.dev, w.ms, &w.m, 3, 1000, backup, &p),
                       BS_OK);
      assert_int_equal(p->n, w.m.n);
      assert_int_equal(p->layout.dp, 3);
      check_placement(&w, p, backup);
      bs_params_destroy(p);
      assert_int_equal(bs_memsaver_resident_bytes(w.ms), 0);
      world_close(&w);
    }
}

/* Under offload the buffers lose their bytes across pause/resume; the
 * default region keeps them. */
static void test_offload_regions(void **state) {
  (void)state;
  world w;
  bs_params *p;
  world_open(&w, "frozen");
  assert_int_equal(bs_params_create(w.dev, w.ms, &w.m, 2, 0, false, &p), BS_OK);
  assert_int_equal(bs_params_fill(p, 11), BS_OK);
  void **before = calloc(p->n, sizeof *before);
  for (size_t i = 0; i < p->n; i++)
    before[i] = read_dev(w.dev, p->t[i].ptr, p->t[i].bytes);
  assert_int_equal(bs_memsaver_pause(w.ms, NULL), BS_OK);
  assert_int_equal(bs_memsaver_resume(w.ms, NULL), BS_OK);
  size_t changed_ddp = 0, changed_other = 0;
  for (size_t i = 0; i < p->n; i++) {
    void *after = read_dev(w.dev, p->t[i].ptr, p->t[i].bytes);
    bool changed = memcmp(before[i], after, p->t[i].bytes) != 0;
    *(p->t[i].buffer >= 0 ? &changed_ddp : &changed_other) += changed;
    free(after);
    free(before[i]);
  }
  free(before);
  assert_int_equal(changed_other, 0);
  assert_true(changed_ddp > 0);
  bs_params_destroy(p);
  world_close(&w);
}

static void test_fill_deterministic(void **state) {
  (void)state;
  world w;
  bs_params *a, *b, *c;
  world_open(&w, "moe");
  assert_int_equal(bs_params_create(w.dev, w.ms, &w.m, 4, 777, true, &a),
                   BS_OK);
  assert_int_equal(bs_params_create(w.dev, w.ms, &w.m, 4, 777, true, &b),
                   BS_OK);
  assert_int_equal(bs_params_create(w.dev, w.ms, &w.m, 4, 777, true, &c),
                   BS_OK);
  assert_int_equal(bs_params_fill(a, 5), BS_OK);
  assert_int_equal(bs_params_fill(b, 5), BS_OK);
  assert_int_equal(bs_params_fill(c, 6), BS_OK);
  for (size_t i = 0; i < a->n; i++) {
    assert_true(same_bytes(w.dev, a->t[i].ptr, b->t[i].ptr, a->t[i].bytes));
    assert_false(same_bytes(w.dev, a->t[i].ptr, c->t[i].ptr, a->t[i].bytes));
  }
  for (int k = 0; k < BS_BUF_COUNT; k++) /* padding included */
    assert_true(same_bytes(w.dev, a->param_buf[k], b->param_buf[k],
                           a->layout.buf[k].numel * 2));
  bs_params_destroy(a);
  bs_params_destroy(b);
  bs_params_destroy(c);
  world_close(&w);
}

#ifdef FIU_ENABLE
/* An armed copy/fail fails the core's fill; the observer's fill (the
 * driver's reference weights) neither fires it nor counts towards its nth,
 * and writes the same bytes. */
static void test_fill_observe_bypasses_copy_fault(void **state) {
  (void)state;
  world w;
  bs_params *a, *b;
  world_open(&w, "tiny");
  assert_int_equal(bs_params_create(w.dev, w.ms, &w.m, 1, 777, true, &a),
                   BS_OK);
  assert_int_equal(bs_params_create(w.dev, w.ms, &w.m, 1, 777, true, &b),
                   BS_OK);
  bs_err_set_rank(0); /* nth counts a rank's reaches */
  assert_int_equal(bs_test_arm("name=copy/fail,nth=1", 0), BS_OK);
  assert_int_equal(bs_params_fill_observe(a, 5), BS_OK);
  assert_int_equal(bs_fault_log_count(), 0);
  assert_int_equal(bs_params_fill(b, 5), BS_ERR_COPY);
  assert_int_equal(bs_fault_log_count(), 1);
  bs_fault_disarm_all();
  bs_fault_log_reset();
  bs_err_set_rank(-1);
  bs_err_clear();
  assert_int_equal(bs_params_fill(b, 5), BS_OK);
  for (size_t i = 0; i < a->n; i++)
    assert_true(same_bytes(w.dev, a->t[i].ptr, b->t[i].ptr, a->t[i].bytes));
  bs_params_destroy(a);
  bs_params_destroy(b);
  world_close(&w);
}
#endif

static void check_values(const bs_tensor *t, const void *h) {
  for (size_t e = 0; e < t->spec->numel; e++) {
    switch (t->spec->dtype) {
    case BS_BF16: {
      float v = bs_k_cast_bf16_to_f32(((const uint16_t *)h)[e]);
      assert_true(v >= -0.5f && v <= 0.5f);
      break;
    }
    case BS_F32: {
      float v = ((const float *)h)[e];
      assert_true(v >= -0.5f && v < 0.5f);
      break;
    }
    case BS_I32:
      assert_in_range(((const int32_t *)h)[e], 0, 7);
      break;
    default:
      fail_msg("unexpected dtype in preset");
    }
  }
}

static void test_fill_values(void **state) {
  (void)state;
  world w;
  bs_params *p;
  world_open(&w, "frozen");
  assert_int_equal(bs_params_create(w.dev, w.ms, &w.m, 8, 0, true, &p), BS_OK);
  assert_int_equal(bs_params_fill(p, 3), BS_OK);
  for (size_t i = 0; i < p->n; i++) {
    void *h = read_dev(w.dev, p->t[i].ptr, p->t[i].bytes);
    check_values(&p->t[i], h);
    free(h);
  }
  const bs_tensor *tid =
      bs_params_find(p, "decoder.layers.0.mlp.router.tid2eid");
  assert_non_null(tid);
  int32_t *ids = read_dev(w.dev, tid->ptr, tid->bytes);
  bool distinct = false;
  for (size_t e = 1; e < tid->spec->numel; e++)
    distinct |= ids[e] != ids[0];
  assert_true(distinct);
  free(ids);
  for (int k = 0; k < BS_BUF_COUNT; k++) {
    size_t numel = p->layout.buf[k].numel, used = 0;
    float *g = read_dev(w.dev, p->grad_buf[k], numel * sizeof(float));
    uint16_t *v = read_dev(w.dev, p->param_buf[k], numel * sizeof(uint16_t));
    for (size_t e = 0; e < numel; e++)
      assert_true(g[e] == 0.0f);
    for (size_t i = 0; i < p->n; i++)
      if (p->t[i].buffer == k)
        used = p->t[i].offset + p->t[i].spec->numel;
    assert_true(used < numel); /* 8 divides neither buffer */
    for (size_t e = used; e < numel; e++)
      assert_int_equal(v[e], 0);
    free(g);
    free(v);
  }
  bs_params_destroy(p);
  world_close(&w);
}

static void test_find_and_synced(void **state) {
  (void)state;
  world w;
  bs_params *p;
  world_open(&w, "tiny");
  assert_int_equal(bs_params_create(w.dev, w.ms, &w.m, 1, 0, true, &p), BS_OK);
  const bs_tensor *t = bs_params_find(p, "output_layer.weight");
  assert_non_null(t);
  assert_string_equal(t->spec->name, "output_layer.weight");
  assert_null(bs_params_find(p, "no.such.tensor"));
  assert_null(bs_params_find(p, NULL));

  const bs_tensor *list[64];
  size_t n = bs_params_synced(p, list, 64), bytes = 0, want = 0, j = 0;
  assert_int_equal(bs_params_synced(p, NULL, 0), n);
  assert_int_equal(bs_params_synced(p, list, 2), n); /* truncated write */
  for (size_t i = 0; i < p->n; i++) {
    if (!bs_tensor_is_synced(p->t[i].spec))
      continue;
    assert_ptr_equal(list[j++], &p->t[i]); /* spec order */
    want += p->t[i].bytes;
  }
  assert_int_equal(j, n);
  for (size_t i = 0; i < n; i++)
    bytes += list[i]->bytes;
  assert_int_equal(bs_params_synced_bytes(p), want);
  assert_int_equal(bytes, want);
  assert_int_equal(want, 2873 * 2 + 3 * 4 + 5 * 4);
  bs_params_destroy(p);
  world_close(&w);
}

static void test_bad_args(void **state) {
  (void)state;
  world w;
  bs_params *p = NULL;
  world_open(&w, "tiny");
  bs_err_clear();
  assert_int_equal(bs_params_create(w.dev, w.ms, &w.m, 0, 0, true, &p),
                   BS_ERR_INVALID);
  assert_null(p);
  assert_int_equal(bs_memsaver_resident_bytes(w.ms), 0);
  bs_err_clear();
  assert_int_equal(bs_params_create(NULL, w.ms, &w.m, 1, 0, true, &p),
                   BS_ERR_INVALID);
  bs_err_clear();
  assert_int_equal(bs_params_fill(NULL, 1), BS_ERR_INVALID);
  bs_params_destroy(NULL);
  world_close(&w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_placement),
      cmocka_unit_test(test_offload_regions),
      cmocka_unit_test(test_fill_deterministic),
      cmocka_unit_test(test_fill_values),
#ifdef FIU_ENABLE
      cmocka_unit_test(test_fill_observe_bypasses_copy_fault),
#endif
      cmocka_unit_test(test_find_and_synced),
      cmocka_unit_test(test_bad_args),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
