#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef FIU_ENABLE
#include <fiu-control.h>
#include <fiu.h>
#endif

#include "bs_fork.h"
#include "bs_mutant.h"
#include "bs_test_faults.h"
#include "bs_test_rss.h"
#include "memsaver/bs_memsaver.h"
#include "memsaver/bs_memsaver_testing.h"

typedef struct fixture {
  bs_dev *dev;
  bs_memsaver *ms;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  bs_err_set_rank(-1);
  bs_err_clear();
  bs_err_set_phase("init");
  if (!f || bs_dev_host_create(&f->dev) != BS_OK ||
      bs_memsaver_create(f->dev, 1234, &f->ms) != BS_OK)
    return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  bs_memsaver_destroy(f->ms);
  bs_dev_destroy(f->dev);
  free(f);
  return 0;
}

static void *alloc_filled(bs_memsaver *ms, const char *tag, bool backup,
                          size_t n, unsigned char seed) {
  unsigned char *p = NULL;
  assert_int_equal(bs_memsaver_alloc(ms, tag, backup, n, (void **)&p), BS_OK);
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(seed + i * 13);
  return p;
}

static void assert_filled(const unsigned char *p, size_t n,
                          unsigned char seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(seed + i * 13))
      fail_msg("byte %zu is %u", i, p[i]);
}

static void test_alloc_and_queries(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev);
  char *a = alloc_filled(f->ms, BS_TAG_DEFAULT, true, 1, 1);
  char *b = alloc_filled(f->ms, BS_TAG_PARAM, false, pg + 1, 2);
  assert_int_equal((uintptr_t)a % pg, 0);
  assert_true(
      bs_memsaver_contains(f->ms, a + pg - 1)); /* rounded to the page */
  assert_true(bs_memsaver_contains(f->ms, b + 2 * pg - 1));
  assert_false(bs_memsaver_contains(f->ms, &pg));
  assert_string_equal(bs_memsaver_tag_of(f->ms, b + 5), BS_TAG_PARAM);
  assert_null(bs_memsaver_tag_of(f->ms, &pg));
  assert_true(bs_memsaver_has_backup(f->ms, a));
  assert_false(bs_memsaver_has_backup(f->ms, b));
  assert_int_equal(bs_memsaver_state_of(f->ms, a), BS_ACTIVE);
  assert_int_equal(bs_memsaver_resident_bytes(f->ms), 3 * pg);
  bs_memsaver_free(f->ms, b + 1); /* not an allocation's start: ignored */
  assert_true(bs_memsaver_contains(f->ms, b));
  bs_memsaver_free(f->ms, b);
  assert_false(bs_memsaver_contains(f->ms, b));
  assert_int_equal(bs_memsaver_resident_bytes(f->ms), pg);
  assert_int_equal(bs_memsaver_resident_peak(f->ms), 3 * pg);
}

static void test_alloc_bad_args(void **state) {
  fixture *f = *state;
  void *p = NULL;
  char long_tag[BS_TAG_MAX + 1];
  memset(long_tag, 'x', BS_TAG_MAX);
  long_tag[BS_TAG_MAX] = '\0';
  assert_int_equal(bs_memsaver_alloc(f->ms, NULL, true, 8, &p), BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_alloc(f->ms, "", true, 8, &p), BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_alloc(f->ms, long_tag, true, 8, &p),
                   BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_alloc(f->ms, "t", true, 0, &p), BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_alloc(f->ms, "t", true, SIZE_MAX, &p),
                   BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_alloc(f->ms, "t", true, 8, NULL),
                   BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_alloc(NULL, "t", true, 8, &p), BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_create(NULL, 1, &f->ms), BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_pause(NULL, NULL), BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_resume(NULL, NULL), BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_resident_bytes(f->ms), 0);
  bs_memsaver_free(f->ms, NULL);
  bs_memsaver_free(NULL, &p);
}

static void test_pause_resume_one_tag(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev);
  unsigned char *d = alloc_filled(f->ms, BS_TAG_DEFAULT, true, pg, 1);
  unsigned char *g = alloc_filled(f->ms, BS_TAG_GRAD, false, pg, 2);
  assert_int_equal(bs_memsaver_pause(f->ms, BS_TAG_GRAD), BS_OK);
  assert_int_equal(bs_memsaver_state_of(f->ms, g), BS_PAUSED);
  assert_int_equal(bs_memsaver_state_of(f->ms, d), BS_ACTIVE);
  assert_true(bs_memsaver_all_in_state(f->ms, BS_TAG_GRAD, BS_PAUSED));
  assert_false(bs_memsaver_all_in_state(f->ms, NULL, BS_PAUSED));
  assert_true(
      bs_memsaver_all_in_state(f->ms, BS_TAG_PARAM, BS_PAUSED)); /* none */
  assert_int_equal(bs_memsaver_resident_bytes(f->ms), pg);
  assert_filled(d, pg, 1); /* the other tag is untouched and readable */
  assert_int_equal(bs_memsaver_resume(f->ms, BS_TAG_GRAD), BS_OK);
  assert_true(bs_memsaver_all_in_state(f->ms, NULL, BS_ACTIVE));
  assert_int_equal(bs_memsaver_resident_bytes(f->ms), 2 * pg);
}

