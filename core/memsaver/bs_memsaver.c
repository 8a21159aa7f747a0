/* The memory saver of one rank (docs/behavior.md §2), modelled on
 * torch_memory_saver: strict pause/resume preconditions checked before
 * anything changes, a pinned cpu backup that exists only while paused, and
 * garbage (a seeded poison pattern) after a resume without backup.
 * What the library answers with exit(1) is fatal here too: recorded once,
 * with the library's own words, and returned as BS_ERR_FATAL.
 * One bs_memsaver per rank thread: it takes no lock of its own; the trap
 * registry it feeds is the only shared state. */
#include "memsaver/bs_memsaver.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_fault.h"
#include "bs_mutant.h"
#include "bs_vec.h"
#include "memsaver/bs_memsaver_testing.h"

/* How the library prefixes what it prints before exit(1). */
#define TMS "[torch_memory_saver.cpp] "

/* Requests of up to half a device page are carved, in blocks of 512
 * bytes, from one-page segments their tag and cpu backup share: PyTorch's
 * caching allocator does so below 1 MiB in 2 MiB segments, which are what
 * torch_memory_saver allocates and pauses. On the cuda device (2 MiB
 * pages) these are its numbers; on the host, a rank's nine optimizer
 * shards of a few bytes took nine pages (0.56 GiB of a 16,384-rank
 * world). */
enum { BLOCK = 512 };

/* Bytes [off, off + len) of an allocation: padding, no element lives in
 * (bs_memsaver_set_padding), or a small allocation's block in its segment
 * (len: the request rounded up to BLOCK). */
typedef struct ms_range {
  size_t off, len;
} ms_range;

typedef struct ms_alloc {
  char *va;
  size_t bytes; /* rounded up to the device page */
  char tag[BS_TAG_MAX];
  bool cpu_backup;
  bs_region_state state;
  void *backup;  /* pinned copy, only while paused with cpu_backup */
  int slot;      /* trap registry slot */
  ms_range *pad; /* in order, apart */
  size_t npad, pad_cap;
  ms_range *blk; /* a segment's small allocations, in order; NULL: whole */
  size_t nblk, blk_cap;
  bool scratch; /* bs_memsaver_set_scratch: not poisoned on resume */
} ms_alloc;

struct bs_memsaver {
  bs_dev *dev;
  uint64_t poison_seed;
  uint64_t resumes; /* makes each poison fill different */
  ms_alloc *allocs;
  size_t n, cap;
  size_t resident, peak;
  bool ended; /* a fatal error: the process would have exited */
  bs_error fatal;
};

/* The process ends here (exit status 1 in the real library): the record
 * holds the library's message, whatever was in it before, and keeps it. */
__attribute__((format(printf, 3, 4))) static bs_status
fatal(bs_memsaver *ms, const char *tag, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  bs_err_clear();
  bs_status st = bs_err_vfail(BS_ERR_FATAL, tag, fmt, ap);
  va_end(ap);
  if (!ms->ended) {
    ms->ended = true;
    ms->fatal = *bs_err();
  }
  return st;
}

static bool tag_matches(const ms_alloc *a, const char *tag) {
  return !tag || strcmp(a->tag, tag) == 0;
}

static ms_alloc *find(const bs_memsaver *ms, const void *ptr) {
  uintptr_t p = (uintptr_t)ptr;
  for (size_t i = 0; ms && i < ms->n; i++) {
    uintptr_t base = (uintptr_t)ms->allocs[i].va;
    if (p >= base && p - base < ms->allocs[i].bytes)
      return &ms->allocs[i];
  }
  return NULL;
}

static void resident_add(bs_memsaver *ms, size_t n) {
  ms->resident += n;
  if (ms->resident > ms->peak)
    ms->peak = ms->resident;
}

bs_status bs_memsaver_create(bs_dev *dev, uint64_t poison_seed,
                             bs_memsaver **out) {
  bs_status st = BS_OK;
  bs_memsaver *ms = NULL;
  if (!dev || !out)
    BS_FAIL(BS_ERR_INVALID, NULL, "memory saver: no device or output");
  ms = calloc(1, sizeof *ms);
  if (!ms)
    BS_FAIL(BS_ERR_NOMEM, NULL, "memory saver: out of memory");
  ms->dev = dev;
  ms->poison_seed = poison_seed;
  *out = ms;
out:
  return st;
}

