/* The cuda device backend against the host kernels, bit for bit. Skips
 * (with the reason) where there is no GPU or the build has no CUDA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_mutant.h"
#include "dev/bs_dev.h"
#include "dev/bs_dev_testing.h"
#include "memsaver/bs_memsaver.h"

/* Random elements plus a stride of edge values; odd, to cover the tails. */
enum { N = (1 << 20) + 13 };

static bs_dev *gpu;
static char why[256];

static int setup(void **state) {
  (void)state;
  bs_err_clear();
  if (bs_dev_create("cuda", 0, &gpu) != BS_OK) {
    bs_err_format(bs_err(), why, sizeof why);
    fprintf(stderr, "test_cuda: skipping the GPU tests: %s\n", why);
    gpu = NULL;
  }
  bs_err_clear();
  return 0;
}

static int teardown(void **state) {
  (void)state;
  bs_dev_destroy(gpu);
  return 0;
}

#define NEED_GPU()                                                             \
  do {                                                                         \
    if (!gpu) {                                                                \
      fprintf(stderr, "skipped: %s\n", why);                                   \
      skip();                                                                  \
    }                                                                          \
  } while (0)

/* Device memory through the seam itself: reserve, then map. */
typedef struct dbuf {
  void *va;
  size_t len;
} dbuf;

static dbuf dalloc(size_t n) {
  size_t page = bs_dev_page(gpu);
  dbuf b = {NULL, (n + page - 1) / page * page};
  assert_int_equal(bs_dev_va_reserve(gpu, b.len, &b.va), BS_OK);
  assert_int_equal(bs_dev_phys_map(gpu, b.va, b.len), BS_OK);
  return b;
}

static void dfree(dbuf b) {
  assert_int_equal(bs_dev_phys_unmap(gpu, b.va, b.len), BS_OK);
  bs_dev_va_release(gpu, b.va, b.len);
}

static void h2d(dbuf b, const void *src, size_t n) {
  assert_int_equal(bs_dev_copy(gpu, b.va, src, n, BS_H2D), BS_OK);
}

static void d2h(void *dst, dbuf b, size_t n) {
  assert_int_equal(bs_dev_sync(gpu), BS_OK);
  assert_int_equal(bs_dev_copy(gpu, dst, b.va, n, BS_D2H), BS_OK);
}

static const uint32_t edges[] = {
    0x3f808000, 0x3f818000, 0x3f807fff, 0x3f808001, 0x7fc00000, 0xffc00000,
    0x7f800001, 0xff800001, 0x7fffffff, 0x7f800000, 0xff800000, 0x00000000,
    0x80000000, 0x00000001, 0x00008000, 0x00018000, 0x807fffff, 0x7f7f0000,
    0x7f7f7fff, 0x7f7f8000, 0x7f7fffff, 0xff7f8000, 0x00800000, 0x3f800000,
};

static void fill_floats(float *x, size_t n, uint64_t seed) {
  uint8_t *raw = (uint8_t *)x;
  bs_k_poison(raw, n * sizeof *x, seed); /* any bit pattern, NaNs included */
  for (size_t i = 0; i < n; i += 97)
    memcpy(&x[i], &edges[(i / 97) % (sizeof edges / sizeof edges[0])], 4);
}

/* Values an optimizer sees: finite, of moderate size. */
static void fill_unit(float *x, size_t n, uint64_t seed, float scale) {
  for (size_t i = 0; i < n; i++)
    x[i] = scale * bs_k_grad_hash_unit(seed, 0, i);
}