static void test_pause_resume_all(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev);
  unsigned char *d = alloc_filled(f->ms, BS_TAG_DEFAULT, true, 3 * pg, 7);
  unsigned char *p = alloc_filled(f->ms, BS_TAG_PARAM, true, pg, 9);
  alloc_filled(f->ms, BS_TAG_GRAD, false, pg, 11);
  assert_int_equal(bs_memsaver_pause(f->ms, NULL), BS_OK);
  assert_true(bs_memsaver_all_in_state(f->ms, NULL, BS_PAUSED));
  assert_int_equal(bs_memsaver_resident_bytes(f->ms), 0);
  assert_int_equal(bs_memsaver_resident_peak(f->ms), 5 * pg);
  assert_int_equal(bs_memsaver_resume(f->ms, NULL), BS_OK);
  assert_true(bs_memsaver_all_in_state(f->ms, NULL, BS_ACTIVE));
  assert_filled(d, 3 * pg, 7); /* restored bytes with backup */
  assert_filled(p, pg, 9);
  assert_int_equal(bs_memsaver_resident_bytes(f->ms), 5 * pg);
}

/* The library's words and tag; the memory saver keeps its first fatal
 * error (the process would have ended there). */
static void assert_fatal(bs_memsaver *ms, const char *msg, const char *tag,
                         const char *first) {
  char want[256];
  bs_error kept;
  snprintf(want, sizeof want, "[torch_memory_saver.cpp] %s tag=%s", msg, tag);
  assert_int_equal(bs_err()->code, BS_ERR_FATAL);
  assert_string_equal(bs_err()->message, want);
  assert_string_equal(bs_err()->tensor, tag);
  assert_true(bs_memsaver_fatal(ms, &kept));
  assert_non_null(strstr(kept.message, first));
  bs_err_clear();
}

static void test_fatal_preconditions(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev);
  unsigned char *d = alloc_filled(f->ms, BS_TAG_DEFAULT, true, pg, 3);
  unsigned char *p = alloc_filled(f->ms, BS_TAG_PARAM, true, pg, 4);
  const char *first = "Cannot resume allocation that is not paused.";
  assert_false(bs_memsaver_fatal(f->ms, NULL));
  assert_int_equal(bs_memsaver_resume(f->ms, BS_TAG_PARAM), BS_ERR_FATAL);
  assert_fatal(f->ms, first, BS_TAG_PARAM, first);
  assert_int_equal(bs_memsaver_pause(f->ms, BS_TAG_PARAM), BS_OK);
  /* Double pause; pause(all) with one paused: nothing changes. */
  assert_int_equal(bs_memsaver_pause(f->ms, BS_TAG_PARAM), BS_ERR_FATAL);
  assert_fatal(f->ms, "Cannot pause allocation that is not active.",
               BS_TAG_PARAM, first);
  assert_int_equal(bs_memsaver_pause(f->ms, NULL), BS_ERR_FATAL);
  assert_fatal(f->ms, "Cannot pause allocation that is not active.",
               BS_TAG_PARAM, first);
  assert_int_equal(bs_memsaver_state_of(f->ms, d), BS_ACTIVE);
  assert_int_equal(bs_memsaver_resident_bytes(f->ms), pg);
  assert_int_equal(bs_dev_pinned(f->dev, BS_PIN_MEMSAVER), pg);
  assert_filled(d, pg, 3);
  /* resume(all) with one active: the paused one stays paused. */
  assert_int_equal(bs_memsaver_resume(f->ms, NULL), BS_ERR_FATAL);
  assert_fatal(f->ms, first, BS_TAG_DEFAULT, first);
  assert_int_equal(bs_memsaver_state_of(f->ms, p), BS_PAUSED);
  assert_int_equal(bs_memsaver_resume(f->ms, BS_TAG_PARAM), BS_OK);
  assert_int_equal(bs_memsaver_resume(f->ms, BS_TAG_PARAM), BS_ERR_FATAL);
  assert_fatal(f->ms, first, BS_TAG_PARAM, first);
  assert_filled(p, pg, 4);
}

static bool all_zero(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i])
      return false;
  return true;
}

