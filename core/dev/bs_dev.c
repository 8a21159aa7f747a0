/* The device seam's functions over a backend's table: every caller
 * allocates pinned memory, maps and copies through these, so per-owner
 * budgets and the fault points apply the same way on every backend. A
 * bs_dev belongs to one rank thread, so its counters need no lock. Also
 * the choice of backend by name, and the cuda backend's stand-in for
 * builds without CUDA (so callers need no #ifdef). */
#define BS_DEV_BACKEND
#include "dev/bs_dev_impl.h"

#include <string.h>

#include "bs_fault.h"
#include "dev/bs_dev_testing.h"

static const char *const owner_names[BS_PIN_OWNER_COUNT] = {
    [BS_PIN_BACKUPER] = "backuper",
    [BS_PIN_MEMSAVER] = "memsaver",
    [BS_PIN_OTHER] = "other",
};

bs_status bs_dev_create(const char *kind, int device, bs_dev **out) {
  if (!kind || !out)
    return bs_err_fail(BS_ERR_INVALID, NULL, "device: no kind or no output");
  if (strcmp(kind, "host") == 0)
    return bs_dev_host_create(out);
  if (strcmp(kind, "cuda") == 0)
    return bs_dev_cuda_create(device, out);
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "unknown device kind '%s' (expected host or cuda)", kind);
}

bs_status bs_dev_create_for_rank(const char *kind, int rank, bs_dev **out) {
  int gpus = kind && strcmp(kind, "cuda") == 0 ? bs_dev_cuda_count() : 0;
  return bs_dev_create(kind, gpus > 0 ? rank % gpus : 0, out);
}

void bs_dev_destroy(bs_dev *d) {
  if (d && d->ops && d->ops->destroy)
    d->ops->destroy(d);
}

#ifndef BS_HAVE_CUDA
int bs_dev_cuda_count(void) {
  return 0;
}

bs_status bs_dev_cuda_settled(void) {
  return BS_OK;
}

/* Arguments are checked as the real backend checks them, so a caller sees
 * the same error on every build. */
bs_status bs_dev_cuda_create(int device, bs_dev **out) {
  if (!out || device < 0)
    return bs_err_fail(BS_ERR_INVALID, NULL, "cuda device %d: bad argument",
                       device);
  *out = NULL;
  return bs_err_fail(BS_ERR_UNSUPPORTED, NULL,
                     "no CUDA device %d: built without CUDA", device);
}
#endif

const char *bs_dev_name(const bs_dev *d) {
  return d ? d->ops->name : "none";
}

size_t bs_dev_page(const bs_dev *d) {
  return d ? d->page : 0;
}

bool bs_dev_in_process(const bs_dev *d) {
  return d && strcmp(d->ops->name, "host") == 0;
}

static bool owner_ok(const bs_dev *d, bs_pin_owner who) {
  return d && (unsigned)who < BS_PIN_OWNER_COUNT;
}

size_t bs_dev_pinned(const bs_dev *d, bs_pin_owner who) {
  return owner_ok(d, who) ? d->pinned_cur[who] : 0;
}

size_t bs_dev_pinned_peak(const bs_dev *d, bs_pin_owner who) {
  return owner_ok(d, who) ? d->pinned_peak[who] : 0;
}

size_t bs_dev_pinned_total(const bs_dev *d) {
  return d ? d->pinned_cur_total : 0;
}

size_t bs_dev_pinned_peak_total(const bs_dev *d) {
  return d ? d->pinned_peak_total : 0;
}

static void account_add(bs_dev *d, bs_pin_owner who, size_t n) {
  d->pinned_cur[who] += n;
  d->pinned_cur_total += n;
  if (d->pinned_cur[who] > d->pinned_peak[who])
    d->pinned_peak[who] = d->pinned_cur[who];
  if (d->pinned_cur_total > d->pinned_peak_total)
    d->pinned_peak_total = d->pinned_cur_total;
}

/* Saturating: a mismatched free must not wrap the counters into nonsense. */
static void account_sub(bs_dev *d, bs_pin_owner who, size_t n) {
  size_t own = n < d->pinned_cur[who] ? n : d->pinned_cur[who];
  d->pinned_cur[who] -= own;
  d->pinned_cur_total -= own < d->pinned_cur_total ? own : d->pinned_cur_total;
}

bs_status bs_dev_pinned_alloc(bs_dev *d, bs_pin_owner who, size_t n,
                              void **out) {
  bs_status st = BS_OK;
  uint64_t failinfo = 0;
  if (!owner_ok(d, who) || !out || n == 0)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "pinned alloc: bad argument (dev %p, owner %d, %zu bytes)",
            (void *)d, (int)who, n);
  *out = NULL;
  /* Only backupers: the memory saver's own backups are the system's, not
   * the code under test's, and have their own fault (region/resume). */
  if (who == BS_PIN_BACKUPER && bs_fault_hit(BS_FP_BACKUP_PIN_ALLOC, &failinfo))
    BS_FAIL(BS_ERR_NOMEM, NULL,
            "pinned alloc of %zu bytes for %s failed (fault backup/pin_alloc)",
            n, owner_names[who]);
  BS_CHECK(d->ops->pinned_alloc(d, n, out));
  account_add(d, who, n);