static void test_cast_matches_host(void **state) {
  (void)state;
  NEED_GPU();
  float *src = malloc(N * sizeof *src);
  uint16_t *want = malloc(N * 2), *got = malloc(N * 2);
  assert_true(src && want && got);
  fill_floats(src, N, 1);
  bs_k_cast_f32_bf16(want, src, N);
  dbuf ds = dalloc(N * 4), dd = dalloc(N * 2);
  h2d(ds, src, N * 4);
  bs_dev_cast_f32_bf16(gpu, dd.va, ds.va, N);
  d2h(got, dd, N * 2);
  assert_int_equal(bs_k_first_diff(want, got, N * 2), N * 2);
  /* A bucket's slice starts anywhere: every offset up to one vector (the
   * eight-wide path after a head, 0 mod 4: the four-wide one, else the
   * scalar one), and lengths that leave a tail; bytes outside stay 0. */
  static const uint16_t zero[16];
  for (size_t off = 1; off <= 9; off++) {
    size_t len = N - off - off % 3;
    memset(got, 0, N * 2);
    h2d(dd, got, N * 2);
    bs_dev_cast_f32_bf16(gpu, (uint16_t *)dd.va + off, (float *)ds.va + off,
                         len);
    d2h(got, dd, N * 2);
    assert_int_equal(bs_k_first_diff(want + off, got + off, len * 2), len * 2);
    assert_memory_equal(got, zero, off * 2);
    assert_memory_equal(got + off + len, zero, (N - off - len) * 2);
  }
  /* Source and destination misaligned differently: the scalar path. */
  memset(got, 0, N * 2);
  h2d(dd, got, N * 2);
  bs_dev_cast_f32_bf16(gpu, (uint16_t *)dd.va + 2, (float *)ds.va + 1, N - 2);
  d2h(got, dd, N * 2);
  assert_int_equal(bs_k_first_diff(want + 1, got + 2, (N - 2) * 2),
                   (N - 2) * 2);
  dfree(ds);
  dfree(dd);
  free(src);
  free(want);
  free(got);
}

static void test_adam_matches_host(void **state) {
  (void)state;
  NEED_GPU();
  size_t bytes = N * sizeof(float);
  float *h[4], *out[3];
  for (int k = 0; k < 4; k++)
    assert_non_null(h[k] = malloc(bytes));
  for (int k = 0; k < 3; k++)
    assert_non_null(out[k] = malloc(bytes));
  fill_unit(h[0], N, 1, 2.0f);
  fill_unit(h[1], N, 2, 0.1f);
  fill_unit(h[2], N, 3, 0.01f);
  for (size_t i = 0; i < N; i++)
    h[2][i] = h[2][i] * h[2][i]; /* v >= 0 */
  fill_unit(h[3], N, 4, 1.0f);
  dbuf d[4];
  for (int k = 0; k < 4; k++) {
    d[k] = dalloc(bytes);
    h2d(d[k], h[k], bytes);
  }
  for (int step = 1; step <= 3; step++) {
    bs_adam_hp hp = bs_k_adam_hp_make(1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, step);
    bs_k_adam(h[0], h[1], h[2], h[3], N, &hp);
    bs_dev_adam(gpu, d[0].va, d[1].va, d[2].va, d[3].va, N, &hp);
  }
  for (int k = 0; k < 3; k++) {
    d2h(out[k], d[k], bytes);
    assert_int_equal(bs_k_first_diff(h[k], out[k], bytes), bytes);
  }
  for (int k = 0; k < 4; k++) {
    dfree(d[k]);
    free(h[k]);
  }
  for (int k = 0; k < 3; k++)
    free(out[k]);
}

static void test_grad_matches_host(void **state) {
  (void)state;
  NEED_GPU();
  uint16_t *p = malloc(N * 2);
  float *want = malloc(N * 4), *got = malloc(N * 4);
  assert_true(p && want && got);
  bs_k_poison(p, N * 2, 9); /* every bf16 pattern, NaN and Inf included */
  bs_k_grad(want, p, N, 1ull << 33, 42, 5, 11);
  dbuf dp = dalloc(N * 2), dg = dalloc(N * 4);
  h2d(dp, p, N * 2);
  bs_dev_grad(gpu, dg.va, dp.va, N, 1ull << 33, 42, 5, 11);
  d2h(got, dg, N * 4);
  assert_int_equal(bs_k_first_diff(want, got, N * 4), N * 4);
  dfree(dp);
  dfree(dg);
  free(p);
  free(want);
  free(got);
}

