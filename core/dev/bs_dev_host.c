/* The host device: "device" memory is ordinary process memory. A region is
 * an mmap reservation; unmapping drops its pages and makes the range
 * inaccessible, so any later access faults at once (and bs_trap reports
 * it) instead of silently reading stale bytes the way a real GPU might.
 * Inaccessible is a guard region (madvise MADV_GUARD_INSTALL, Linux 6.13)
 * where the kernel has them: it faults as PROT_NONE does but splits no
 * mapping, where a range made PROT_NONE amid readable ones is a mapping
 * of its own (a MainCast rank's paused param buffer: two of the
 * process's vm.max_map_count). Else PROT_NONE. It
 * keeps the mapped ranges, as the driver keeps its handles, so a second
 * release of the same physical memory is refused as cuMemRelease refuses a
 * released handle. */
#define BS_DEV_BACKEND
#include "dev/bs_dev_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bs_pages.h"
#include "bs_vec.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif

enum { PINNED_ALIGN = 64 };

/* The ranges that have physical memory now (one bs_dev per rank thread:
 * no lock). */
typedef struct host_impl {
  struct range {
    uintptr_t va;
    size_t n;
  } * r;
  size_t count, cap;
  bool guards; /* inaccessible is a guard region, not PROT_NONE */
} host_impl;

static host_impl *impl(bs_dev *d) {
  return d->impl;
}

/* Aligned to a cache line, not to a page as cudaHostAlloc's are: nothing
 * relies on more, and a page each made every small tensor's backup (a
 * 26-byte layer norm) a page of its own plus memalign's leavings: 37 KiB
 * a rank of rank-divergence, 600 MB of a 16,384-rank world. */
static bs_status host_pinned_alloc(bs_dev *d, size_t n, void **out) {
  (void)d;
  void *p = NULL;
  int rc = posix_memalign(&p, PINNED_ALIGN, n);
  if (rc != 0)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "pinned alloc of %zu bytes: %s", n,
                       strerrordesc_np(rc));
  /* Not mlock'ed: RLIMIT_MEMLOCK is tiny on CI machines. Zeroed so that a
   * read before the first write is deterministic. */
  memset(p, 0, n);
  *out = p;
  return BS_OK;
}

/* Freed pinned memory goes back to the system, as cudaFreeHost's does:
 * malloc keeps a freed chunk's pages, and a world's memory-saver copies,
 * all freed as its ranks wake, stayed resident holes in malloc's arenas
 * (0.4 GiB of a 16,384-rank world awake). Only whole pages inside the
 * chunk, clear of the words malloc keeps at its ends (its free-list links
 * at the start, the next chunk's header at the end). */
static void host_pinned_free(bs_dev *d, void *p, size_t n) {
  (void)d;
  if (n > 128)
    bs_pages_drop((char *)p + 64, n - 128);
  free(p);
}

/* The host device's memory is private anonymous: its dead pages go. */
static void host_discard(bs_dev *d, void *p, size_t n) {
  (void)d;
  bs_pages_drop(p, n);
}

/* A reservation readable and writable under guards, PROT_NONE without. */
static void *reserve(host_impl *h, size_t n) {
  int prot = h->guards ? PROT_READ | PROT_WRITE : PROT_NONE;
  void *p =
      mmap(NULL, n, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED || !h->guards || madvise(p, n, MADV_GUARD_INSTALL) == 0)
    return p;
  munmap(p, n); /* before Linux 6.13: PROT_NONE from now on */
  h->guards = false;
  return reserve(h, n);
}

static bs_status host_va_reserve(bs_dev *d, size_t n, void **va) {
  void *p = reserve(impl(d), n);
  if (p == MAP_FAILED)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "reserve of %zu bytes: %s", n,
                       strerrordesc_np(errno));
  *va = p;
  return BS_OK;
}

/* The range made accessible (true) or not; 0 or -1 as the call's. */
static int open_range(const host_impl *h, void *va, size_t n, bool open) {
  if (h->guards)
    return madvise(va, n, open ? MADV_GUARD_REMOVE : MADV_GUARD_INSTALL);
  return mprotect(va, n, open ? PROT_READ | PROT_WRITE : PROT_NONE);
}

/* Whatever is still mapped inside the range goes with it. */
static void host_va_release(bs_dev *d, void *va, size_t n) {
  host_impl *h = impl(d);
  for (size_t i = h->count; i-- > 0;)
    if (h->r[i].va >= (uintptr_t)va && h->r[i].va < (uintptr_t)va + n)
      h->r[i] = h->r[--h->count];
  munmap(va, n);
}

/* The pages dropped by phys_unmap come back zero-filled on first touch:
 * fresh memory, as the seam promises. */
static bs_status host_phys_map(bs_dev *d, void *va, size_t n) {
  host_impl *h = impl(d);
  if (bs_vec_reserve(&h->r, &h->cap, h->count + 1, sizeof *h->r, "map table") !=
      BS_OK)
    return BS_ERR_NOMEM;
  if (open_range(h, va, n, true) != 0)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "map of %zu bytes: %s", n,
                       strerrordesc_np(errno));
  h->r[h->count++] = (struct range){(uintptr_t)va, n};
  return BS_OK;
}