out:
  return st;
}

void bs_dev_pinned_free(bs_dev *d, bs_pin_owner who, void *p, size_t n) {
  if (!owner_ok(d, who) || !p)
    return;
  d->ops->pinned_free(d, p, n);
  account_sub(d, who, n);
}

static bs_status no_dev(const char *what) {
  return bs_err_fail(BS_ERR_INVALID, NULL, "%s: no device", what);
}

bs_status bs_dev_va_reserve(bs_dev *d, size_t n, void **va) {
  if (!va)
    return bs_err_fail(BS_ERR_INVALID, NULL, "va reserve: no output pointer");
  return d ? d->ops->va_reserve(d, n, va) : no_dev("va reserve");
}

void bs_dev_va_release(bs_dev *d, void *va, size_t n) {
  if (d && va)
    d->ops->va_release(d, va, n);
}

bs_status bs_dev_phys_map(bs_dev *d, void *va, size_t n) {
  return d ? d->ops->phys_map(d, va, n) : no_dev("phys map");
}

bs_status bs_dev_phys_unmap(bs_dev *d, void *va, size_t n) {
  return d ? d->ops->phys_unmap(d, va, n) : no_dev("phys unmap");
}

static bs_status copy_args(const bs_dev *d, const void *dst, const void *src,
                           size_t n, bs_copy_dir dir) {
  if (!d || (unsigned)dir > BS_H2H || (n && (!dst || !src)))
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "copy: bad argument (%zu bytes, dir %d)", n, (int)dir);
  return BS_OK;
}

bs_status bs_dev_copy_observe(bs_dev *d, void *dst, const void *src, size_t n,
                              bs_copy_dir dir) {
  bs_status st = copy_args(d, dst, src, n, dir);
  return st == BS_OK && n ? d->ops->copy(d, dst, src, n, dir) : st;
}

bs_status bs_dev_copy(bs_dev *d, void *dst, const void *src, size_t n,
                      bs_copy_dir dir) {
  bs_status st = BS_OK;
  uint64_t failinfo = 0;
  BS_CHECK(copy_args(d, dst, src, n, dir));
  if (n && bs_fault_hit(BS_FP_COPY_FAIL, &failinfo))
    BS_FAIL(BS_ERR_COPY, NULL, "copy of %zu bytes failed (fault copy/fail)", n);
  BS_CHECK(bs_dev_copy_observe(d, dst, src, n, dir));
out:
  return st;
}

/* Overlap is refused rather than defined: the kernel's threads would race
 * on the shared bytes. The distance test cannot wrap as a + n can. */
static bool overlaps(const void *a, const void *b, size_t n) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return (x > y ? x - y : y - x) < n;
}

void bs_dev_discard(bs_dev *d, void *p, size_t n) {
  if (d && p && d->ops->discard)
    d->ops->discard(d, p, n);
}

bs_status bs_dev_sm_copy(bs_dev *d, void *dst, const void *src, size_t n) {
  bs_status st = BS_OK;
  if (!d || (n && (!dst || !src)))
    BS_FAIL(BS_ERR_INVALID, NULL, "sm copy: bad argument (%zu bytes)", n);
  if (n == 0)
    goto out;
  if (overlaps(dst, src, n))
    BS_FAIL(BS_ERR_INVALID, NULL, "sm copy: %zu bytes at %p and %p overlap", n,
            dst, src);
  d->ops->sm_copy(d, dst, src, n);
out:
  return st;
}

bs_status bs_dev_sync(bs_dev *d) {
  return d ? d->ops->sync(d) : no_dev("sync");
}

void bs_dev_cast_f32_bf16(bs_dev *d, uint16_t *dst, const float *src,
                          size_t n) {
  d->ops->cast_f32_bf16(d, dst, src, n);
}

void bs_dev_adam(bs_dev *d, float *p, float *m, float *v, const float *g,
                 size_t n, const bs_adam_hp *hp) {
  d->ops->adam(d, p, m, v, g, n, hp);
}

void bs_dev_grad(bs_dev *d, float *g, const uint16_t *p, size_t n,
                 uint64_t base, uint64_t seed, int rank, int step) {
  d->ops->grad(d, g, p, n, base, seed, rank, step);
}

void bs_dev_bitflip(bs_dev *d, void *buf, size_t nbytes, uint64_t bit) {
  d->ops->bitflip(d, buf, nbytes, bit);
}

void bs_dev_poison(bs_dev *d, void *buf, size_t nbytes, uint64_t seed) {
  d->ops->poison(d, buf, nbytes, seed, 0);
}

void bs_dev_poison_from(bs_dev *d, void *buf, size_t nbytes, uint64_t seed,
                        uint64_t from) {
  d->ops->poison(d, buf, nbytes, seed, from);
}

size_t bs_dev_first_diff(bs_dev *d, const void *a, const void *b, size_t n) {
  return d->ops->first_diff(d, a, b, n);
}