/* A physical map or unmap the library checks (CURESULT_CHECK and the
 * like): the device's refusal ends the process, with the device's words.
 * Else the caller's record is left as it was. */
static bs_status phys(bs_memsaver *ms, ms_alloc *a,
                      bs_status (*op)(bs_dev *, void *, size_t),
                      const char *func) {
  bs_error saved = *bs_err();
  char why[sizeof saved.message];
  bs_err_clear();
  if (op(ms->dev, a->va, a->bytes) == BS_OK) {
    *bs_err() = saved;
    return BS_OK;
  }
  snprintf(why, sizeof why, "%s", bs_err()->message);
  return fatal(ms, a->tag, TMS "CUresult error: %s func=%s tag=%s", why, func,
               a->tag);
}

/* Unmapped before the release: the cuda backend cannot free a reservation
 * that still has memory mapped into it. A PAUSED allocation has no
 * physical memory left. Mutant free-paused-double-release
 * (torch_memory_saver before d7a3a51): free releases it all the same, a
 * second release of the handle pause already released; the device
 * refuses it, which the library's CURESULT_CHECK turns into exit(1). */
static void release(bs_memsaver *ms, ms_alloc *a) {
  bool paused = a->state == BS_PAUSED;
  bs_trap_unregister(a->slot);
  if (!paused || bs_mutant_on(BS_MUT_FREE_PAUSED_DOUBLE_RELEASE)) {
    phys(ms, a, bs_dev_phys_unmap, "free");
    if (!paused)
      ms->resident -= a->bytes;
  }
  bs_dev_pinned_free(ms->dev, BS_PIN_MEMSAVER, a->backup, a->bytes);
  bs_dev_va_release(ms->dev, a->va, a->bytes);
  free(a->pad);
  free(a->blk);
}

void bs_memsaver_destroy(bs_memsaver *ms) {
  if (!ms)
    return;
  while (ms->n > 0)
    release(ms, &ms->allocs[--ms->n]);
  free(ms->allocs);
  free(ms);
}

static bs_status check_alloc_args(const bs_memsaver *ms, const char *tag,
                                  size_t bytes, const void *ptr) {
  if (!ms || !ptr)
    return bs_err_fail(BS_ERR_INVALID, tag, "alloc: no memory saver or output");
  if (!tag || !tag[0] || strlen(tag) >= BS_TAG_MAX)
    return bs_err_fail(BS_ERR_INVALID, tag,
                       "alloc: tag must be 1 to %d characters", BS_TAG_MAX - 1);
  if (bytes == 0 || bytes > SIZE_MAX - bs_dev_page(ms->dev))
    return bs_err_fail(BS_ERR_INVALID, tag, "alloc: bad size %zu", bytes);
  return BS_OK;
}

/* Mappings are whole device pages. */
static size_t page_round(const bs_memsaver *ms, size_t bytes) {
  size_t page = bs_dev_page(ms->dev);
  return (bytes + page - 1) / page * page;
}

static bool is_small(const bs_memsaver *ms, size_t bytes) {
  return bytes <= bs_dev_page(ms->dev) / 2;
}

static size_t block_round(size_t bytes) {
  return (bytes + BLOCK - 1) / BLOCK * BLOCK;
}

/* The first offset of an active segment with len free bytes; SIZE_MAX if
 * none. */
static size_t gap_of(const ms_alloc *a, size_t len) {
  size_t at = 0;
  if (a->state != BS_ACTIVE)
    return SIZE_MAX;
  for (size_t i = 0; i < a->nblk; i++) {
    if (a->blk[i].off - at >= len)
      return at;
    at = a->blk[i].off + a->blk[i].len;
  }
  return a->bytes - at >= len ? at : SIZE_MAX;
}

/* The first of the n ranges at v (in order) that does not start before
 * off: where a range at off goes. */
static size_t range_at(const ms_range *v, size_t n, size_t off) {
  size_t i = 0;
  while (i < n && v[i].off < off)
    i++;
  return i;
}

/* r added to the n ranges at *v, in order. */
static bs_status range_add(ms_range **v, size_t *n, size_t *cap, ms_range r,
                           const char *what) {
  bs_status st = BS_OK;
  BS_CHECK(bs_vec_reserve(v, cap, *n + 1, sizeof **v, what));
  size_t i = range_at(*v, *n, r.off);
  memmove(&(*v)[i + 1], &(*v)[i], (*n - i) * sizeof **v);
  (*v)[i] = r;
  ++*n;
out:
  return st;
}

