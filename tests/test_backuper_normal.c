#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backup/bs_backup_testing.h"
#include "backup/bs_backuper.h"
#include "bs_fault_control.h"
#include "bs_test_faults.h"
#include "memsaver/bs_memsaver_testing.h"
#include "model/bs_model_parse.h"

/* One rank under offload: buffers without cpu backup, as in the lifecycle
 * where the Normal backuper is the only copy of the param buffer. */
typedef struct world {
  bs_dev *dev;
  bs_memsaver *ms;
  bs_model_spec m;
  bs_params *p;
  bs_backuper *b;
} world;

static int world_open(void **state) {
  world *w = calloc(1, sizeof *w);
  bs_err_clear();
  assert_int_equal(bs_dev_host_create(&w->dev), BS_OK);
  assert_int_equal(bs_memsaver_create(w->dev, 3, &w->ms), BS_OK);
  /* frozen: bf16, int32 and fp32 synced tensors, both DDP buffers. */
  assert_int_equal(bs_model_preset("frozen", 1.0, &w->m), BS_OK);
  assert_int_equal(
      bs_params_create(w->dev, w->ms, &w->m, 3, 2000, false, &w->p), BS_OK);
  assert_int_equal(bs_params_fill(w->p, 42), BS_OK);
  assert_int_equal(bs_backuper_normal_create(w->p, &w->b), BS_OK);
  *state = w;
  return 0;
}

static int world_close(void **state) {
  world *w = *state;
  bs_backuper_destroy(w->b);
  assert_int_equal(bs_dev_pinned(w->dev, BS_PIN_BACKUPER), 0);
  bs_params_destroy(w->p);
  bs_model_free(&w->m);
  bs_memsaver_destroy(w->ms);
  bs_dev_destroy(w->dev);
  free(w);
  return 0;
}

/* Host snapshot of every synced tensor, read through the seam. */
static void **snapshot(const world *w) {
  void **s = calloc(w->p->n, sizeof *s);
  for (size_t i = 0; i < w->p->n; i++) {
    const bs_tensor *t = &w->p->t[i];
    if (!bs_tensor_is_synced(t->spec))
      continue;
    s[i] = malloc(t->bytes);
    assert_int_equal(
        bs_dev_copy_observe(w->dev, s[i], t->ptr, t->bytes, BS_D2H), BS_OK);
  }
  assert_int_equal(bs_dev_sync(w->dev), BS_OK);
  return s;
}

/* Number of synced tensors whose device bytes differ from the snapshot. */
static size_t count_changed(const world *w, void **snap) {
  void **now = snapshot(w);
  size_t changed = 0;
  for (size_t i = 0; i < w->p->n; i++) {
    if (snap[i])
      changed += memcmp(snap[i], now[i], w->p->t[i].bytes) != 0;
    free(now[i]);
  }
  free(now);
  return changed;
}

static void snapshot_free(const world *w, void **snap) {
  for (size_t i = 0; i < w->p->n; i++)
    free(snap[i]);
  free(snap);
}

/* Garbage in every synced tensor: the buffers lose theirs across a pause
 * without backup, the default region is poisoned directly. */
static void clobber(world *w, uint64_t seed) {
  assert_int_equal(bs_memsaver_pause(w->ms, NULL), BS_OK);
  assert_int_equal(bs_memsaver_resume(w->ms, NULL), BS_OK);
  for (size_t i = 0; i < w->p->n; i++)
    if (w->p->t[i].buffer < 0)
      bs_dev_poison(w->dev, w->p->t[i].ptr, w->p->t[i].bytes, seed + i);
}

static size_t synced_count(const world *w) {
  size_t n = 0;
  for (size_t i = 0; i < w->m.n; i++)
    n += bs_tensor_is_synced(&w->m.t[i]);
  return n;
}

/* Independent of bs_params: 2 B per bf16 element, 4 per fp32/int32... */
static size_t synced_bytes(const world *w) {
  size_t n = 0;
  for (size_t i = 0; i < w->m.n; i++)
    if (bs_tensor_is_synced(&w->m.t[i]))
      n += w->m.t[i].numel * bs_dtype_size(w->m.t[i].dtype);
  return n;
}

static void test_round_trip(void **state) {
  world *w = *state;
  assert_string_equal(w->b->ops->kind, "normal");
  assert_int_equal(bs_backuper_backup(w->b, "actor"), BS_OK);
  void **snap = snapshot(w);
  clobber(w, 99);
  assert_int_equal(count_changed(w, snap), synced_count(w));
  assert_int_equal(bs_backuper_restore(w->b, "actor"), BS_OK);
  assert_int_equal(count_changed(w, snap), 0);
  /* A second cycle restores as well from the same allocation. */
  clobber(w, 7);
  assert_int_equal(bs_backuper_restore(w->b, "actor"), BS_OK);
  assert_int_equal(count_changed(w, snap), 0);
  snapshot_free(w, snap);
}