/* Pause and resume a fresh no-backup allocation; its bytes into out. */
static void poisoned_once(uint64_t seed, size_t n, unsigned char *out) {
  bs_dev *dev = NULL;
  bs_memsaver *ms = NULL;
  assert_int_equal(bs_dev_host_create(&dev), BS_OK);
  assert_int_equal(bs_memsaver_create(dev, seed, &ms), BS_OK);
  unsigned char *p = alloc_filled(ms, BS_TAG_PARAM, false, n, 5);
  assert_int_equal(bs_memsaver_pause(ms, NULL), BS_OK);
  assert_int_equal(bs_memsaver_resume(ms, NULL), BS_OK);
  memcpy(out, p, n);
  bs_memsaver_destroy(ms);
  bs_dev_destroy(dev);
}

static void test_poison_after_resume_without_backup(void **state) {
  fixture *f = *state;
  size_t n = bs_dev_page(f->dev);
  unsigned char *old = malloc(n), *first = malloc(n), *again = malloc(n),
                *other = malloc(n);
  unsigned char *p = alloc_filled(f->ms, BS_TAG_GRAD, false, n, 5);
  memcpy(old, p, n);
  assert_int_equal(bs_memsaver_pause(f->ms, BS_TAG_GRAD), BS_OK);
  assert_int_equal(bs_memsaver_resume(f->ms, BS_TAG_GRAD), BS_OK);
  assert_true(memcmp(p, old, n) != 0);
  assert_false(all_zero(p, n));
  memcpy(first, p, n);
  /* Each resume leaves different garbage... */
  assert_int_equal(bs_memsaver_pause(f->ms, BS_TAG_GRAD), BS_OK);
  assert_int_equal(bs_memsaver_resume(f->ms, BS_TAG_GRAD), BS_OK);
  assert_true(memcmp(p, first, n) != 0);
  /* ...the same for the same seed, another for another seed. */
  poisoned_once(1234, n, again);
  assert_memory_equal(again, first, n);
  poisoned_once(99, n, other);
  assert_true(memcmp(other, first, n) != 0);
  free(old);
  free(first);
  free(again);
  free(other);
}

/* Padding comes back zero and unbacked; elsewhere the bytes a whole fill
 * leaves, so a read of an element before its restore still sees them. */
static void test_padding_after_resume_without_backup(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev), n = 16 * pg;
  unsigned char *whole = malloc(n);
  unsigned char *p = alloc_filled(f->ms, BS_TAG_GRAD, false, n, 5);
  assert_non_null(whole);
  memset(whole, 0, n);
  assert_int_equal(bs_memsaver_set_padding(f->ms, p + 1000, 500), BS_OK);
  assert_int_equal(bs_memsaver_set_padding(f->ms, p + 2 * pg, 14 * pg), BS_OK);
  assert_int_equal(bs_memsaver_pause(f->ms, BS_TAG_GRAD), BS_OK);
  long before = bs_test_rss_pages();
  assert_int_equal(bs_memsaver_resume(f->ms, BS_TAG_GRAD), BS_OK);
  bs_test_rss_grew(before, 2); /* the two poisoned */
  poisoned_once(1234, n, whole);
  assert_memory_equal(p, whole, 1000);
  assert_true(all_zero(p + 1000, 500));
  assert_memory_equal(p + 1500, whole + 1500, 2 * pg - 1500);
  assert_true(all_zero(p + 2 * pg, 14 * pg));
  /* Overlapping, past the allocation or outside any; out of order is
   * fine. */
  assert_int_equal(bs_memsaver_set_padding(f->ms, p + 990, 20), BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_set_padding(f->ms, p + 1499, 2), BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_set_padding(f->ms, p + 10, 4), BS_OK);
  assert_int_equal(bs_memsaver_set_padding(f->ms, p + 16 * pg - 1, 2),
                   BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_set_padding(f->ms, whole, 1), BS_ERR_INVALID);
  free(whole);
}

/* A scratch allocation (the grad buffer) comes back as fresh memory
 * after a resume without backup: zero and unbacked on the host device,
 * not poisoned; a segment's block cannot be one. */
static void test_scratch_after_resume_without_backup(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev), n = 8 * pg;
  unsigned char *p = alloc_filled(f->ms, BS_TAG_GRAD, false, n, 5);
  void *small = NULL;
  assert_int_equal(bs_memsaver_set_scratch(f->ms, p), BS_OK);
  assert_int_equal(bs_memsaver_set_padding(f->ms, p + 4 * pg, 4 * pg), BS_OK);
  assert_int_equal(bs_memsaver_pause(f->ms, BS_TAG_GRAD), BS_OK);
  long before = bs_test_rss_pages();
  assert_int_equal(bs_memsaver_resume(f->ms, BS_TAG_GRAD), BS_OK);
  bs_test_rss_grew(before, 0);
  assert_true(all_zero(p, n));
  assert_int_equal(bs_memsaver_set_scratch(f->ms, p + 1), BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_alloc(f->ms, BS_TAG_GRAD, false, 64, &small),
                   BS_OK);
  assert_int_equal(bs_memsaver_set_scratch(f->ms, small), BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_set_scratch(f->ms, &n), BS_ERR_INVALID);
}