/* The block [off, off + len) added to a's, in order. */
static bs_status block_add(ms_alloc *a, size_t off, size_t len) {
  return range_add(&a->blk, &a->nblk, &a->blk_cap, (ms_range){off, len},
                   "alloc");
}

/* A small request in a segment of its tag and backup that has room; *ptr
 * stays NULL where none has. */
static bs_status carve(bs_memsaver *ms, const ms_alloc *want, size_t len,
                       void **ptr) {
  bs_status st = BS_OK;
  for (size_t i = 0; i < ms->n; i++) {
    ms_alloc *a = &ms->allocs[i];
    size_t off = SIZE_MAX;
    if (a->blk && a->cpu_backup == want->cpu_backup &&
        strcmp(a->tag, want->tag) == 0 && (off = gap_of(a, len)) != SIZE_MAX) {
      BS_CHECK(block_add(a, off, len));
      *ptr = a->va + off;
      break;
    }
  }
out:
  return st;
}

/* A new allocation: a segment of one page, holding its first block, where
 * the request is small. */
static bs_status map_new(bs_memsaver *ms, ms_alloc *a, size_t bytes,
                         void **ptr) {
  bs_status st = BS_OK;
  bool mapped = false;
  a->bytes = page_round(ms, bytes);
  if (is_small(ms, bytes))
    BS_CHECK(block_add(a, 0, block_round(bytes)));
  BS_CHECK(bs_dev_va_reserve(ms->dev, a->bytes, (void **)&a->va));
  BS_CHECK(bs_dev_phys_map(ms->dev, a->va, a->bytes));
  mapped = true;
  BS_CHECK(bs_trap_register(a->va, a->bytes, a->tag, &a->slot));
  ms->allocs[ms->n++] = *a;
  resident_add(ms, a->bytes);
  *ptr = a->va;
out:
  if (st != BS_OK && a->va) {
    if (mapped)
      bs_dev_phys_unmap(ms->dev, a->va, a->bytes);
    bs_dev_va_release(ms->dev, a->va, a->bytes);
  }
  if (st != BS_OK)
    free(a->blk);
  return st;
}

bs_status bs_memsaver_alloc(bs_memsaver *ms, const char *tag, bool cpu_backup,
                            size_t bytes, void **ptr) {
  bs_status st = BS_OK;
  ms_alloc a = {.cpu_backup = cpu_backup, .slot = -1};
  BS_CHECK(check_alloc_args(ms, tag, bytes, ptr));
  *ptr = NULL;
  if (bs_fault_hit(BS_FP_DEV_ALLOC, NULL))
    BS_FAIL(BS_ERR_NOMEM, NULL,
            "device allocation of %zu bytes in region '%s': out of memory "
            "(fault dev/alloc)",
            bytes, tag);
  snprintf(a.tag, sizeof a.tag, "%s", tag);
  if (is_small(ms, bytes))
    BS_CHECK(carve(ms, &a, block_round(bytes), ptr));
  if (*ptr)
    goto out;
  BS_CHECK(bs_vec_reserve(&ms->allocs, &ms->cap, ms->n + 1, sizeof *ms->allocs,
                          "alloc"));
  BS_CHECK(map_new(ms, &a, bytes, ptr));
out:
  return st;
}

/* The padding inside [off, off + len) dropped. */
static void pads_drop(ms_alloc *a, size_t off, size_t len) {
  size_t k = 0;
  for (size_t i = 0; i < a->npad; i++)
    if (a->pad[i].off < off || a->pad[i].off >= off + len)
      a->pad[k++] = a->pad[i];
  a->npad = k;
}

/* Whether ptr starts an allocation: a block of a's, dropped, or a whole
 * one. */
static bool free_block(ms_alloc *a, const char *ptr) {
  size_t i = 0;
  if (!a->blk)
    return ptr == a->va;
  while (i < a->nblk && a->va + a->blk[i].off != ptr)
    i++;
  if (i == a->nblk)
    return false;
  pads_drop(a, a->blk[i].off, a->blk[i].len);
  memmove(&a->blk[i], &a->blk[i + 1], (a->nblk - i - 1) * sizeof *a->blk);
  a->nblk--;
  return true;
}