static void test_poison_bitflip_first_diff(void **state) {
  (void)state;
  NEED_GPU();
  size_t n = N;
  uint8_t *want = malloc(n + 8), *got = malloc(n + 8);
  assert_true(want && got);
  dbuf a = dalloc(n + 8), b = dalloc(n + 8);
  /* Aligned and unaligned starts, odd lengths. */
  const size_t offs[] = {0, 3};
  for (size_t t = 0; t < 2; t++) {
    size_t o = offs[t];
    uint8_t *da = (uint8_t *)a.va + o, *db = (uint8_t *)b.va + o;
    bs_k_poison(want, n, 31 + o);
    bs_dev_poison(gpu, da, n, 31 + o);
    assert_int_equal(bs_dev_sync(gpu), BS_OK);
    assert_int_equal(bs_dev_copy(gpu, got, da, n, BS_D2H), BS_OK);
    assert_int_equal(bs_k_first_diff(want, got, n), n);
    assert_int_equal(bs_dev_copy(gpu, db, da, n, BS_D2D), BS_OK);
    assert_int_equal(bs_dev_first_diff(gpu, da, db, n), n);
    const uint64_t bits[] = {0, 8 * 4096 + 5, 8 * (uint64_t)n - 1, 8 * n + 9};
    for (size_t k = 0; k < 4; k++) {
      size_t at = (size_t)(bits[k] % (8 * n)) / 8;
      bs_dev_bitflip(gpu, db, n, bits[k]);
      bs_k_bitflip(want, n, bits[k]);
      assert_int_equal(bs_dev_first_diff(gpu, da, db, n), at);
      assert_int_equal(bs_dev_copy(gpu, got, db, n, BS_D2H), BS_OK);
      assert_int_equal(bs_k_first_diff(want, got, n), n);
      bs_dev_bitflip(gpu, db, n, bits[k]);
      bs_k_bitflip(want, n, bits[k]);
    }
    assert_int_equal(bs_dev_first_diff(gpu, da, db, n), n);
    assert_int_equal(bs_dev_sync(gpu), BS_OK);
  }
  dfree(a);
  dfree(b);
  free(want);
  free(got);
}

/* A part of the pattern from any byte on (a resume's fill around
 * padding), at aligned and unaligned starts. */
static void test_poison_from(void **state) {
  (void)state;
  NEED_GPU();
  size_t n = 1003;
  uint8_t want[1003], got[1003];
  dbuf a = dalloc(n + 8);
  const size_t offs[] = {0, 3}, froms[] = {0, 5, 8, 13, 4096};
  for (size_t t = 0; t < 2; t++)
    for (size_t k = 0; k < 5; k++) {
      bs_k_poison_from(want, n, 31, froms[k]);
      bs_dev_poison_from(gpu, (uint8_t *)a.va + offs[t], n, 31, froms[k]);
      assert_int_equal(bs_dev_sync(gpu), BS_OK);
      assert_int_equal(
          bs_dev_copy(gpu, got, (uint8_t *)a.va + offs[t], n, BS_D2H), BS_OK);
      assert_int_equal(bs_k_first_diff(want, got, n), n);
    }
  dfree(a);
}

/* The SM copy's buffers: device source, destination and cudaMemcpy
 * reference of len bytes each, and host room for the last two. */
typedef struct sm_bufs {
  size_t len;
  dbuf src, dst, ref;
  uint8_t *got, *want;
} sm_bufs;

/* One SM copy of n bytes from src + so to dst + dof against cudaMemcpy's
 * (the copy op) into ref + dof: the same bytes, and the padding around
 * them untouched in both. */
static void sm_copy_case(const sm_bufs *b, size_t n, size_t so, size_t dof) {
  uint8_t *src = (uint8_t *)b->src.va + so;
  bs_dev_poison(gpu, b->dst.va, b->len, 8);
  bs_dev_poison(gpu, b->ref.va, b->len, 8);
  assert_int_equal(bs_dev_sync(gpu), BS_OK);
  assert_int_equal(bs_dev_copy(gpu, (uint8_t *)b->ref.va + dof, src, n, BS_D2D),
                   BS_OK);
  assert_int_equal(bs_dev_sm_copy(gpu, (uint8_t *)b->dst.va + dof, src, n),
                   BS_OK);
  d2h(b->got, b->dst, b->len);
  d2h(b->want, b->ref, b->len);
  assert_int_equal(bs_k_first_diff(b->want, b->got, b->len), b->len);
}

/* Sizes around one 16-byte vector and a large odd one, at start offsets
 * that take every vector width of the kernel: both 16-byte aligned, both
 * off by the same amount (head and tail bytes), and skews of 8, 4, 2 and an
 * odd one (the byte loop). */
