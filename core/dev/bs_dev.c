/* The accounted wrappers of the device seam: every caller allocates pinned
 * memory and copies through these, so per-owner budgets and the fault points
 * apply the same way on every backend. A bs_dev belongs to one rank thread,
 * so its counters need no lock. */
#include "dev/bs_dev.h"

#include "bs_fault.h"

static const char *const owner_names[BS_PIN_OWNER_COUNT] = {
    [BS_PIN_BACKUPER] = "backuper",
    [BS_PIN_MEMSAVER] = "memsaver",
    [BS_PIN_OTHER] = "other",
};

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
  if (!d || !out || (unsigned)who >= BS_PIN_OWNER_COUNT || n == 0)
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
  if (!d || !p || (unsigned)who >= BS_PIN_OWNER_COUNT)
    return;
  d->ops->pinned_free(d, p, n);
  account_sub(d, who, n);
}

bs_status bs_dev_copy(bs_dev *d, void *dst, const void *src, size_t n,
                      bs_copy_dir dir) {
  bs_status st = BS_OK;
  uint64_t failinfo = 0;
  if (!d || (unsigned)dir > BS_H2H || (n && (!dst || !src)))
    BS_FAIL(BS_ERR_INVALID, NULL, "copy: bad argument (%zu bytes, dir %d)", n,
            (int)dir);
  if (n == 0)
    goto out;
  if (bs_fault_hit(BS_FP_COPY_FAIL, &failinfo))
    BS_FAIL(BS_ERR_COPY, NULL, "copy of %zu bytes failed (fault copy/fail)", n);
  BS_CHECK(d->ops->copy(d, dst, src, n, dir));
out:
  return st;
}

/* Overlap is refused rather than defined: the kernel's threads would race
 * on the shared bytes. The distance test cannot wrap as a + n can. */
static bool overlaps(const void *a, const void *b, size_t n) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return (x > y ? x - y : y - x) < n;
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
  if (!d)
    return bs_err_fail(BS_ERR_INVALID, NULL, "sync: no device");
  return d->ops->sync(d);
}