/* A segment goes when its last block does. */
void bs_memsaver_free(bs_memsaver *ms, void *ptr) {
  ms_alloc *a = find(ms, ptr);
  if (!a || !free_block(a, ptr) || a->nblk > 0)
    return;
  release(ms, a);
  *a = ms->allocs[--ms->n];
}

/* The precondition of pause/resume over every matching allocation, checked
 * before any is touched: a failure changes nothing, and is fatal. */
static bs_status check_all(bs_memsaver *ms, const char *tag,
                           bs_region_state want, const char *msg) {
  for (size_t i = 0; i < ms->n; i++) {
    const ms_alloc *a = &ms->allocs[i];
    if (tag_matches(a, tag) && a->state != want)
      return fatal(ms, a->tag, TMS "%s tag=%s", msg, a->tag);
  }
  return BS_OK;
}

static bs_status pause_one(bs_memsaver *ms, ms_alloc *a) {
  bs_status st = BS_OK;
  void *backup = NULL;
  if (a->cpu_backup) {
    BS_CHECK(bs_dev_pinned_alloc(ms->dev, BS_PIN_MEMSAVER, a->bytes, &backup));
    BS_CHECK(bs_dev_copy(ms->dev, backup, a->va, a->bytes, BS_D2H));
    BS_CHECK(bs_dev_sync(ms->dev));
  }
  /* Paused for the trap before the unmap: a racing reader then faults on
   * an allocation it knows is paused, never on an unknown one. */
  bs_trap_set_state(a->slot, BS_PAUSED);
  st = bs_dev_phys_unmap(ms->dev, a->va, a->bytes);
  if (st != BS_OK) {
    bs_trap_set_state(a->slot, BS_ACTIVE);
    goto out;
  }
  a->backup = backup;
  backup = NULL;
  a->state = BS_PAUSED;
  ms->resident -= a->bytes;
out:
  bs_dev_pinned_free(ms->dev, BS_PIN_MEMSAVER, backup, a->bytes);
  return st;
}

bs_status bs_memsaver_pause(bs_memsaver *ms, const char *tag) {
  bs_status st = BS_OK;
  if (!ms)
    BS_FAIL(BS_ERR_INVALID, tag, "pause: no memory saver");
  BS_CHECK(check_all(ms, tag, BS_ACTIVE,
                     "Cannot pause allocation that is not active."));
  for (size_t i = 0; i < ms->n; i++)
    if (tag_matches(&ms->allocs[i], tag))
      BS_CHECK(pause_one(ms, &ms->allocs[i]));
out:
  return st;
}

/* Distinct for every resume of this memory saver (odd multiplier: a
 * bijection), so two fills never repeat and none is the bytes before. */
static uint64_t next_poison_seed(bs_memsaver *ms) {
  return ms->poison_seed ^ (++ms->resumes * 0x9E3779B97F4A7C15ull);
}

/* The end of the allocation [off, ...) is in: a's own or its block's; 0
 * where off is in no block. */
static size_t end_of(const ms_alloc *a, size_t off) {
  for (size_t i = 0; i < a->nblk; i++)
    if (off >= a->blk[i].off && off < a->blk[i].off + a->blk[i].len)
      return a->blk[i].off + a->blk[i].len;
  return a->blk ? 0 : a->bytes;
}

bs_status bs_memsaver_set_padding(bs_memsaver *ms, const void *ptr,
                                  size_t bytes) {
  bs_status st = BS_OK;
  ms_alloc *a = find(ms, ptr);
  size_t off = a ? (size_t)((const char *)ptr - a->va) : 0;
  size_t end = a ? end_of(a, off) : 0;
  size_t i = a ? range_at(a->pad, a->npad, off) : 0;
  if (!a || end < off || bytes > end - off ||
      (i > 0 && a->pad[i - 1].off + a->pad[i - 1].len > off) ||
      (i < a->npad && a->pad[i].off < off + bytes))
    BS_FAIL(BS_ERR_INVALID, a ? a->tag : NULL,
            "set_padding: %zu bytes at %p are not in one allocation apart "
            "from its padding so far",
            bytes, ptr);
  if (bytes > 0)
    BS_CHECK(range_add(&a->pad, &a->npad, &a->pad_cap, (ms_range){off, bytes},
                       "set_padding"));
out:
  return st;
}

