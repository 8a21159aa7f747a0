#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#ifdef FIU_ENABLE
#include <fiu-control.h>
#include <fiu.h>
#endif

#include "bs_test_faults.h"
#include "bs_test_rss.h"
#include "dev/bs_dev.h"
#include "dev/bs_dev_testing.h"

static int setup(void **state) {
  bs_dev *d = NULL;
  bs_err_clear();
  if (bs_dev_host_create(&d) != BS_OK)
    return -1;
  *state = d;
  return 0;
}

static int teardown(void **state) {
  bs_dev_pinned_free(*state, BS_PIN_OTHER, NULL, 0); /* a no-op */
  bs_dev_destroy(*state);
  return 0;
}

static void test_host_create(void **state) {
  bs_dev *d = *state;
  assert_string_equal(bs_dev_name(d), "host");
  assert_true(bs_dev_page(d) >= 4096);
  assert_int_equal(bs_dev_page(d) & (bs_dev_page(d) - 1), 0);
  assert_int_equal(bs_dev_host_create(NULL), BS_ERR_INVALID);
}

static void test_pinned_accounting(void **state) {
  bs_dev *d = *state;
  void *a = NULL, *b = NULL, *c = NULL;
  assert_int_equal(bs_dev_pinned_alloc(d, BS_PIN_BACKUPER, 3000, &a), BS_OK);
  assert_int_equal(bs_dev_pinned_alloc(d, BS_PIN_BACKUPER, 5000, &b), BS_OK);
  assert_int_equal(bs_dev_pinned_alloc(d, BS_PIN_MEMSAVER, 700, &c), BS_OK);
  assert_int_equal((uintptr_t)a % 64, 0); /* a cache line, not a page */
  assert_int_equal(((unsigned char *)b)[4999], 0); /* zeroed */
  assert_int_equal(bs_dev_pinned(d, BS_PIN_BACKUPER), 8000);
  assert_int_equal(bs_dev_pinned(d, BS_PIN_MEMSAVER), 700);
  assert_int_equal(bs_dev_pinned(d, BS_PIN_OTHER), 0);
  assert_int_equal(bs_dev_pinned_total(d), 8700);
  bs_dev_pinned_free(d, BS_PIN_BACKUPER, a, 3000);
  assert_int_equal(bs_dev_pinned(d, BS_PIN_BACKUPER), 5000);
  assert_int_equal(bs_dev_pinned_peak(d, BS_PIN_BACKUPER), 8000);
  assert_int_equal(bs_dev_pinned_total(d), 5700);
  assert_int_equal(bs_dev_pinned_peak_total(d), 8700);
  /* A new high for one owner moves its peak and the total's. */
  assert_int_equal(bs_dev_pinned_alloc(d, BS_PIN_OTHER, 4000, &a), BS_OK);
  assert_int_equal(bs_dev_pinned_peak(d, BS_PIN_OTHER), 4000);
  assert_int_equal(bs_dev_pinned_peak_total(d), 9700);
  bs_dev_pinned_free(d, BS_PIN_OTHER, a, 4000);
  bs_dev_pinned_free(d, BS_PIN_BACKUPER, b, 5000);
  bs_dev_pinned_free(d, BS_PIN_MEMSAVER, c, 700);
  assert_int_equal(bs_dev_pinned_total(d), 0);
  assert_int_equal(bs_dev_pinned(d, BS_PIN_MEMSAVER), 0);
  assert_int_equal(bs_dev_pinned_peak(d, BS_PIN_MEMSAVER), 700);
}