/* Up to half a page, allocations of one tag and cpu backup share a page
 * in blocks of 512 bytes, first fit; the page goes with the last. */
static void test_small_allocations_share_a_page(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev);
  char *a = alloc_filled(f->ms, BS_TAG_DEFAULT, true, 4, 1);
  char *b = alloc_filled(f->ms, BS_TAG_DEFAULT, true, 513, 2);
  char *c = alloc_filled(f->ms, BS_TAG_DEFAULT, true, 16, 3);
  assert_int_equal((uintptr_t)a % pg, 0);
  assert_ptr_equal(b, a + 512);
  assert_ptr_equal(c, a + 1536);
  assert_int_equal(bs_memsaver_resident_bytes(f->ms), pg);
  /* Another tag, another backup, or more than half a page: a page apart. */
  char *d = alloc_filled(f->ms, BS_TAG_GRAD, true, 4, 4);
  char *e = alloc_filled(f->ms, BS_TAG_DEFAULT, false, 4, 5);
  char *g = alloc_filled(f->ms, BS_TAG_DEFAULT, true, pg / 2 + 1, 6);
  assert_true(d - a >= (ptrdiff_t)pg || a - d >= (ptrdiff_t)pg);
  assert_true(e - a >= (ptrdiff_t)pg || a - e >= (ptrdiff_t)pg);
  assert_true(g - a >= (ptrdiff_t)pg || a - g >= (ptrdiff_t)pg);
  assert_int_equal(bs_memsaver_resident_bytes(f->ms), 4 * pg);
  bs_memsaver_free(f->ms, b + 1); /* not an allocation's start: ignored */
  bs_memsaver_free(f->ms, b);
  assert_ptr_equal(alloc_filled(f->ms, BS_TAG_DEFAULT, true, 300, 7), b);
  bs_memsaver_free(f->ms, b);
  bs_memsaver_free(f->ms, a);
  assert_true(bs_memsaver_contains(f->ms, a)); /* c still holds the page */
  assert_filled((unsigned char *)c, 16, 3);
  bs_memsaver_free(f->ms, c);
  assert_false(bs_memsaver_contains(f->ms, a));
  assert_int_equal(bs_memsaver_resident_bytes(f->ms), 3 * pg);
}

/* A page pauses and resumes whole: every block's bytes come back from the
 * backup; without one, each block holds the fill at its offset in the
 * page, its padding zero, the page's free bytes untouched. A new
 * allocation while the page is paused gets a page of its own. */
static void test_small_allocations_pause_whole(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev);
  unsigned char *whole = malloc(pg);
  unsigned char *a = alloc_filled(f->ms, BS_TAG_DEFAULT, true, 40, 1);
  unsigned char *b = alloc_filled(f->ms, BS_TAG_DEFAULT, true, 700, 2);
  unsigned char *g = alloc_filled(f->ms, BS_TAG_GRAD, false, 8, 3);
  unsigned char *h = alloc_filled(f->ms, BS_TAG_GRAD, false, 100, 4);
  const void *view = NULL;
  assert_non_null(whole);
  assert_int_equal(bs_memsaver_set_padding(f->ms, h + 50, 50), BS_OK);
  assert_int_equal(bs_memsaver_set_padding(f->ms, h + 100, 412), BS_OK);
  assert_int_equal(bs_memsaver_set_padding(f->ms, h + 500, 20),
                   BS_ERR_INVALID); /* past its block */
  assert_int_equal(bs_memsaver_pause(f->ms, NULL), BS_OK);
  assert_int_equal(bs_memsaver_get_cpu_backup(f->ms, b, 700, true, NULL, &view),
                   BS_OK);
  assert_filled(view, 700, 2);
  unsigned char *n = alloc_filled(f->ms, BS_TAG_DEFAULT, true, 8, 5);
  assert_true(n - a >= (ptrdiff_t)pg || a - n >= (ptrdiff_t)pg);
  assert_int_equal(bs_memsaver_state_of(f->ms, n), BS_ACTIVE);
  bs_memsaver_free(f->ms, n);
  assert_int_equal(bs_memsaver_resume(f->ms, NULL), BS_OK);
  assert_filled(a, 40, 1);
  assert_filled(b, 700, 2);
  poisoned_once(1234, pg, whole);
  assert_memory_equal(g, whole, 512);
  assert_memory_equal(h, whole + 512, 50);
  assert_true(all_zero(h + 50, 462));
  assert_true(all_zero(h + 512, pg - 1024));
  free(whole);
}