static bs_status host_phys_unmap(bs_dev *d, void *va, size_t n) {
  host_impl *h = impl(d);
  size_t i = 0;
  while (i < h->count && !(h->r[i].va == (uintptr_t)va && h->r[i].n == n))
    i++;
  if (i == h->count)
    return bs_err_fail(BS_ERR_STATE, NULL,
                       "release of %zu bytes at %p: no physical memory is "
                       "mapped there (released already)",
                       n, va);
  /* A guard's install drops the pages under it: no MADV_DONTNEED first
   * (a third of a paused world's madvise calls). */
  if ((!h->guards && madvise(va, n, MADV_DONTNEED) != 0) ||
      open_range(h, va, n, false) != 0)
    return bs_err_fail(BS_ERR_INTERNAL, NULL, "unmap of %zu bytes: %s", n,
                       strerrordesc_np(errno));
  h->r[i] = h->r[--h->count];
  return BS_OK;
}

/* n bytes from p on are all zero. */
static bool all_zero(const char *p, size_t n) {
  return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Writes dst page by page, leaving alone a page that is to hold only
 * zeros and holds them already: zeros copied over an untouched page (a
 * world-padded buffer's padding: the all-gathers carry it) leave it
 * unbacked; reading it maps no memory. Any other page is written without
 * a look: it must hold memory once written, and a look first at an
 * untouched one maps the zero page, which the write then faults away
 * again (two faults a fresh page, not one). */
static void write_changed(bs_dev *d, void *dst, const void *src, size_t n) {
  char *to = dst;
  const char *from = src;
  while (n > 0) {
    size_t c = d->page - (uintptr_t)to % d->page;
    c = c < n ? c : n;
    if (!all_zero(from, c))
      memcpy(to, from, c);
    else if (!all_zero(to, c))
      memset(to, 0, c);
    to += c;
    from += c;
    n -= c;
  }
}

static bs_status host_copy(bs_dev *d, void *dst, const void *src, size_t n,
                           bs_copy_dir dir) {
  (void)dir;
  write_changed(d, dst, src, n);
  return BS_OK;
}

/* Copies are synchronous on the host. */
static bs_status host_sync(bs_dev *d) {
  (void)d;
  return BS_OK;
}

/* Through a page of staging, written where it changes (write_changed): a
 * rank's shard of a world-padded buffer may be all padding. */
static void host_cast(bs_dev *d, uint16_t *dst, const float *src, size_t n) {
  uint16_t out[2048];
  for (size_t at = 0; at < n; at += 2048) {
    size_t c = n - at < 2048 ? n - at : 2048;
    bs_k_cast_f32_bf16(out, src + at, c);
    write_changed(d, dst + at, out, c * sizeof *out);
  }
}

static void host_adam(bs_dev *d, float *p, float *m, float *v, const float *g,
                      size_t n, const bs_adam_hp *hp) {
  (void)d;
  bs_k_adam(p, m, v, g, n, hp);
}

static void host_grad(bs_dev *d, float *g, const uint16_t *p, size_t n,
                      uint64_t base, uint64_t seed, int rank, int step) {
  (void)d;
  bs_k_grad(g, p, n, base, seed, rank, step);
}

static void host_bitflip(bs_dev *d, void *buf, size_t nbytes, uint64_t bit) {
  (void)d;
  bs_k_bitflip(buf, nbytes, bit);
}

static size_t host_first_diff(bs_dev *d, const void *a, const void *b,
                              size_t n) {
  (void)d;
  return bs_k_first_diff(a, b, n);
}

static void host_poison(bs_dev *d, void *buf, size_t nbytes, uint64_t seed,
                        uint64_t from) {
  (void)d;
  bs_k_poison_from(buf, nbytes, seed, from);
}

static void host_sm_copy(bs_dev *d, void *dst, const void *src, size_t n) {
  (void)d;
  memcpy(dst, src, n);
}

static void host_destroy(bs_dev *d) {
  free(impl(d)->r);
  free(d->impl);
  free(d);
}

static const bs_dev_ops host_ops = {
    .name = "host",
    .pinned_alloc = host_pinned_alloc,
    .pinned_free = host_pinned_free,
    .va_reserve = host_va_reserve,
    .va_release = host_va_release,
    .phys_map = host_phys_map,
    .phys_unmap = host_phys_unmap,
    .copy = host_copy,
    .sync = host_sync,
    .cast_f32_bf16 = host_cast,
    .adam = host_adam,
    .grad = host_grad,
    .bitflip = host_bitflip,
    .first_diff = host_first_diff,
    .poison = host_poison,
    .discard = host_discard,
    .sm_copy = host_sm_copy,
    .destroy = host_destroy,
};

bs_status bs_dev_host_create(bs_dev **out) {
  bs_status st = BS_OK;
  bs_dev *d = NULL;
  long page = sysconf(_SC_PAGESIZE);
  if (!out)
    BS_FAIL(BS_ERR_INVALID, NULL, "host device: no output pointer");
  *out = NULL;
  if (page <= 0)
    BS_FAIL(BS_ERR_INTERNAL, NULL, "host device: no page size");
  d = calloc(1, sizeof *d);
  if (!d || !(d->impl = calloc(1, sizeof(host_impl)))) {
    free(d);
    BS_FAIL(BS_ERR_NOMEM, NULL, "host device: out of memory");
  }
  d->ops = &host_ops;
  d->page = (size_t)page;
  impl(d)->guards = true; /* until the kernel says it has none */
  *out = d;
out:
  return st;
}
