/* The device seam: pinned host memory, device virtual memory as the memory
 * saver drives it, copies and kernels. Two implementations: `host` (mmap
 * reservations; a paused range is PROT_NONE so a read faults at once) and
 * `cuda` (the CUDA virtual-memory API, as torch_memory_saver does it).
 * One bs_dev per rank: its accounting is that rank's. */
#ifndef BS_DEV_H
#define BS_DEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_err.h"
#include "bs_kernels.h"

typedef enum bs_copy_dir { BS_H2D, BS_D2H, BS_D2D, BS_H2H } bs_copy_dir;

/* Who holds pinned host memory: a backuper's copies, or the memory saver's
 * own cpu backups of paused regions. Budgets are checked per owner. */
typedef enum bs_pin_owner {
  BS_PIN_BACKUPER = 0,
  BS_PIN_MEMSAVER,
  BS_PIN_OTHER,
  BS_PIN_OWNER_COUNT
} bs_pin_owner;

typedef struct bs_dev bs_dev;

typedef struct bs_dev_ops {
  const char *name; /* "host", "cuda" */
  bs_status (*pinned_alloc)(bs_dev *d, size_t n, void **out);
  void (*pinned_free)(bs_dev *d, void *p, size_t n);
  /* Reserve address space; nothing is mapped yet. */
  bs_status (*va_reserve)(bs_dev *d, size_t n, void **va);
  void (*va_release)(bs_dev *d, void *va, size_t n);
  /* Back [va, va+n) with fresh physical memory, readable and writable.
   * The previous contents are gone (the caller fills or copies back). */
  bs_status (*phys_map)(bs_dev *d, void *va, size_t n);
  /* Release the physical memory; any later access to va faults. */
  bs_status (*phys_unmap)(bs_dev *d, void *va, size_t n);
  bs_status (*copy)(bs_dev *d, void *dst, const void *src, size_t n,
                    bs_copy_dir dir);
  bs_status (*sync)(bs_dev *d);
  /* Kernels on device memory (host backend: the kernels/ functions). */
  void (*cast_f32_bf16)(bs_dev *d, uint16_t *dst, const float *src, size_t n);
  void (*adam)(bs_dev *d, float *p, float *m, float *v, const float *g,
               size_t n, const bs_adam_hp *hp);
  void (*grad)(bs_dev *d, float *g, const uint16_t *p, size_t n, uint64_t base,
               uint64_t seed, int rank, int step);
  void (*bitflip)(bs_dev *d, void *buf, size_t nbytes, uint64_t bit);
  size_t (*first_diff)(bs_dev *d, const void *a, const void *b, size_t n);
  void (*poison)(bs_dev *d, void *buf, size_t nbytes, uint64_t seed);
  /* Device-to-device through the SMs (cuda: a copy kernel, not the copy
   * engine; host: memcpy): the like-for-like ceiling of the cast kernel.
   * Asynchronous like the kernels: a failure is reported by the next sync. */
  void (*sm_copy)(bs_dev *d, void *dst, const void *src, size_t n);
  void (*destroy)(bs_dev *d);
} bs_dev_ops;

struct bs_dev {
  const bs_dev_ops *ops;
  size_t page;                            /* granularity of va/phys calls */
  size_t pinned_cur[BS_PIN_OWNER_COUNT];  /* bytes held now, per owner */
  size_t pinned_peak[BS_PIN_OWNER_COUNT]; /* high-water mark, per owner */
  size_t pinned_cur_total, pinned_peak_total;
  void *impl;
};

bs_status bs_dev_host_create(bs_dev **out);
/* Fails with BS_ERR_UNSUPPORTED (and a reason) where no GPU is usable or
 * the build has no CUDA. */
bs_status bs_dev_cuda_create(int device, bs_dev **out);
/* GPUs visible to this process (0 without a driver or without CUDA). */
int bs_dev_cuda_count(void);
/* "host" or "cuda". */
bs_status bs_dev_create(const char *kind, int device, bs_dev **out);
void bs_dev_destroy(bs_dev *d);

/* Accounted pinned allocation (fault point backup/pin_alloc for backupers). */
bs_status bs_dev_pinned_alloc(bs_dev *d, bs_pin_owner who, size_t n,
                              void **out);
void bs_dev_pinned_free(bs_dev *d, bs_pin_owner who, void *p, size_t n);
/* Copy with the fault point copy/fail. */
bs_status bs_dev_copy(bs_dev *d, void *dst, const void *src, size_t n,
                      bs_copy_dir dir);
/* ops->sm_copy with argument checks: BS_ERR_INVALID for a NULL pointer with
 * n > 0 or overlapping ranges. Asynchronous: the bytes are there, and a
 * failed launch reported, at the next bs_dev_sync. */
bs_status bs_dev_sm_copy(bs_dev *d, void *dst, const void *src, size_t n);
bs_status bs_dev_sync(bs_dev *d);

#endif