static void test_cpu_backup(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev);
  unsigned char *d = alloc_filled(f->ms, BS_TAG_DEFAULT, true, 2 * pg, 21);
  unsigned char *g = alloc_filled(f->ms, BS_TAG_GRAD, false, pg, 22);
  const void *view = NULL;
  unsigned char copy[64], expect[64];
  memcpy(expect, d + pg + 10, sizeof expect);
  assert_int_equal(bs_memsaver_get_cpu_backup(f->ms, d, 8, true, NULL, &view),
                   BS_ERR_MISSING_BACKUP); /* active: none, as the library */
  assert_string_equal(bs_err()->message,
                      "get_cpu_backup: allocation is not paused (no backup)");
  assert_false(bs_memsaver_fatal(f->ms, NULL));
  bs_err_clear();
  assert_int_equal(bs_memsaver_pause(f->ms, NULL), BS_OK);
  assert_int_equal(bs_memsaver_get_cpu_backup(f->ms, d + pg + 10, sizeof copy,
                                              true, NULL, &view),
                   BS_OK);
  assert_memory_equal(view, expect, sizeof expect);
  assert_ptr_not_equal(view, d + pg + 10); /* host memory, not the device */
  assert_int_equal(bs_memsaver_get_cpu_backup(f->ms, d + pg + 10, sizeof copy,
                                              false, copy, NULL),
                   BS_OK);
  assert_memory_equal(copy, expect, sizeof expect);
  assert_false(bs_memsaver_fatal(f->ms, NULL));
  /* Misuse the library ends the process on: paused without a backup, a
   * pointer it does not own, a range past the allocation's end. */
  assert_int_equal(bs_memsaver_get_cpu_backup(f->ms, g, 8, false, copy, NULL),
                   BS_ERR_FATAL);
  assert_non_null(strstr(bs_err()->message,
                         "found paused allocation but cpu_backup does not "
                         "exist, do you forget to enable cpu backup"));
  assert_true(bs_memsaver_fatal(f->ms, NULL));
  bs_err_clear();
  assert_int_equal(
      bs_memsaver_get_cpu_backup(f->ms, copy, 8, false, copy, NULL),
      BS_ERR_FATAL);
  assert_non_null(
      strstr(bs_err()->message, "get_cpu_backup_pointer fail to find backup"));
  bs_err_clear();
  assert_int_equal(
      bs_memsaver_get_cpu_backup(f->ms, d + pg, pg + 1, false, copy, NULL),
      BS_ERR_FATAL); /* runs past the end */
  bs_err_clear();
  assert_int_equal(bs_memsaver_get_cpu_backup(f->ms, d, 8, true, NULL, NULL),
                   BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_get_cpu_backup(NULL, d, 8, true, NULL, &view),
                   BS_ERR_INVALID);
  assert_int_equal(bs_memsaver_resume(f->ms, NULL), BS_OK);
}

static void test_resident_and_pinned_accounting(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev);
  alloc_filled(f->ms, BS_TAG_DEFAULT, true, 2 * pg, 1);
  alloc_filled(f->ms, BS_TAG_PARAM, false, 3 * pg, 1);
  assert_int_equal(bs_memsaver_resident_bytes(f->ms), 5 * pg);
  assert_int_equal(bs_dev_pinned(f->dev, BS_PIN_MEMSAVER), 0);
  assert_int_equal(bs_memsaver_pause(f->ms, NULL), BS_OK);
  /* Only the backed allocation holds pinned memory, only while paused. */
  assert_int_equal(bs_dev_pinned(f->dev, BS_PIN_MEMSAVER), 2 * pg);
  assert_int_equal(bs_dev_pinned(f->dev, BS_PIN_BACKUPER), 0);
  assert_int_equal(bs_memsaver_resident_bytes(f->ms), 0);
  bs_memsaver_reset_peak(f->ms);
  assert_int_equal(bs_memsaver_resident_peak(f->ms), 0);
  assert_int_equal(bs_memsaver_resume(f->ms, BS_TAG_PARAM), BS_OK);
  assert_int_equal(bs_memsaver_resident_peak(f->ms), 3 * pg);
  assert_int_equal(bs_memsaver_resume(f->ms, BS_TAG_DEFAULT), BS_OK);
  assert_int_equal(bs_dev_pinned(f->dev, BS_PIN_MEMSAVER), 0);
  assert_int_equal(bs_dev_pinned_peak(f->dev, BS_PIN_MEMSAVER), 2 * pg);
  assert_int_equal(bs_memsaver_resident_peak(f->ms), 5 * pg);
}

