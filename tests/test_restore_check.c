/* The SHA256 check window of MainCast (docs/behavior.md §4) against its C API:
 * the first two backups take the hashes, every later backup clears them,
 * every restore compares against the hashes held and keeps them. Every
 * backup/restore sequence, clean ones passing; a changed tensor and a
 * changed tensor set with their messages; the check-window-cleared mutant. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "backup/bs_backup_testing.h"
#include "backup/bs_restore_check.h"
#include "bs_mutant.h"
#include "model/bs_model_parse.h"

#define MAXT 64

typedef struct fx {
  bs_dev *dev;
  bs_memsaver *ms;
  bs_model_spec m;
  bs_params *p;
  bs_restore_check *rc;
  const bs_tensor *t[MAXT];
  size_t n;
} fx;

static int setup(void **state) {
  static fx f;
  memset(&f, 0, sizeof f);
  bs_mutant_reset();
  bs_err_clear();
  assert_int_equal(bs_dev_host_create(&f.dev), BS_OK);
  assert_int_equal(bs_memsaver_create(f.dev, 1, &f.ms), BS_OK);
  assert_int_equal(bs_model_preset("tiny", 1.0, &f.m), BS_OK);
  assert_int_equal(bs_params_create(f.dev, f.ms, &f.m, 2, 256, false, &f.p),
                   BS_OK);
  assert_int_equal(bs_params_fill(f.p, 1), BS_OK);
  f.n = bs_params_synced(f.p, f.t, MAXT);
  assert_int_equal(bs_restore_check_create(f.dev, true, &f.rc), BS_OK);
  *state = &f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  bs_restore_check_destroy(f->rc);
  bs_params_destroy(f->p);
  bs_model_free(&f->m);
  bs_memsaver_destroy(f->ms);
  bs_dev_destroy(f->dev);
  bs_mutant_reset();
  bs_err_clear();
  return 0;
}

/* Flips bit `bit` of tensor i (a second flip puts it back). */
static void flip(fx *f, size_t i, uint64_t bit) {
  bs_dev_bitflip(f->dev, f->t[i]->ptr, f->t[i]->bytes, bit);
}

static bs_status take(fx *f) {
  return bs_restore_check_take(f->rc, f->t, f->n);
}

static bs_status verify(fx *f) {
  return bs_restore_check_verify(f->rc, f->t, f->n);
}

static void test_two_restores_after_one_backup(void **state) {
  fx *f = *state;
  assert_int_equal(take(f), BS_OK);
  assert_int_equal(verify(f), BS_OK);
  assert_int_equal(verify(f), BS_OK);
  assert_int_equal(bs_restore_check_verified(f->rc), 2);
  assert_true(bs_restore_check_held(f->rc));
  /* The third restore is still checked, and a failed check keeps them. */
  flip(f, 2, 3);
  assert_int_equal(verify(f), BS_ERR_HASH_MISMATCH);
  assert_true(bs_restore_check_held(f->rc));
  bs_err_clear();
  flip(f, 2, 3);
  assert_int_equal(verify(f), BS_OK);
  assert_int_equal(bs_restore_check_verified(f->rc), 4);
}

static void test_three_backups_without_a_restore(void **state) {
  fx *f = *state;
  assert_int_equal(take(f), BS_OK);
  assert_int_equal(take(f), BS_OK);
  assert_int_equal(bs_restore_check_taken(f->rc), 2);
  /* The weights moved on after backup #2, as a step would move them. */
  flip(f, 0, 5);
  assert_int_equal(take(f), BS_OK);
  assert_false(bs_restore_check_held(f->rc));
  assert_int_equal(bs_restore_check_taken(f->rc), 2);
  /* Backup #2's hashes must not judge the weights of backup #3. */
  assert_int_equal(verify(f), BS_OK);
  assert_int_equal(bs_restore_check_verified(f->rc), 0);
}

static void test_third_backup_clears(void **state) {
  fx *f = *state;
  assert_int_equal(take(f), BS_OK);
  assert_int_equal(verify(f), BS_OK);
  flip(f, 1, 7);
  assert_int_equal(take(f), BS_OK); /* #2 takes the new bytes */
  assert_int_equal(verify(f), BS_OK);
  assert_int_equal(take(f), BS_OK); /* #3 clears */
  assert_false(bs_restore_check_held(f->rc));
  flip(f, 1, 7);
  assert_int_equal(verify(f), BS_OK);
  assert_int_equal(bs_restore_check_verified(f->rc), 2);
  assert_int_equal(take(f), BS_OK); /* and so does every later one */
  assert_false(bs_restore_check_held(f->rc));
}

/* Every sequence of up to 8 backups and restores, nothing corrupted:
 * every step passes, and a restore is compared exactly when one of the
 * first two backups is the last one before it. */