static void test_pinned_bad_args(void **state) {
  bs_dev *d = *state;
  void *p = NULL;
  assert_int_equal(bs_dev_pinned_alloc(d, BS_PIN_OWNER_COUNT, 8, &p),
                   BS_ERR_INVALID);
  assert_int_equal(bs_dev_pinned_alloc(d, BS_PIN_OTHER, 0, &p), BS_ERR_INVALID);
  assert_int_equal(bs_dev_pinned_alloc(d, BS_PIN_OTHER, 8, NULL),
                   BS_ERR_INVALID);
  assert_int_equal(bs_dev_pinned_alloc(NULL, BS_PIN_OTHER, 8, &p),
                   BS_ERR_INVALID);
  assert_int_equal(bs_dev_pinned_total(d), 0);
  assert_int_equal(bs_dev_sync(NULL), BS_ERR_INVALID);
  assert_int_equal(bs_dev_sync(d), BS_OK);
  assert_int_equal(bs_dev_pinned(d, BS_PIN_OWNER_COUNT), 0);
  assert_int_equal(bs_dev_pinned_peak(NULL, BS_PIN_OTHER), 0);
  assert_int_equal(bs_dev_page(NULL), 0);
}

/* The address-space calls refuse a missing device or output. */
static void test_va_bad_args(void **state) {
  bs_dev *d = *state;
  void *va = NULL;
  bs_err_clear();
  assert_int_equal(bs_dev_va_reserve(NULL, 4096, &va), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "no device"));
  assert_int_equal(bs_dev_va_reserve(d, 4096, NULL), BS_ERR_INVALID);
  assert_int_equal(bs_dev_phys_map(NULL, &va, 4096), BS_ERR_INVALID);
  assert_int_equal(bs_dev_phys_unmap(NULL, &va, 4096), BS_ERR_INVALID);
  bs_dev_va_release(NULL, &va, 4096); /* a no-op */
  bs_err_clear();
}

/* Device memory of the host backend: a reservation made readable. */
static void *dev_mem(bs_dev *d, size_t n) {
  void *va = NULL;
  assert_int_equal(bs_dev_va_reserve(d, n, &va), BS_OK);
  assert_int_equal(bs_dev_phys_map(d, va, n), BS_OK);
  return va;
}

static void test_copy_all_directions(void **state) {
  bs_dev *d = *state;
  size_t n = 3 * bs_dev_page(d);
  unsigned char *h1 = NULL, *h2 = NULL;
  unsigned char *d1 = dev_mem(d, n), *d2 = dev_mem(d, n);
  assert_int_equal(bs_dev_pinned_alloc(d, BS_PIN_OTHER, n, (void **)&h1),
                   BS_OK);
  assert_int_equal(bs_dev_pinned_alloc(d, BS_PIN_OTHER, n, (void **)&h2),
                   BS_OK);
  for (size_t i = 0; i < n; i++)
    h1[i] = (unsigned char)(i * 7 + 1);
  assert_int_equal(bs_dev_copy(d, d1, h1, n, BS_H2D), BS_OK);
  assert_int_equal(bs_dev_copy(d, d2, d1, n, BS_D2D), BS_OK);
  assert_int_equal(bs_dev_copy(d, h2, d2, n, BS_D2H), BS_OK);
  assert_memory_equal(h1, h2, n);
  memset(h2, 0, n);
  assert_int_equal(bs_dev_copy(d, h2, h1, n - 1, BS_H2H), BS_OK);
  assert_memory_equal(h1, h2, n - 1);
  assert_int_equal(h2[n - 1], 0);
  assert_int_equal(bs_dev_sync(d), BS_OK);
  /* Bad arguments are errors, an empty copy is not. */
  assert_int_equal(bs_dev_copy(d, NULL, h1, n, BS_H2D), BS_ERR_INVALID);
  assert_int_equal(bs_dev_copy(d, h2, h1, n, (bs_copy_dir)9), BS_ERR_INVALID);
  assert_int_equal(bs_dev_copy(d, NULL, NULL, 0, BS_H2H), BS_OK);
  bs_dev_pinned_free(d, BS_PIN_OTHER, h1, n);
  bs_dev_pinned_free(d, BS_PIN_OTHER, h2, n);
  bs_dev_va_release(d, d1, n);
  bs_dev_va_release(d, d2, n);
}