static bool mapped(const void *p, size_t n) {
  unsigned char vec[4];
  return mincore((void *)p, n, vec) == 0;
}

static void test_free_and_destroy_release(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev);
  bs_memsaver *ms = NULL;
  assert_int_equal(bs_memsaver_create(f->dev, 7, &ms), BS_OK);
  void *a = alloc_filled(ms, BS_TAG_DEFAULT, true, pg, 1);
  void *b = alloc_filled(ms, BS_TAG_PARAM, true, pg, 1);
  assert_int_equal(bs_memsaver_pause(ms, NULL), BS_OK);
  assert_int_equal(bs_dev_pinned(f->dev, BS_PIN_MEMSAVER), 2 * pg);
  bs_memsaver_free(ms, a); /* a paused allocation: its backup goes too */
  assert_int_equal(bs_dev_pinned(f->dev, BS_PIN_MEMSAVER), pg);
  assert_false(mapped(a, pg));
  assert_true(mapped(b, pg)); /* reserved, even though paused */
  bs_memsaver_destroy(ms);
  assert_int_equal(bs_dev_pinned(f->dev, BS_PIN_MEMSAVER), 0);
  assert_false(mapped(b, pg));
  bs_memsaver_destroy(NULL);
}

/* Freeing a PAUSED allocation releases nothing more; the mutant
 * free-paused-double-release releases its physical memory again, which
 * the device refuses and the memory saver records as fatal. */
static void test_free_paused_double_release(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev);
  bs_error e;
  for (int mutant = 0; mutant < 2; mutant++) {
    bs_memsaver *ms = NULL;
    bs_mutant_set(BS_MUT_FREE_PAUSED_DOUBLE_RELEASE, mutant);
    assert_int_equal(bs_memsaver_create(f->dev, 7, &ms), BS_OK);
    void *a = alloc_filled(ms, BS_TAG_PARAM, false, pg, 1);
    void *b = alloc_filled(ms, BS_TAG_DEFAULT, true, pg, 1);
    assert_int_equal(bs_memsaver_pause(ms, BS_TAG_PARAM), BS_OK);
    bs_memsaver_free(ms, b); /* active: released once, either way */
    assert_false(bs_memsaver_fatal(ms, NULL));
    bs_memsaver_free(ms, a);
    assert_int_equal(bs_memsaver_fatal(ms, &e), mutant);
    if (mutant) {
      assert_int_equal(e.code, BS_ERR_FATAL);
      assert_non_null(strstr(e.message, "func=free"));
      assert_non_null(strstr(e.message, "released already"));
    }
    bs_memsaver_destroy(ms);
    bs_mutant_reset();
    bs_err_clear();
  }
}

#ifdef FIU_ENABLE
static void test_resume_fault(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev);
  unsigned char *d = alloc_filled(f->ms, BS_TAG_DEFAULT, true, pg, 31);
  const void *view = NULL;
  assert_int_equal(bs_memsaver_pause(f->ms, NULL), BS_OK);
  bs_err_set_rank(0); /* faults fire in a rank's work only */
  fiu_init(0);
  assert_int_equal(fiu_enable("region/resume", 1, NULL, 0), 0);
  assert_int_equal(bs_memsaver_resume(f->ms, NULL), BS_ERR_FATAL);
  fiu_disable("region/resume");
  assert_non_null(strstr(bs_err()->message, "(out of memory) func=resume"));
  assert_string_equal(bs_err()->tensor, BS_TAG_DEFAULT);
  assert_true(bs_memsaver_fatal(f->ms, NULL));
  bs_err_clear();
  assert_int_equal(bs_memsaver_state_of(f->ms, d), BS_PAUSED);
  assert_int_equal(bs_memsaver_resident_bytes(f->ms), 0);
  assert_int_equal(bs_memsaver_get_cpu_backup(f->ms, d, pg, true, NULL, &view),
                   BS_OK);
  assert_int_equal(bs_memsaver_resume(f->ms, NULL), BS_OK);
  assert_filled(d, pg, 31);
}
#else
BS_TEST_SKIP_WITHOUT_FAULTS(test_resume_fault)
#endif

/* ---- paused-read detection ---- */

typedef struct probe {
  const volatile unsigned char *p;
  size_t off;
  int reached; /* set only when the read did not fault */
} probe;

static bs_status touch(void *arg) {
  probe *pr = arg;
  pr->reached = pr->p[pr->off] + 1;
  return BS_OK;
}