static void test_sm_copy_matches_memcpy(void **state) {
  (void)state;
  NEED_GPU();
  const size_t sizes[] = {0, 1, 15, 16, 17, (1u << 20) + 3};
  const size_t offs[][2] = {{0, 0}, {5, 5}, {8, 0}, {4, 12}, {2, 0}, {3, 10}};
  sm_bufs b = {.len = (1u << 20) + 64};
  b.got = malloc(b.len);
  b.want = malloc(b.len);
  assert_true(b.got && b.want);
  b.src = dalloc(b.len);
  b.dst = dalloc(b.len);
  b.ref = dalloc(b.len);
  bs_dev_poison(gpu, b.src.va, b.len, 21);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (size_t k = 0; k < sizeof offs / sizeof offs[0]; k++)
      sm_copy_case(&b, sizes[i], offs[k][0], offs[k][1]);
  dfree(b.src);
  dfree(b.dst);
  dfree(b.ref);
  free(b.got);
  free(b.want);
}

/* The memory-saver cycle: map, fill, unmap (the bytes are gone), map again
 * at the same address, copy back: the same bytes at the same address. */
static void test_region_round_trip(void **state) {
  (void)state;
  NEED_GPU();
  size_t len = 3 * bs_dev_page(gpu);
  uint8_t *host = NULL, *back = malloc(len);
  assert_non_null(back);
  assert_int_equal(bs_dev_pinned_alloc(gpu, BS_PIN_OTHER, len, (void **)&host),
                   BS_OK);
  bs_k_poison(host, len, 5);
  void *va = NULL;
  assert_int_equal(bs_dev_va_reserve(gpu, len, &va), BS_OK);
  assert_int_equal((uintptr_t)va % bs_dev_page(gpu), 0);
  assert_int_equal(bs_dev_phys_map(gpu, va, len), BS_OK);
  assert_int_equal(bs_dev_copy(gpu, va, host, len, BS_H2D), BS_OK);
  bs_err_clear();
  assert_int_equal(bs_dev_phys_map(gpu, va, len), BS_ERR_STATE);
  bs_err_clear();
  assert_int_equal(bs_dev_phys_unmap(gpu, va, len), BS_OK);
  /* A second release of the same memory goes to the driver, which refuses
   * the released handle; a third has no handle left to release. */
  assert_int_equal(bs_dev_phys_unmap(gpu, va, len), BS_ERR_STATE);
  assert_non_null(strstr(bs_err()->message, "released already"));
  print_message("second release: %s\n", bs_err()->message);
  bs_err_clear();
  assert_int_equal(bs_dev_phys_unmap(gpu, va, len), BS_ERR_INVALID);
  bs_err_clear();
  assert_int_equal(bs_dev_phys_map(gpu, (uint8_t *)va + 1, len - 1),
                   BS_ERR_INVALID);
  bs_err_clear();
  assert_int_equal(bs_dev_phys_map(gpu, va, len), BS_OK);
  assert_int_equal(bs_dev_copy(gpu, va, host, len, BS_H2D), BS_OK);
  assert_int_equal(bs_dev_copy(gpu, back, va, len, BS_D2H), BS_OK);
  assert_memory_equal(host, back, len);
  /* A resume without backup: poison at the same address, as on the host. */
  bs_dev_poison(gpu, va, len, 77);
  assert_int_equal(bs_dev_copy(gpu, back, va, len, BS_D2H), BS_OK);
  bs_k_poison(host, len, 77);
  assert_memory_equal(host, back, len);
  assert_int_equal(bs_dev_copy(gpu, back, host, len, BS_H2H), BS_OK);
  /* Release with the range still mapped: the backend unmaps it first. */
  bs_dev_va_release(gpu, va, len);
  bs_dev_pinned_free(gpu, BS_PIN_OTHER, host, len);
  free(back);
}

/* Selection by name works on every build. */
static void test_select(void **state) {
  (void)state;
  bs_dev *d = (bs_dev *)&d;
  /* The count agrees with whether a device could be created. */
  if (gpu)
    assert_true(bs_dev_cuda_count() >= 1);
  else
    assert_int_equal(bs_dev_cuda_count(), 0);
  bs_err_clear();
  assert_int_equal(bs_dev_create("tpu", 0, &d), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "'tpu'"));
  bs_err_clear();
  assert_int_equal(bs_dev_create(NULL, 0, &d), BS_ERR_INVALID);
  bs_err_clear();
  assert_int_equal(bs_dev_create("cuda", -1, &d), BS_ERR_INVALID);
  bs_err_clear();
  bs_status st = bs_dev_create("cuda", 0, &d);
  if (st == BS_OK) {
    assert_string_equal(bs_dev_name(d), "cuda");
    assert_true(bs_dev_page(d) > 0);
    bs_dev_destroy(d);
  } else {
    assert_int_equal(st, BS_ERR_UNSUPPORTED);
    assert_null(d);
    assert_non_null(strstr(bs_err()->message, "CUDA"));
  }
  bs_err_clear();
  assert_int_equal(bs_dev_create("host", 0, &d), BS_OK);
  assert_string_equal(bs_dev_name(d), "host");
  bs_dev_destroy(d);
  bs_dev_destroy(NULL);
}