/* Every length and every pair of start offsets up to two 16-byte vectors:
 * exactly the n bytes move, the bytes around the destination stay. */
static void test_sm_copy_odd_sizes_offsets(void **state) {
  bs_dev *d = *state;
  enum { MAXN = 33, PAD = 17, LEN = MAXN + 2 * PAD };
  unsigned char *src = dev_mem(d, bs_dev_page(d)),
                *dst = dev_mem(d, bs_dev_page(d));
  unsigned char want[LEN];
  bs_k_poison(src, LEN, 3);
  for (size_t n = 0; n <= MAXN; n++)
    for (size_t so = 0; so < PAD; so += 3)
      for (size_t dof = 0; dof < PAD; dof += 2) {
        memset(dst, 0x5A, LEN);
        memcpy(want, dst, LEN);
        memcpy(want + dof, src + so, n);
        assert_int_equal(bs_dev_sm_copy(d, dst + dof, src + so, n), BS_OK);
        assert_int_equal(bs_dev_sync(d), BS_OK);
        assert_memory_equal(dst, want, LEN);
      }
  bs_dev_va_release(d, src, bs_dev_page(d));
  bs_dev_va_release(d, dst, bs_dev_page(d));
}

/* A copy of several pages, as the bench's ceiling runs it. */
static void test_sm_copy_pages(void **state) {
  bs_dev *d = *state;
  size_t n = 3 * bs_dev_page(d) + 5;
  unsigned char *src = dev_mem(d, n), *dst = dev_mem(d, n);
  bs_k_poison(src, n, 11);
  assert_int_equal(bs_dev_sm_copy(d, dst, src, n), BS_OK);
  assert_int_equal(bs_dev_sync(d), BS_OK);
  assert_int_equal(bs_k_first_diff(src, dst, n), n);
  bs_dev_va_release(d, src, n);
  bs_dev_va_release(d, dst, n);
}

/* Bad arguments and overlapping ranges are errors that copy nothing; an
 * empty copy is not an error, whatever the pointers. */
static void test_sm_copy_bad_args(void **state) {
  bs_dev *d = *state;
  unsigned char buf[64], keep[64];
  bs_k_poison(buf, sizeof buf, 7);
  memcpy(keep, buf, sizeof buf);
  bs_err_clear();
  assert_int_equal(bs_dev_sm_copy(NULL, buf, buf + 32, 8), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "sm copy"));
  assert_int_equal(bs_dev_sm_copy(d, NULL, buf, 8), BS_ERR_INVALID);
  assert_int_equal(bs_dev_sm_copy(d, buf, NULL, 8), BS_ERR_INVALID);
  bs_err_clear();
  assert_int_equal(bs_dev_sm_copy(d, buf + 8, buf, 9), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "overlap"));
  assert_int_equal(bs_dev_sm_copy(d, buf, buf + 8, 9), BS_ERR_INVALID);
  assert_int_equal(bs_dev_sm_copy(d, buf, buf, 1), BS_ERR_INVALID);
  assert_memory_equal(buf, keep, sizeof buf);
  bs_err_clear();
  /* Adjacent ranges do not overlap. */
  assert_int_equal(bs_dev_sm_copy(d, buf + 8, buf, 8), BS_OK);
  assert_memory_equal(buf + 8, keep, 8);
  assert_int_equal(bs_dev_sm_copy(d, NULL, NULL, 0), BS_OK);
  assert_int_equal(bs_dev_sm_copy(d, buf, buf, 0), BS_OK);
  assert_int_equal(bs_dev_sync(d), BS_OK);
}