static bool find_read(int rank, bs_paused_read *out) {
  for (size_t i = 0; i < bs_trap_count(); i++)
    if (bs_trap_get(i, out) && out->rank == rank)
      return true;
  return false;
}

static void test_paused_read_is_caught(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev);
  unsigned char *p = alloc_filled(f->ms, BS_TAG_PARAM, false, 2 * pg, 3);
  probe pr = {.p = p, .off = pg + 77};
  bs_paused_read r;
  char want[128];
  bs_trap_reset();
  bs_err_set_rank(5);
  assert_int_equal(bs_trap_run(touch, &pr), BS_OK); /* active: a read */
  assert_int_not_equal(pr.reached, 0);
  assert_int_equal(bs_memsaver_pause(f->ms, BS_TAG_PARAM), BS_OK);
  pr.reached = 0;
  bs_err_set_phase("update_weights");
  assert_int_equal(bs_trap_run(touch, &pr), BS_ERR_PAUSED_READ);
  assert_int_equal(pr.reached, 0);
  snprintf(want, sizeof want,
           "read of paused allocation param_buffer at offset %zu in phase "
           "update_weights",
           pg + 77);
  assert_string_equal(bs_err()->message, want);
  assert_int_equal(bs_err()->rank, 5);
  assert_int_equal(bs_trap_count(), 1);
  assert_true(bs_trap_get(0, &r));
  assert_false(bs_trap_get(1, &r));
  assert_string_equal(r.tag, BS_TAG_PARAM);
  assert_int_equal(r.offset, pg + 77);
  assert_string_equal(r.phase, "update_weights");
  assert_int_equal(r.rank, 5);
  bs_trap_reset();
  assert_int_equal(bs_trap_count(), 0);
  assert_int_equal(bs_trap_run(NULL, NULL), BS_ERR_INVALID);
}

/* Writes fault the same way. */
static bs_status scribble(void *arg) {
  probe *pr = arg;
  ((volatile unsigned char *)pr->p)[pr->off] = 1;
  pr->reached = 1;
  return BS_OK;
}

typedef struct nest {
  probe inner, outer;
  bs_status inner_st, clean_st;
} nest;

static bs_status no_fault(void *arg) {
  (void)arg;
  return BS_OK;
}

/* An inner guard catches its own fault; after it returns, a fault goes to
 * the outer guard. */
static bs_status nested(void *arg) {
  nest *n = arg;
  n->inner_st = bs_trap_run(scribble, &n->inner);
  n->clean_st = bs_trap_run(no_fault, NULL);
  bs_err_clear();
  bs_err_set_phase("outer");
  return touch(&n->outer);
}

static void test_nested_guards(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev);
  unsigned char *p = alloc_filled(f->ms, BS_TAG_GRAD, false, pg, 3);
  nest n = {.inner = {.p = p, .off = 11}, .outer = {.p = p, .off = 22}};
  bs_paused_read r;
  bs_trap_reset();
  assert_int_equal(bs_memsaver_pause(f->ms, NULL), BS_OK);
  assert_int_equal(bs_trap_run(nested, &n), BS_ERR_PAUSED_READ);
  assert_int_equal(n.inner_st, BS_ERR_PAUSED_READ);
  assert_int_equal(n.clean_st, BS_OK);
  assert_int_equal(n.inner.reached + n.outer.reached, 0);
  assert_string_equal(bs_err()->message, "read of paused allocation "
                                         "grad_buffer at offset 22 in phase "
                                         "outer");
  assert_int_equal(bs_trap_count(), 2);
  assert_true(bs_trap_get(0, &r));
  assert_int_equal(r.offset, 11);
  assert_true(bs_trap_get(1, &r));
  assert_int_equal(r.offset, 22);
  assert_int_equal(bs_memsaver_resume(f->ms, NULL), BS_OK);
  /* Guards are unwound: a read of resumed memory is fine again. */
  assert_int_equal(bs_trap_run(touch, &n.outer), BS_OK);
  assert_int_not_equal(n.outer.reached, 0);
}

#define NRANKS 4

typedef struct rank_run {
  int rank;
  pthread_barrier_t *go;
  bs_status st, setup_st;
  char message[256];
  int err_rank;
} rank_run;

