/* The inside of the device seam: the table a backend fills and the device
 * the wrappers of bs_dev.c account in. Only core/dev's own sources define
 * BS_DEV_BACKEND and include this; everyone else calls dev/bs_dev.h. */
#ifndef BS_DEV_IMPL_H
#define BS_DEV_IMPL_H

#ifndef BS_DEV_BACKEND
#error "dev/bs_dev_impl.h is core/dev's own: use the functions of dev/bs_dev.h"
#endif

#include "dev/bs_dev.h"

/* One slot per operation of bs_dev.h; the wrappers check arguments and
 * account, a slot only does the work. */
typedef struct bs_dev_ops {
  const char *name; /* "host", "cuda" */
  bs_status (*pinned_alloc)(bs_dev *d, size_t n, void **out);
  void (*pinned_free)(bs_dev *d, void *p, size_t n);
  bs_status (*va_reserve)(bs_dev *d, size_t n, void **va);
  void (*va_release)(bs_dev *d, void *va, size_t n);
  bs_status (*phys_map)(bs_dev *d, void *va, size_t n);
  bs_status (*phys_unmap)(bs_dev *d, void *va, size_t n);
  bs_status (*copy)(bs_dev *d, void *dst, const void *src, size_t n,
                    bs_copy_dir dir);
  bs_status (*sync)(bs_dev *d);
  void (*cast_f32_bf16)(bs_dev *d, uint16_t *dst, const float *src, size_t n);
  void (*adam)(bs_dev *d, float *p, float *m, float *v, const float *g,
               size_t n, const bs_adam_hp *hp);
  void (*grad)(bs_dev *d, float *g, const uint16_t *p, size_t n, uint64_t base,
               uint64_t seed, int rank, int step);
  void (*bitflip)(bs_dev *d, void *buf, size_t nbytes, uint64_t bit);
  size_t (*first_diff)(bs_dev *d, const void *a, const void *b, size_t n);
  void (*poison)(bs_dev *d, void *buf, size_t nbytes, uint64_t seed,
                 uint64_t from);
  void (*sm_copy)(bs_dev *d, void *dst, const void *src, size_t n);
  void (*discard)(bs_dev *d, void *p, size_t n); /* NULL: nothing to do */
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

/* The cuda backend; bs_dev_create("cuda") calls it. Without CUDA in the
 * build, bs_dev.c's stand-in fails with BS_ERR_UNSUPPORTED. */
bs_status bs_dev_cuda_create(int device, bs_dev **out);

#endif