static size_t pinned_now(const world *w) {
  return bs_dev_pinned(w->dev, BS_PIN_BACKUPER);
}

static size_t pinned_high(const world *w) {
  return bs_dev_pinned_peak(w->dev, BS_PIN_BACKUPER);
}

static void test_pinned_bytes_and_reuse(void **state) {
  world *w = *state;
  const size_t per_tag = synced_bytes(w);
  assert_int_equal(pinned_now(w),
                   0); /* lazy: nothing before the first backup */
  assert_int_equal(bs_backuper_backup(w->b, "actor"), BS_OK);
  assert_int_equal(pinned_now(w), per_tag);
  assert_int_equal(bs_params_synced_bytes(w->p), per_tag);
  assert_int_equal(bs_backuper_backup(w->b, "ref"), BS_OK);
  assert_int_equal(pinned_now(w), 2 * per_tag);

  bs_tensor_map first, second;
  assert_int_equal(bs_backuper_get(w->b, "actor", &first), BS_OK);
  clobber(w, 5); /* new device bytes, so the second backup must copy */
  void **snap = snapshot(w);
  size_t peak_before = pinned_high(w);
  assert_int_equal(bs_backuper_backup(w->b, "actor"), BS_OK);
  assert_int_equal(pinned_now(w), 2 * per_tag);
  assert_int_equal(pinned_high(w), peak_before);
  assert_int_equal(bs_backuper_get(w->b, "actor", &second), BS_OK);
  assert_int_equal(first.n, second.n);
  for (size_t i = 0, j = 0; i < w->p->n; i++) {
    if (!snap[i])
      continue;
    assert_ptr_equal(first.e[j].ptr, second.e[j].ptr);
    assert_memory_equal(second.e[j].ptr, snap[i], w->p->t[i].bytes);
    j++;
  }
  bs_tensor_map_free(&first);
  bs_tensor_map_free(&second);
  snapshot_free(w, snap);
}

static void test_get(void **state) {
  world *w = *state;
  bs_tensor_map m = {0};
  bs_err_clear();
  assert_int_equal(bs_backuper_get(w->b, "actor", &m), BS_ERR_MISSING_BACKUP);
  assert_null(m.e);
  assert_int_equal(bs_backuper_backup(w->b, "actor"), BS_OK);
  void **snap = snapshot(w);
  clobber(w, 1);
  assert_int_equal(bs_backuper_get(w->b, "actor", &m), BS_OK);
  assert_int_equal(m.n, synced_count(w));
  size_t j = 0;
  for (size_t i = 0; i < w->p->n; i++) {
    const bs_tensor *t = &w->p->t[i];
    if (!snap[i])
      continue;
    const bs_named *e = &m.e[j++];
    assert_string_equal(e->name, t->spec->name); /* spec order */
    assert_int_equal(e->dtype, t->spec->dtype);
    assert_int_equal(e->bytes, t->bytes);
    assert_true(e->on_host);
    assert_false(bs_memsaver_contains(w->ms, e->ptr));
    assert_memory_equal(e->ptr, snap[i], t->bytes); /* not the clobbered */
  }
  assert_ptr_equal(bs_tensor_map_find(&m, m.e[2].name), &m.e[2]);
  assert_null(bs_tensor_map_find(&m, "nope"));
  bs_tensor_map_free(&m);
  assert_null(m.e);
  snapshot_free(w, snap);
}

static void test_restore_without_backup(void **state) {
  world *w = *state;
  const bs_tensor *first;
  bs_params_synced(w->p, &first, 1);
  assert_int_equal(bs_backuper_backup(w->b, "actor"), BS_OK);
  bs_err_clear();
  assert_int_equal(bs_backuper_restore(w->b, "ref"), BS_ERR_MISSING_BACKUP);
  assert_string_equal(bs_err()->tensor, first->spec->name);
  assert_non_null(strstr(bs_err()->message, "'ref'"));
  bs_err_clear();
  assert_int_equal(bs_backuper_get(w->b, "teacher", &(bs_tensor_map){0}),
                   BS_ERR_MISSING_BACKUP);
  assert_non_null(strstr(bs_err()->message, "'teacher'"));
}