/* Freeing a PAUSED allocation: the fixed memory saver releases nothing
 * more; the free-paused-double-release mutant releases the handle pause
 * released, the driver refuses it, and the memory saver records what the
 * library's CURESULT_CHECK would exit on. */
static void free_paused(bool mutant) {
  bs_memsaver *ms = NULL;
  void *p = NULL;
  bs_error e;
  bs_mutant_set(BS_MUT_FREE_PAUSED_DOUBLE_RELEASE, mutant);
  assert_int_equal(bs_memsaver_create(gpu, 1, &ms), BS_OK);
  assert_int_equal(
      bs_memsaver_alloc(ms, BS_TAG_DEFAULT, false, bs_dev_page(gpu), &p),
      BS_OK);
  assert_int_equal(bs_memsaver_pause(ms, NULL), BS_OK);
  bs_memsaver_free(ms, p);
  assert_int_equal(bs_memsaver_fatal(ms, &e), mutant);
  if (mutant) {
    assert_int_equal(e.code, BS_ERR_FATAL);
    assert_non_null(strstr(e.message, "released already"));
    print_message("double release: %s\n", e.message);
  }
  bs_memsaver_destroy(ms);
  bs_mutant_reset();
  bs_err_clear();
}

static void test_free_paused_double_release(void **state) {
  (void)state;
  NEED_GPU();
  free_paused(false);
  free_paused(true);
}

/* A device destroyed while it still holds address ranges (a rank unwound
 * by a paused read leaves its regions) gives them back: reserving far more
 * address space than a GPU has, a range at a time, across devices that
 * never release theirs, must keep working. */
static void test_destroy_gives_back_reservations(void **state) {
  (void)state;
  NEED_GPU();
  const size_t big = (size_t)8 << 40; /* 8 TiB of addresses, no memory */
  for (int i = 0; i < 200; i++) {
    bs_dev *d = NULL;
    void *va = NULL;
    assert_int_equal(bs_dev_create("cuda", 0, &d), BS_OK);
    if (bs_dev_va_reserve(d, big, &va) != BS_OK)
      fail_msg("reservation %d of 8 TiB failed: %s", i, bs_err()->message);
    assert_int_equal(bs_dev_phys_map(d, va, bs_dev_page(d)), BS_OK);
    bs_dev_destroy(d);
  }
}

/* A kernel that writes to an address no allocation holds ends the
 * context for good (a sticky error): bs_dev_cuda_settled, which a rank
 * worker asks before it is kept for the next run, says so. Settled
 * before it. The last test: nothing on this GPU works after it. */
static void test_sticky_error_is_unsettled(void **state) {
  (void)state;
  NEED_GPU();
  assert_int_equal(bs_dev_cuda_settled(), BS_OK);
  dbuf src = dalloc(4096);
  assert_int_equal(bs_dev_sm_copy(gpu, (void *)(uintptr_t)4096, src.va, 4096),
                   BS_OK);
  assert_int_not_equal(bs_dev_sync(gpu), BS_OK);
  bs_err_clear();
  assert_int_equal(bs_dev_cuda_settled(), BS_ERR_FATAL);
  assert_non_null(strstr(bs_err()->message, "CUDA context unusable"));
  bs_err_clear();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_select),
      cmocka_unit_test(test_cast_matches_host),
      cmocka_unit_test(test_adam_matches_host),
      cmocka_unit_test(test_grad_matches_host),
      cmocka_unit_test(test_poison_bitflip_first_diff),
      cmocka_unit_test(test_poison_from),
      cmocka_unit_test(test_sm_copy_matches_memcpy),
      cmocka_unit_test(test_region_round_trip),
      cmocka_unit_test(test_destroy_gives_back_reservations),
      cmocka_unit_test(test_free_paused_double_release),
      cmocka_unit_test(test_sticky_error_is_unsettled),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
