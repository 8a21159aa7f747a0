/* The device seam: pinned host memory, device virtual memory as the memory
 * saver drives it, copies and kernels. Two implementations: `host` (mmap
 * reservations; a paused range is PROT_NONE so a read faults at once) and
 * `cuda` (the CUDA virtual-memory API, as torch_memory_saver does it).
 * One bs_dev per rank: its accounting is that rank's. Opaque: every
 * operation goes through these functions, so the accounting and the fault
 * points apply to every caller on every backend. */
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

bs_status bs_dev_host_create(bs_dev **out);
/* GPUs visible to this process (0 without a driver or without CUDA). */
int bs_dev_cuda_count(void);
/* "host" or "cuda" (device: the GPU's index). "cuda" fails with
 * BS_ERR_UNSUPPORTED (and a reason) where no GPU is usable or the build has
 * no CUDA. */
bs_status bs_dev_create(const char *kind, int device, bs_dev **out);
/* The device of global rank `rank`: GPU rank mod the GPUs there are for
 * "cuda" (where the nccl backend puts its communicator: a rank's buffers
 * must live on its own GPU). */
bs_status bs_dev_create_for_rank(const char *kind, int rank, bs_dev **out);
void bs_dev_destroy(bs_dev *d);
/* Whether the CUDA context this process made (if any) is still usable
 * after its devices are gone: nothing pending and no sticky error (an
 * illegal address ends a context for good, and every later CUDA call
 * fails). BS_OK where no context was made. A rank worker is kept for the
 * next run only then (harness/run/bs_pool.h). */
bs_status bs_dev_cuda_settled(void);

/* Granularity of the va and phys calls (0 for no device). */
size_t bs_dev_page(const bs_dev *d);
/* Whether its memory is this process's own (the host device): any thread
 * of the process can read it in place. */
bool bs_dev_in_process(const bs_dev *d);
/* Pinned bytes an owner holds now, and its high-water mark. */
size_t bs_dev_pinned(const bs_dev *d, bs_pin_owner who);
size_t bs_dev_pinned_peak(const bs_dev *d, bs_pin_owner who);

/* Accounted pinned allocation (fault point backup/pin_alloc for backupers). */
bs_status bs_dev_pinned_alloc(bs_dev *d, bs_pin_owner who, size_t n,
                              void **out);
void bs_dev_pinned_free(bs_dev *d, bs_pin_owner who, void *p, size_t n);

/* Reserve address space; nothing is mapped yet. */
bs_status bs_dev_va_reserve(bs_dev *d, size_t n, void **va);
void bs_dev_va_release(bs_dev *d, void *va, size_t n);
/* Back [va, va+n) with fresh physical memory, readable and writable. The
 * previous contents are gone (the caller fills or copies back). */
bs_status bs_dev_phys_map(bs_dev *d, void *va, size_t n);
/* Release the physical memory; any later access to va faults. */
bs_status bs_dev_phys_unmap(bs_dev *d, void *va, size_t n);

/* Copy with the fault point copy/fail: the code under test's copies. */
bs_status bs_dev_copy(bs_dev *d, void *dst, const void *src, size_t n,
                      bs_copy_dir dir);
/* The same copy without the fault point, for whoever is not the code under
 * test: an observer (digests, comparisons), whose looking must never fire
 * an armed fault nor count towards its nth, and the simulated transport,
 * which stands in for NCCL's own copies. */
bs_status bs_dev_copy_observe(bs_dev *d, void *dst, const void *src, size_t n,
                              bs_copy_dir dir);
/* Device-to-device through the SMs (cuda: a copy kernel, not the copy
 * engine; host: memcpy): the like-for-like ceiling of the cast kernel.
 * BS_ERR_INVALID for a NULL pointer with n > 0 or overlapping ranges.
 * Asynchronous: the bytes are there, and a failed launch reported, at the
 * next bs_dev_sync. */
bs_status bs_dev_sm_copy(bs_dev *d, void *dst, const void *src, size_t n);
/* The n bytes at p (device memory) are dead: the host device drops their
 * whole pages, which read zero and hold no memory until written again
 * (one simulated rank's dead buffer at a time, not one a rank); a real
 * device keeps its memory as it is. */
void bs_dev_discard(bs_dev *d, void *p, size_t n);
bs_status bs_dev_sync(bs_dev *d);

/* The kernels/ functions on device memory. Asynchronous like the SM copy:
 * a failed launch is reported by the next bs_dev_sync. */
void bs_dev_cast_f32_bf16(bs_dev *d, uint16_t *dst, const float *src, size_t n);
void bs_dev_adam(bs_dev *d, float *p, float *m, float *v, const float *g,
                 size_t n, const bs_adam_hp *hp);
void bs_dev_grad(bs_dev *d, float *g, const uint16_t *p, size_t n,
                 uint64_t base, uint64_t seed, int rank, int step);
void bs_dev_bitflip(bs_dev *d, void *buf, size_t nbytes, uint64_t bit);
void bs_dev_poison(bs_dev *d, void *buf, size_t nbytes, uint64_t seed);
/* The pattern's bytes from `from` on (bs_k_poison_from). */
void bs_dev_poison_from(bs_dev *d, void *buf, size_t nbytes, uint64_t seed,
                        uint64_t from);

#endif