static void test_unmap_drops_bytes(void **state) {
  bs_dev *d = *state;
  size_t n = 2 * bs_dev_page(d);
  unsigned char *va = dev_mem(d, n);
  memset(va, 0xAB, n);
  assert_int_equal(bs_dev_phys_unmap(d, va, n), BS_OK);
  /* A second release of the same memory is refused, as the driver refuses
   * a released handle. */
  bs_err_clear();
  assert_int_equal(bs_dev_phys_unmap(d, va, n), BS_ERR_STATE);
  assert_non_null(strstr(bs_err()->message, "released already"));
  bs_err_clear();
  assert_int_equal(bs_dev_phys_map(d, va, n), BS_OK);
  for (size_t i = 0; i < n; i += 511)
    assert_int_equal(va[i], 0);
  bs_dev_va_release(d, va, n);
}

/* A copy writes only the pages it changes: zeros over untouched memory
 * leave it unbacked (a world-padded buffer's padding), and so does a cast
 * of zeros; other bytes land, a page each. */
static void test_copy_leaves_equal_pages(void **state) {
  bs_dev *d = *state;
  size_t pg = bs_dev_page(d), n = 16 * pg;
  unsigned char *va = dev_mem(d, n);
  unsigned char *src = calloc(1, n);
  float *f = calloc(1, 2 * n);
  assert_non_null(src);
  assert_non_null(f);
  memset(src, 0, n);
  memset(f, 0, 2 * n);
  /* Once first: the stack and heap they use are then in place. */
  assert_int_equal(bs_dev_copy(d, src + 1, src, 1, BS_H2D), BS_OK);
  bs_dev_cast_f32_bf16(d, (uint16_t *)src, f, 2048);
  long before = bs_test_rss_pages();
  assert_int_equal(bs_dev_copy(d, va, src, n, BS_H2D), BS_OK);
  bs_dev_cast_f32_bf16(d, (uint16_t *)va, f, n / 2);
  bs_test_rss_grew(before, 0);
  src[pg + 7] = 9;
  f[3] = 1.0f;
  assert_int_equal(bs_dev_copy(d, va + 1, src, n - 1, BS_H2D), BS_OK);
  bs_dev_cast_f32_bf16(d, (uint16_t *)(va + 3 * pg), f, pg / 2);
  bs_test_rss_grew(before, 2);
  assert_int_equal(va[pg + 8], 9);
  assert_int_equal(((uint16_t *)(va + 3 * pg))[3], 0x3F80);
  free(src);
  free(f);
  bs_dev_va_release(d, va, n);
}

/* The kernel slots are the kernels/ functions, unchanged. */
static void test_kernel_ops(void **state) {
  bs_dev *d = *state;
  float src[4] = {1.0f, -2.5f, 3.14159f, 65504.0f};
  uint16_t got[4], want[4];
  unsigned char a[64], b[64];
  bs_dev_cast_f32_bf16(d, got, src, 4);
  bs_k_cast_f32_bf16(want, src, 4);
  assert_memory_equal(got, want, sizeof got);
  bs_dev_poison(d, a, sizeof a, 5);
  bs_k_poison(b, sizeof b, 5);
  assert_memory_equal(a, b, sizeof a);
  bs_dev_poison_from(d, a, 20, 5, 11);
  bs_k_poison_from(b, 20, 5, 11);
  assert_memory_equal(a, b, sizeof a);
  assert_int_equal(bs_dev_first_diff(d, a, b, sizeof a), sizeof a);
  bs_dev_bitflip(d, b, sizeof b, 8 * 17 + 3);
  assert_int_equal(bs_dev_first_diff(d, a, b, sizeof a), 17);
  assert_int_equal(a[17] ^ b[17], 1 << 3);

  float p[3] = {1, 2, 3}, m[3] = {0}, v[3] = {0}, g[3] = {0.5f, -1, 2};
  float p2[3] = {1, 2, 3}, m2[3] = {0}, v2[3] = {0};
  uint16_t pb[3];
  float g1[3], g2[3];
  bs_adam_hp hp = bs_k_adam_hp_make(1e-3f, 0.9f, 0.95f, 1e-8f, 0.01f, 1);
  bs_dev_adam(d, p, m, v, g, 3, &hp);
  bs_k_adam(p2, m2, v2, g, 3, &hp);
  assert_memory_equal(p, p2, sizeof p);
  assert_memory_equal(v, v2, sizeof v);
  bs_k_cast_f32_bf16(pb, p, 3);
  bs_dev_grad(d, g1, pb, 3, 10, 42, 1, 2);
  bs_k_grad(g2, pb, 3, 10, 42, 1, 2);
  assert_memory_equal(g1, g2, sizeof g1);
}