bs_status bs_memsaver_set_scratch(bs_memsaver *ms, const void *ptr) {
  ms_alloc *a = find(ms, ptr);
  if (!a || a->blk || (const char *)ptr != a->va)
    return bs_err_fail(BS_ERR_INVALID, a ? a->tag : NULL,
                       "set_scratch: %p starts no whole allocation", ptr);
  a->scratch = true;
  return BS_OK;
}

/* Zeroes [p, p + n) from a zero page: no memset in the seam, and on the
 * host device a copy leaves pages that hold its bytes untouched, so fresh
 * padding stays unbacked. Observed: no fault point counts these. */
static bs_status zero(bs_memsaver *ms, char *p, size_t n) {
  static const char zeros[4096];
  bs_status st = BS_OK;
  for (size_t at = 0; at < n; at += sizeof zeros) {
    size_t c = n - at < sizeof zeros ? n - at : sizeof zeros;
    BS_CHECK(bs_dev_copy_observe(ms->dev, p + at, zeros, c, BS_H2D));
  }
out:
  return st;
}

/* A resume without backup: poison where elements live, each byte the one a
 * whole fill would leave there, so code that reads an element before it is
 * restored still sees garbage. Padding comes back zero instead: correct
 * code never reads it as data (the grads' padding enters the reduce-scatter
 * and the params' the all-gather only to keep shards even, and what they
 * carry lands in padding again), as Megatron zeroes the grad buffer,
 * padding included, every step. Left untouched, a world-padded buffer's
 * padding costs no memory on the host device. */
static bs_status poison_range(bs_memsaver *ms, ms_alloc *a, size_t from,
                              size_t end, uint64_t seed) {
  bs_status st = BS_OK;
  size_t at = from;
  for (size_t i = range_at(a->pad, a->npad, from);; i++) {
    bool last = i == a->npad || a->pad[i].off >= end;
    size_t to = last ? end : a->pad[i].off;
    if (to > at && !a->scratch)
      bs_dev_poison_from(ms->dev, a->va + at, to - at, seed, at);
    if (last)
      break;
    BS_CHECK(zero(ms, a->va + to, a->pad[i].len));
    at = to + a->pad[i].len;
  }
out:
  return st;
}

/* A segment's blocks each; its free bytes stay the fresh page's zeros. */
static bs_status refill_poison(bs_memsaver *ms, ms_alloc *a) {
  bs_status st = BS_OK;
  uint64_t seed = next_poison_seed(ms);
  if (!a->blk)
    BS_CHECK(poison_range(ms, a, 0, a->bytes, seed));
  for (size_t i = 0; i < a->nblk; i++)
    BS_CHECK(poison_range(ms, a, a->blk[i].off, a->blk[i].off + a->blk[i].len,
                          seed));
out:
  return st;
}

static bs_status refill(bs_memsaver *ms, ms_alloc *a) {
  bs_status st = BS_OK;
  if (!a->backup) {
    st = refill_poison(ms, a);
    goto out;
  }
  BS_CHECK(bs_dev_copy(ms->dev, a->va, a->backup, a->bytes, BS_H2D));
  BS_CHECK(bs_dev_sync(ms->dev));
out:
  return st;
}

/* A resume that finds no memory kills the process (torch_memory_saver
 * #87): cu_mem_create's out-of-memory goes through CUDA_ERROR_CHECK. */
static bs_status map_for_resume(bs_memsaver *ms, ms_alloc *a) {
  uint64_t failinfo = 0;
  if (bs_fault_hit(BS_FP_REGION_RESUME, &failinfo))
    return fatal(ms, a->tag,
                 TMS "cudaError error: 2 (out of memory) func=resume tag=%s "
                     "(fault region/resume)",
                 a->tag);
  return phys(ms, a, bs_dev_phys_map, "resume");
}

static bs_status resume_one(bs_memsaver *ms, ms_alloc *a) {
  bs_status st = BS_OK;
  BS_CHECK(map_for_resume(ms, a));
  st = refill(ms, a);
  if (st != BS_OK) { /* stay paused, backup kept for a later resume */
    bs_dev_phys_unmap(ms->dev, a->va, a->bytes);
    goto out;
  }
  bs_dev_pinned_free(ms->dev, BS_PIN_MEMSAVER, a->backup, a->bytes);
  a->backup = NULL;
  a->state = BS_ACTIVE;
  bs_trap_set_state(a->slot, BS_ACTIVE);
  resident_add(ms, a->bytes);
out:
  return st;
}