static void test_unknown_tag(void **state) {
  world *w = *state;
  const char *bad[] = {"critic", "", "Actor", NULL};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    bs_err_clear();
    assert_int_equal(bs_backuper_backup(w->b, bad[i]), BS_ERR_INVALID);
    assert_non_null(strstr(bs_err()->message, "unknown model tag"));
    if (bad[i] && bad[i][0]) {
      char want[64];
      snprintf(want, sizeof want, "'%s'", bad[i]);
      assert_non_null(strstr(bs_err()->message, want));
    }
  }
  bs_err_clear();
  assert_int_equal(bs_backuper_restore(w->b, "critic"), BS_ERR_INVALID);
  assert_int_equal(bs_backuper_copy(w->b, "actor", "critic"), BS_ERR_INVALID);
  assert_int_equal(bs_backuper_copy(w->b, "critic", "actor"), BS_ERR_INVALID);
  assert_int_equal(bs_backuper_get(w->b, "x", &(bs_tensor_map){0}),
                   BS_ERR_INVALID);
  assert_int_equal(bs_backuper_backup(NULL, "actor"), BS_ERR_INVALID);
  assert_int_equal(bs_dev_pinned(w->dev, BS_PIN_BACKUPER), 0);
  for (int t = 0; t < BS_BT_COUNT; t++)
    assert_int_equal(bs_backup_tag_parse(bs_backup_tag_name(t)), t);
  assert_int_equal(bs_backup_tag_parse("rollout_actor"), BS_BT_ROLLOUT_ACTOR);
}

static void test_backup_tags(void **state) {
  world *w = *state;
  const char *tags[BS_BT_COUNT];
  assert_int_equal(bs_backuper_backup_tags(w->b, tags, BS_BT_COUNT), 0);
  assert_int_equal(bs_backuper_backup(w->b, "teacher"), BS_OK);
  assert_int_equal(bs_backuper_backup(w->b, "actor"), BS_OK);
  assert_int_equal(bs_backuper_backup_tags(w->b, tags, BS_BT_COUNT), 2);
  assert_string_equal(tags[0], "actor");
  assert_string_equal(tags[1], "teacher");
  assert_int_equal(bs_backuper_backup_tags(w->b, tags, 1), 2);
  assert_true(bs_backuper_has_tag(w->b, "teacher"));
  assert_false(bs_backuper_has_tag(w->b, "ref"));
}

/* release(tag): the snapshot and its pinned memory go, get and restore
 * say "never backed up", the other tags stay, a new backup works again. */
static void test_release(void **state) {
  world *w = *state;
  bs_tensor_map m = {0};
  assert_int_equal(bs_backuper_backup(w->b, "actor"), BS_OK);
  assert_int_equal(bs_backuper_backup(w->b, "ref"), BS_OK);
  assert_int_equal(bs_dev_pinned(w->dev, BS_PIN_BACKUPER), 2 * synced_bytes(w));
  assert_int_equal(bs_backuper_release(w->b, "ref"), BS_OK);
  assert_int_equal(bs_dev_pinned(w->dev, BS_PIN_BACKUPER), synced_bytes(w));
  assert_false(bs_backuper_has_backup(w->b, "ref"));
  assert_false(bs_backuper_has_tag(w->b, "ref"));
  assert_true(bs_backuper_has_backup(w->b, "actor"));
  bs_err_clear();
  assert_int_equal(bs_backuper_get(w->b, "ref", &m), BS_ERR_MISSING_BACKUP);
  assert_string_equal(bs_err()->message, "get('ref'): never backed up");
  bs_err_clear();
  assert_int_equal(bs_backuper_restore(w->b, "ref"), BS_ERR_MISSING_BACKUP);
  assert_string_equal(bs_err()->message, "restore('ref'): never backed up");
  bs_err_clear();
  /* A tag without a snapshot is left alone; an unknown one is refused. */
  assert_int_equal(bs_backuper_release(w->b, "teacher"), BS_OK);
  assert_int_equal(bs_backuper_release(w->b, "critic"), BS_ERR_INVALID);
  bs_err_clear();
  assert_int_equal(bs_backuper_backup(w->b, "ref"), BS_OK);
  assert_true(bs_backuper_has_backup(w->b, "ref"));
  assert_int_equal(bs_backuper_restore(w->b, "ref"), BS_OK);
  assert_int_equal(bs_dev_pinned(w->dev, BS_PIN_BACKUPER), 2 * synced_bytes(w));
  assert_false(bs_backuper_has_backup(w->b, "critic"));
}