#ifdef FIU_ENABLE
static void test_copy_fault(void **state) {
  bs_dev *d = *state;
  char src[32] = "payload", dst[32] = {0};
  bs_err_set_rank(0); /* faults fire in a rank's work only */
  fiu_init(0);
  assert_int_equal(fiu_enable("copy/fail", 1, NULL, 0), 0);
  assert_int_equal(bs_dev_copy(d, dst, src, sizeof src, BS_H2H), BS_ERR_COPY);
  assert_string_equal(bs_err()->message,
                      "copy of 32 bytes failed (fault copy/fail)");
  assert_int_equal(dst[0], 0); /* nothing copied */
  /* An observer's copy does not reach the point; its arguments are
   * checked the same. */
  assert_int_equal(bs_dev_copy_observe(d, dst, src, sizeof src, BS_H2H), BS_OK);
  assert_string_equal(dst, "payload");
  assert_int_equal(bs_dev_copy_observe(d, NULL, src, 1, BS_H2H),
                   BS_ERR_INVALID);
  assert_int_equal(bs_dev_copy_observe(d, dst, src, 0, BS_H2H), BS_OK);
  memset(dst, 0, sizeof dst);
  fiu_disable("copy/fail");
  bs_err_clear();
  assert_int_equal(bs_dev_copy(d, dst, src, sizeof src, BS_H2H), BS_OK);
  assert_string_equal(dst, "payload");
}

/* Only backupers' pinned memory fails: the memory saver's does not. */
static void test_pin_alloc_fault(void **state) {
  bs_dev *d = *state;
  void *p = NULL;
  bs_err_set_rank(0); /* faults fire in a rank's work only */
  fiu_init(0);
  assert_int_equal(fiu_enable("backup/pin_alloc", 1, NULL, 0), 0);
  assert_int_equal(bs_dev_pinned_alloc(d, BS_PIN_BACKUPER, 4096, &p),
                   BS_ERR_NOMEM);
  assert_null(p);
  assert_int_equal(bs_dev_pinned(d, BS_PIN_BACKUPER), 0);
  assert_int_equal(bs_dev_pinned_peak(d, BS_PIN_BACKUPER), 0);
  assert_int_equal(bs_dev_pinned_alloc(d, BS_PIN_MEMSAVER, 4096, &p), BS_OK);
  assert_int_equal(bs_dev_pinned(d, BS_PIN_MEMSAVER), 4096);
  bs_dev_pinned_free(d, BS_PIN_MEMSAVER, p, 4096);
  fiu_disable("backup/pin_alloc");
  bs_err_clear();
  assert_int_equal(bs_dev_pinned_alloc(d, BS_PIN_BACKUPER, 4096, &p), BS_OK);
  bs_dev_pinned_free(d, BS_PIN_BACKUPER, p, 4096);
}
#else
BS_TEST_SKIP_WITHOUT_FAULTS(test_copy_fault)
BS_TEST_SKIP_WITHOUT_FAULTS(test_pin_alloc_fault)
#endif

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_host_create),
      T(test_pinned_accounting),
      T(test_pinned_bad_args),
      T(test_va_bad_args),
      T(test_copy_all_directions),
      T(test_unmap_drops_bytes),
      T(test_copy_leaves_equal_pages),
      T(test_kernel_ops),
      T(test_sm_copy_odd_sizes_offsets),
      T(test_sm_copy_pages),
      T(test_sm_copy_bad_args),
      T(test_copy_fault),
      T(test_pin_alloc_fault),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