/* One rank: its own device and memory saver, a paused read of its own. */
static void *rank_main(void *arg) {
  rank_run *rr = arg;
  bs_dev *dev = NULL;
  bs_memsaver *ms = NULL;
  probe pr = {.off = 100 * (size_t)rr->rank + 5};
  void *p = NULL;
  bs_err_set_rank(rr->rank);
  bs_err_clear();
  bs_err_set_phase(rr->rank % 2 ? "sleep" : "update_weights");
  rr->setup_st = bs_dev_host_create(&dev);
  if (rr->setup_st == BS_OK)
    rr->setup_st = bs_memsaver_create(dev, (uint64_t)rr->rank, &ms);
  if (rr->setup_st == BS_OK)
    rr->setup_st = bs_memsaver_alloc(ms, BS_TAG_PARAM, false, 4096, &p);
  if (rr->setup_st == BS_OK)
    rr->setup_st = bs_memsaver_pause(ms, NULL);
  pr.p = p;
  pthread_barrier_wait(rr->go);
  rr->st = rr->setup_st == BS_OK ? bs_trap_run(touch, &pr) : rr->setup_st;
  snprintf(rr->message, sizeof rr->message, "%s", bs_err()->message);
  rr->err_rank = bs_err()->rank;
  bs_memsaver_destroy(ms);
  if (dev)
    bs_dev_destroy(dev);
  return NULL;
}

static void test_paused_reads_from_threads(void **state) {
  (void)state;
  pthread_t th[NRANKS];
  rank_run rr[NRANKS];
  pthread_barrier_t go;
  bs_paused_read r;
  char want[128];
  bs_trap_reset();
  pthread_barrier_init(&go, NULL, NRANKS);
  for (int i = 0; i < NRANKS; i++) {
    rr[i] = (rank_run){.rank = i, .go = &go};
    assert_int_equal(pthread_create(&th[i], NULL, rank_main, &rr[i]), 0);
  }
  for (int i = 0; i < NRANKS; i++)
    pthread_join(th[i], NULL);
  pthread_barrier_destroy(&go);
  assert_int_equal(bs_trap_count(), NRANKS);
  for (int i = 0; i < NRANKS; i++) {
    const char *phase = i % 2 ? "sleep" : "update_weights";
    assert_int_equal(rr[i].setup_st, BS_OK);
    assert_int_equal(rr[i].st, BS_ERR_PAUSED_READ);
    assert_int_equal(rr[i].err_rank, i);
    snprintf(want, sizeof want,
             "read of paused allocation param_buffer at offset %d in phase %s",
             100 * i + 5, phase);
    assert_string_equal(rr[i].message, want);
    assert_true(find_read(i, &r));
    assert_int_equal(r.offset, 100 * i + 5);
    assert_string_equal(r.phase, phase);
    assert_string_equal(r.tag, BS_TAG_PARAM);
  }
}

/* Runs fn in a child and returns the signal that killed it (0: none). */
static int crash_signal(bs_status (*fn)(void *), void *arg, bool guarded) {
  int ws = 0;
  pid_t pid = fork();
  if (pid == 0) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(SIGSEGV, SIG_DFL); /* not CMocka's: it would carry on testing */
    signal(SIGBUS, SIG_DFL);
    if (guarded)
      bs_trap_run(fn, arg);
    else
      fn(arg);
    bs_fork_exit(0);
  }
  assert_true(pid > 0);
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  return WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
}

/* Not every fault is a paused read: the others still crash, guarded or
 * not, and so does a paused read with no guard to unwind to. */
static void test_other_faults_crash(void **state) {
  fixture *f = *state;
  size_t pg = bs_dev_page(f->dev);
  void *none = mmap(NULL, pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  unsigned char *p = alloc_filled(f->ms, BS_TAG_PARAM, false, pg, 3);
  probe stray = {.p = none, .off = 8}, paused = {.p = p, .off = 8};
  assert_ptr_not_equal(none, MAP_FAILED);
  assert_int_equal(crash_signal(touch, &stray, true), SIGSEGV);
  assert_int_equal(crash_signal(touch, &paused, false), 0); /* active */
  assert_int_equal(bs_memsaver_pause(f->ms, NULL), BS_OK);
  assert_int_equal(crash_signal(touch, &paused, false), SIGSEGV);
  assert_int_equal(crash_signal(touch, &paused, true), 0); /* caught */
  munmap(none, pg);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(test_alloc_and_queries),
      T(test_alloc_bad_args),
      T(test_pause_resume_one_tag),
      T(test_pause_resume_all),
      T(test_fatal_preconditions),
      T(test_poison_after_resume_without_backup),
      T(test_scratch_after_resume_without_backup),
      T(test_padding_after_resume_without_backup),
      T(test_small_allocations_share_a_page),
      T(test_small_allocations_pause_whole),
      T(test_cpu_backup),
      T(test_resident_and_pinned_accounting),
      T(test_free_and_destroy_release),
      T(test_free_paused_double_release),
      T(test_resume_fault),
      T(test_paused_read_is_caught),
      T(test_nested_guards),
      T(test_paused_reads_from_threads),
      T(test_other_faults_crash),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