static void test_any_clean_sequence_passes(void **state) {
  fx *f = *state;
  for (unsigned len = 1; len <= 8; len++)
    for (unsigned seq = 0; seq < (1u << len); seq++) {
      bs_restore_check *rc = NULL;
      int backups = 0, checked = 0;
      assert_int_equal(bs_restore_check_create(f->dev, true, &rc), BS_OK);
      for (unsigned i = 0; i < len; i++) {
        bool backup = (seq >> i) & 1;
        bs_status st = backup ? bs_restore_check_take(rc, f->t, f->n)
                              : bs_restore_check_verify(rc, f->t, f->n);
        if (st != BS_OK)
          fail_msg("sequence %#x step %u: %s", seq, i, bs_err()->message);
        backups += backup;
        checked += !backup && backups >= 1 && backups <= 2;
      }
      assert_int_equal(bs_restore_check_verified(rc), checked);
      assert_int_equal(bs_restore_check_held(rc), backups >= 1 && backups <= 2);
      bs_restore_check_destroy(rc);
    }
}

static void test_changed_tensor(void **state) {
  fx *f = *state;
  char want[200];
  assert_int_equal(take(f), BS_OK);
  assert_int_equal(take(f), BS_OK);
  flip(f, 4, 1);
  flip(f, 6, 2);
  assert_int_equal(verify(f), BS_ERR_HASH_MISMATCH);
  snprintf(want, sizeof want,
           "restore is not bit-identical to the backup for 2/%zu tensors "
           "(cycle 2): first %s",
           f->n, f->t[4]->spec->name);
  assert_string_equal(bs_err()->message, want);
  assert_string_equal(bs_err()->tensor, f->t[4]->spec->name);
}

static void expect_set_changed(const char *tensor) {
  assert_non_null(strstr(bs_err()->message, "changed the tensor set"));
  assert_string_equal(bs_err()->tensor, tensor);
  bs_err_clear();
}

static void test_changed_tensor_set(void **state) {
  fx *f = *state;
  const bs_tensor *other[MAXT];
  size_t n = f->n;
  assert_int_equal(take(f), BS_OK);
  /* one left */
  assert_int_equal(bs_restore_check_verify(f->rc, f->t, n - 1),
                   BS_ERR_TENSOR_SET);
  expect_set_changed(f->t[n - 1]->spec->name);
  /* one joined: the last one in the backup stands in as the newcomer */
  memcpy(other, f->t, n * sizeof *other);
  other[n] = f->t[0];
  assert_int_equal(bs_restore_check_verify(f->rc, other, n + 1),
                   BS_ERR_TENSOR_SET);
  expect_set_changed(f->t[0]->spec->name);
  /* same count, two swapped */
  other[0] = f->t[1];
  other[1] = f->t[0];
  assert_int_equal(bs_restore_check_verify(f->rc, other, n), BS_ERR_TENSOR_SET);
  expect_set_changed(f->t[1]->spec->name);
  /* the hashes outlive the failures: the right set passes */
  assert_int_equal(verify(f), BS_OK);
}

static void test_unarmed_does_nothing(void **state) {
  fx *f = *state;
  bs_restore_check *rc = NULL;
  assert_int_equal(bs_restore_check_create(f->dev, false, &rc), BS_OK);
  assert_int_equal(bs_restore_check_take(rc, f->t, f->n), BS_OK);
  flip(f, 0, 9);
  assert_int_equal(bs_restore_check_verify(rc, f->t, f->n - 1), BS_OK);
  assert_false(bs_restore_check_held(rc));
  assert_int_equal(bs_restore_check_taken(rc) + bs_restore_check_verified(rc),
                   0);
  bs_restore_check_destroy(rc);
}

static void test_clear_drops_the_hashes(void **state) {
  fx *f = *state;
  assert_int_equal(take(f), BS_OK);
  bs_restore_check_clear(f->rc);
  assert_false(bs_restore_check_held(f->rc));
  flip(f, 0, 9);
  assert_int_equal(verify(f), BS_OK);
}

/* Today's first reading of the check: gone at the first restore, so the
 * second restore after one backup passes a corrupted tensor. */
static void test_mutant_check_window_cleared(void **state) {
  fx *f = *state;
  bs_mutant_set(BS_MUT_CHECK_WINDOW_CLEARED, true);
  assert_int_equal(take(f), BS_OK);
  assert_int_equal(verify(f), BS_OK);
  assert_false(bs_restore_check_held(f->rc));
  flip(f, 3, 4);
  assert_int_equal(verify(f), BS_OK);
  assert_int_equal(bs_restore_check_verified(f->rc), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
      T(test_two_restores_after_one_backup),
      T(test_three_backups_without_a_restore),
      T(test_third_backup_clears),
      T(test_any_clean_sequence_passes),
      T(test_changed_tensor),
      T(test_changed_tensor_set),
      T(test_unarmed_does_nothing),
      T(test_clear_drops_the_hashes),
      T(test_mutant_check_window_cleared),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