bs_status bs_memsaver_resume(bs_memsaver *ms, const char *tag) {
  bs_status st = BS_OK;
  if (!ms)
    BS_FAIL(BS_ERR_INVALID, tag, "resume: no memory saver");
  BS_CHECK(check_all(ms, tag, BS_PAUSED,
                     "Cannot resume allocation that is not paused."));
  for (size_t i = 0; i < ms->n; i++)
    if (tag_matches(&ms->allocs[i], tag))
      BS_CHECK(resume_one(ms, &ms->allocs[i]));
out:
  return st;
}

bs_status bs_memsaver_get_cpu_backup(bs_memsaver *ms, const void *ptr,
                                     size_t bytes, bool zero_copy, void *dst,
                                     const void **view) {
  bs_status st = BS_OK;
  const ms_alloc *a = find(ms, ptr);
  size_t off = 0;
  if (!ms)
    BS_FAIL(BS_ERR_INVALID, NULL, "get_cpu_backup: no memory saver");
  off = a ? (size_t)((const char *)ptr - a->va) : 0;
  /* A range no allocation holds whole is one the library cannot find. */
  if (!a || bytes > a->bytes - off) {
    st = fatal(ms, a ? a->tag : NULL,
               TMS "get_cpu_backup_pointer fail to find backup "
                   "query_gpu_ptr=%p query_size=%zu",
               ptr, bytes);
    goto out;
  }
  if (zero_copy ? !view : !dst)
    BS_FAIL(BS_ERR_INVALID, a->tag, "get_cpu_backup: no %s given",
            zero_copy ? "view" : "destination");
  if (a->state == BS_ACTIVE)
    BS_FAIL(BS_ERR_MISSING_BACKUP, a->tag,
            "get_cpu_backup: allocation is not paused (no backup)");
  if (!a->backup) {
    st = fatal(ms, a->tag,
               TMS "get_cpu_backup_pointer: found paused allocation but "
                   "cpu_backup does not exist, do you forget to enable cpu "
                   "backup tag=%s",
               a->tag);
    goto out;
  }
  if (zero_copy)
    *view = (const char *)a->backup + off;
  else
    memcpy(dst, (const char *)a->backup + off, bytes);
out:
  return st;
}

bool bs_memsaver_fatal(const bs_memsaver *ms, bs_error *out) {
  if (!ms || !ms->ended)
    return false;
  if (out)
    *out = ms->fatal;
  return true;
}

bool bs_memsaver_contains(const bs_memsaver *ms, const void *ptr) {
  return find(ms, ptr) != NULL;
}

/* Outside every allocation: ACTIVE, like ordinary memory. */
bs_region_state bs_memsaver_state_of(const bs_memsaver *ms, const void *ptr) {
  const ms_alloc *a = find(ms, ptr);
  return a ? a->state : BS_ACTIVE;
}

const char *bs_memsaver_tag_of(const bs_memsaver *ms, const void *ptr) {
  const ms_alloc *a = find(ms, ptr);
  return a ? a->tag : NULL;
}

/* Whether the allocation was made with cpu_backup (pause keeps its bytes). */
bool bs_memsaver_has_backup(const bs_memsaver *ms, const void *ptr) {
  const ms_alloc *a = find(ms, ptr);
  return a && a->cpu_backup;
}

bool bs_memsaver_all_in_state(const bs_memsaver *ms, const char *tag,
                              bs_region_state s) {
  for (size_t i = 0; ms && i < ms->n; i++)
    if (tag_matches(&ms->allocs[i], tag) && ms->allocs[i].state != s)
      return false;
  return true;
}

size_t bs_memsaver_resident_bytes(const bs_memsaver *ms) {
  return ms ? ms->resident : 0;
}

size_t bs_memsaver_resident_tag(const bs_memsaver *ms, const char *tag) {
  size_t n = 0;
  for (size_t i = 0; ms && i < ms->n; i++)
    if (tag_matches(&ms->allocs[i], tag) && ms->allocs[i].state == BS_ACTIVE)
      n += ms->allocs[i].bytes;
  return n;
}

size_t bs_memsaver_resident_peak(const bs_memsaver *ms) {
  return ms ? ms->peak : 0;
}

void bs_memsaver_reset_peak(bs_memsaver *ms) {
  if (ms)
    ms->peak = ms->resident;
}