static void test_copy(void **state) {
  world *w = *state;
  bs_tensor_map a, r;
  assert_int_equal(bs_backuper_backup(w->b, "ref"), BS_OK);
  clobber(w, 3);
  assert_int_equal(bs_backuper_backup(w->b, "actor"), BS_OK);
  /* From a tag that has no backup into one that has: refused. */
  bs_err_clear();
  assert_int_equal(bs_backuper_copy(w->b, "teacher", "ref"),
                   BS_ERR_MISSING_BACKUP);
  assert_non_null(strstr(bs_err()->message, "'teacher'"));
  /* Into a tag without backup: nothing to copy, nothing created. */
  size_t pinned = bs_dev_pinned(w->dev, BS_PIN_BACKUPER);
  assert_int_equal(bs_backuper_copy(w->b, "actor", "old_actor"), BS_OK);
  assert_false(bs_backuper_has_tag(w->b, "old_actor"));
  assert_int_equal(bs_dev_pinned(w->dev, BS_PIN_BACKUPER), pinned);

  assert_int_equal(bs_backuper_get(w->b, "actor", &a), BS_OK);
  assert_int_equal(bs_backuper_get(w->b, "ref", &r), BS_OK);
  size_t differ = 0;
  for (size_t i = 0; i < a.n; i++)
    differ += memcmp(a.e[i].ptr, r.e[i].ptr, a.e[i].bytes) != 0;
  assert_true(differ > 0);
  assert_int_equal(bs_backuper_copy(w->b, "actor", "ref"), BS_OK);
  for (size_t i = 0; i < a.n; i++) {
    assert_ptr_not_equal(a.e[i].ptr, r.e[i].ptr);
    assert_memory_equal(a.e[i].ptr, r.e[i].ptr, a.e[i].bytes);
  }
  assert_int_equal(bs_backuper_copy(w->b, "ref", "ref"), BS_OK);
  bs_tensor_map_free(&a);
  bs_tensor_map_free(&r);
}

static void test_subset(void **state) {
  world *w = *state;
  const bs_tensor *list[2] = {&w->p->t[0], &w->p->t[w->p->n - 1]};
  bs_backuper *s;
  assert_int_equal(bs_backuper_normal_create_subset(w->p, list, 2, &s), BS_OK);
  assert_int_equal(bs_backuper_backup(s, "actor"), BS_OK);
  assert_int_equal(bs_dev_pinned(w->dev, BS_PIN_BACKUPER),
                   list[0]->bytes + list[1]->bytes);
  bs_tensor_map m;
  assert_int_equal(bs_backuper_get(s, "actor", &m), BS_OK);
  assert_int_equal(m.n, 2);
  assert_string_equal(m.e[1].name, list[1]->spec->name);
  bs_tensor_map_free(&m);
  bs_backuper_destroy(s);

  bs_tensor stray = w->p->t[0];
  const bs_tensor *bad[1] = {&stray};
  bs_err_clear();
  assert_int_equal(bs_backuper_normal_create_subset(w->p, bad, 1, &s),
                   BS_ERR_INVALID);
  assert_int_equal(bs_backuper_normal_create_subset(w->p, NULL, 0, &s), BS_OK);
  assert_int_equal(bs_backuper_backup(s, "ref"), BS_OK);
  assert_true(bs_backuper_has_tag(s, "ref"));
  bs_backuper_destroy(s);
}

#ifdef FIU_ENABLE
/* A backup that fails midway leaves no usable backup of the tag: a restore
 * must not mix the old cycle's bytes with the new one's. */
static void test_failed_backup_invalidates(void **state) {
  world *w = *state;
  assert_int_equal(bs_backuper_backup(w->b, "actor"), BS_OK);
  bs_err_set_rank(0); /* faults fire in a rank's work only */
  bs_fault_disarm_all();
  assert_int_equal(bs_test_arm("name=copy/fail,nth=3", 0), BS_OK);
  bs_err_clear();
  assert_int_equal(bs_backuper_backup(w->b, "actor"), BS_ERR_COPY);
  bs_fault_disarm_all();
  assert_false(bs_backuper_has_tag(w->b, "actor"));
  bs_err_clear();
  assert_int_equal(bs_backuper_restore(w->b, "actor"), BS_ERR_MISSING_BACKUP);
  assert_int_equal(bs_backuper_backup(w->b, "actor"), BS_OK);
  assert_int_equal(bs_backuper_restore(w->b, "actor"), BS_OK);

  assert_int_equal(bs_test_arm("name=backup/pin_alloc,nth=2", 0), BS_OK);
  bs_err_clear();
  assert_int_equal(bs_backuper_backup(w->b, "ref"), BS_ERR_NOMEM);
  bs_fault_disarm_all();
  assert_false(bs_backuper_has_tag(w->b, "ref"));
  assert_int_equal(bs_backuper_backup(w->b, "ref"), BS_OK);
  assert_int_equal(bs_dev_pinned(w->dev, BS_PIN_BACKUPER), 2 * synced_bytes(w));
  bs_err_clear();
}
#else
BS_TEST_SKIP_WITHOUT_FAULTS(test_failed_backup_invalidates)
#endif

#define T(f) cmocka_unit_test_setup_teardown(f, world_open, world_close)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_round_trip),
      T(test_pinned_bytes_and_reuse),
      T(test_get),
      T(test_restore_without_backup),
      T(test_unknown_tag),
      T(test_backup_tags),
      T(test_copy),
      T(test_subset),
      T(test_failed_backup_invalidates),
      T(test_release),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
