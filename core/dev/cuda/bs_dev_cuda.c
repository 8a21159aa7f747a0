/* The cuda device: regions on the CUDA virtual-memory API the way
 * torch_memory_saver drives it (reserve an address range once; map =
 * cuMemCreate + cuMemMap + cuMemSetAccess; unmap = cuMemUnmap +
 * cuMemRelease, so the address stays and the memory goes), pinned host
 * memory from cudaHostAlloc, copies and kernels on one stream per device.
 *
 * libcuda is never linked: the driver entry points come from cudart at
 * run time, so the binary starts on machines without a driver and this
 * backend reports BS_ERR_UNSUPPORTED there. Like every bs_dev it belongs
 * to one rank thread, so its mapping table needs no lock. */
#define BS_DEV_BACKEND
#include "dev/bs_dev_impl.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "bs_span.h"
#include "bs_vec.h"
#include "cuda/bs_kernels_cuda.h"

/* The ABI version asked of the driver: the _v10020 signatures below. */
enum { DRIVER_ABI = 12000 };

typedef struct drv {
  PFN_cuDeviceGet_v2000 device_get;
  PFN_cuDeviceGetAttribute_v2000 attribute;
  PFN_cuMemGetAllocationGranularity_v10020 granularity;
  PFN_cuMemAddressReserve_v10020 reserve;
  PFN_cuMemAddressFree_v10020 free_va;
  PFN_cuMemCreate_v10020 create;
  PFN_cuMemRelease_v10020 release;
  PFN_cuMemMap_v10020 map;
  PFN_cuMemUnmap_v10020 unmap;
  PFN_cuMemSetAccess_v10020 set_access;
  PFN_cuGetErrorString_v6000 error_string;
} drv;

typedef struct mapping {
  uintptr_t va;
  size_t n;
  CUmemGenericAllocationHandle handle; /* unused for a reservation */
} mapping;

typedef struct table {
  mapping *e;
  size_t n, cap;
} table;

typedef struct cuda_impl {
  int device;
  cudaStream_t stream;
  drv fn;
  CUmemAllocationProp prop; /* device-local memory of this device */
  table maps;               /* what is mapped */
  table res; /* address ranges reserved: freed at destroy if still held */
  /* The handle each range last released, until the range is mapped again:
   * a second unmap of the range releases that handle again, as
   * torch_memory_saver did before d7a3a51, and the driver answers. */
  table released;
  /* The first kernel that failed to launch: the kernel ops return void,
   * so the next sync reports it. */
  cudaError_t kerr;
  const char *kwhat;
} cuda_impl;

static cuda_impl *impl(bs_dev *d) {
  return d->impl;
}

static const char *cu_str(const cuda_impl *c, CUresult r) {
  const char *s = NULL;
  if (c->fn.error_string && c->fn.error_string(r, &s) == CUDA_SUCCESS && s)
    return s;
  return "unknown driver error";
}

/* Out of memory is the one driver failure callers can act on. */
static bs_status cu_fail(const cuda_impl *c, CUresult r, const char *what,
                         size_t n) {
  bs_status code =
      r == CUDA_ERROR_OUT_OF_MEMORY ? BS_ERR_NOMEM : BS_ERR_INTERNAL;
  return bs_err_fail(code, NULL, "%s of %zu bytes on cuda:%d: %s (%d)", what, n,
                     c->device, cu_str(c, r), (int)r);
}

#define CU_TRY(call, what, n)                                                  \
  do {                                                                         \
    CUresult r_ = (call);                                                      \
    if (r_ != CUDA_SUCCESS) {                                                  \
      st = cu_fail(c, r_, (what), (n));                                        \
      goto out;                                                                \
    }                                                                          \
  } while (0)

/* cudart's current device is per thread, and ranks are threads. */
static bs_status use(const cuda_impl *c) {
  cudaError_t e = cudaSetDevice(c->device);
  if (e != cudaSuccess)
    return bs_err_fail(BS_ERR_INTERNAL, NULL, "cudaSetDevice(%d): %s",
                       c->device, cudaGetErrorString(e));
  return BS_OK;
}

static void note(cuda_impl *c, int err, const char *what) {
  if (err != cudaSuccess && c->kerr == cudaSuccess) {
    c->kerr = (cudaError_t)err;
    c->kwhat = what;
  }
}

static size_t round_up(size_t n, size_t page) {
  return (n + page - 1) / page * page;
}

/* ---- mapping table ---- */

static mapping *find_exact(table *t, uintptr_t va, size_t n) {
  for (size_t i = 0; i < t->n; i++)
    if (t->e[i].va == va && t->e[i].n == n)
      return &t->e[i];
  return NULL;
}

static bool overlaps(const table *t, uintptr_t va, size_t n) {
  for (size_t i = 0; i < t->n; i++)
    if (va < t->e[i].va + t->e[i].n && t->e[i].va < va + n)
      return true;
  return false;
}

static bs_status table_add(table *t, mapping m) {
  return bs_vec_push(&t->e, &t->n, &t->cap, &m, sizeof m, "cuda address table");
}

/* Order does not matter: the last entry takes m's place. */
static void table_del(table *t, mapping *m) {
  *m = t->e[--t->n];
}

/* Forgets the handles released inside [va, va + n). */
static void forget_released(cuda_impl *c, uintptr_t va, size_t n) {
  for (size_t i = c->released.n; i-- > 0;)
    if (c->released.e[i].va >= va && c->released.e[i].va < va + n)
      table_del(&c->released, &c->released.e[i]);
}

/* Unmaps and releases one entry and drops it from the table; the handle
 * is remembered (a lost entry only loses the double-release report). */
static CUresult drop(cuda_impl *c, mapping *m) {
  mapping gone = *m;
  bs_error saved = *bs_err();
  CUresult r = c->fn.unmap((CUdeviceptr)m->va, m->n);
  CUresult r2 = c->fn.release(m->handle);
  table_del(&c->maps, m);
  forget_released(c, gone.va, gone.n);
  if (table_add(&c->released, gone) != BS_OK)
    *bs_err() = saved;
  return r != CUDA_SUCCESS ? r : r2;
}

/* ---- driver entry points ---- */

static bs_status resolve(drv *fn) {
  const struct {
    const char *name;
    void **slot;
  } syms[] = {
      {"cuDeviceGet", (void **)&fn->device_get},
      {"cuDeviceGetAttribute", (void **)&fn->attribute},
      {"cuMemGetAllocationGranularity", (void **)&fn->granularity},
      {"cuMemAddressReserve", (void **)&fn->reserve},
      {"cuMemAddressFree", (void **)&fn->free_va},
      {"cuMemCreate", (void **)&fn->create},
      {"cuMemRelease", (void **)&fn->release},
      {"cuMemMap", (void **)&fn->map},
      {"cuMemUnmap", (void **)&fn->unmap},
      {"cuMemSetAccess", (void **)&fn->set_access},
      {"cuGetErrorString", (void **)&fn->error_string},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSuccess;
    cudaError_t e = cudaGetDriverEntryPointByVersion(
        syms[i].name, syms[i].slot, DRIVER_ABI, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !*syms[i].slot)
      return bs_err_fail(BS_ERR_UNSUPPORTED, NULL,
                         "no CUDA device: the driver lacks %s (%s, query %d)",
                         syms[i].name, cudaGetErrorString(e), (int)q);
  }
  return BS_OK;
}

/* Virtual-memory support and the granularity every va/phys call uses. */
static bs_status setup_vmm(cuda_impl *c, size_t *page) {
  bs_status st = BS_OK;
  CUdevice dev = 0;
  int vmm = 0;
  CUresult r = c->fn.device_get(&dev, c->device);
  if (r == CUDA_SUCCESS)
    r = c->fn.attribute(
        &vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
  if (r != CUDA_SUCCESS)
    BS_FAIL(BS_ERR_UNSUPPORTED, NULL, "no CUDA device: cuda:%d: %s", c->device,
            cu_str(c, r));
  if (!vmm)
    BS_FAIL(BS_ERR_UNSUPPORTED, NULL,
            "cuda:%d has no virtual memory management", c->device);
  c->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  c->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  c->prop.location.id = dev;
  r = c->fn.granularity(page, &c->prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r != CUDA_SUCCESS || *page == 0)
    BS_FAIL(BS_ERR_UNSUPPORTED, NULL, "cuda:%d allocation granularity: %s",
            c->device, cu_str(c, r));
out:
  return st;
}

/* ---- the ops ---- */

static bs_status cuda_pinned_alloc(bs_dev *d, size_t n, void **out) {
  bs_status st = BS_OK;
  BS_CHECK(use(impl(d)));
  cudaError_t e = cudaHostAlloc(out, n, cudaHostAllocDefault);
  if (e != cudaSuccess) {
    *out = NULL;
    BS_FAIL(BS_ERR_NOMEM, NULL, "cudaHostAlloc of %zu bytes: %s", n,
            cudaGetErrorString(e));
  }
out:
  return st;
}

static void cuda_pinned_free(bs_dev *d, void *p, size_t n) {
  (void)n;
  if (use(impl(d)) == BS_OK)
    cudaFreeHost(p);
}

static bs_status cuda_va_reserve(bs_dev *d, size_t n, void **va) {
  bs_status st = BS_OK;
  cuda_impl *c = impl(d);
  CUdeviceptr p = 0;
  if (n == 0 || !va)
    BS_FAIL(BS_ERR_INVALID, NULL, "reserve of %zu bytes: nothing to reserve",
            n);
  BS_CHECK(use(c));
  CU_TRY(c->fn.reserve(&p, round_up(n, d->page), d->page, 0, 0),
         "cuMemAddressReserve", n);
  st = table_add(&c->res, (mapping){.va = p, .n = round_up(n, d->page)});
  if (st != BS_OK) {
    c->fn.free_va(p, round_up(n, d->page));
    goto out;
  }
  *va = (void *)(uintptr_t)p;
out:
  return st;
}

/* Unmaps what is mapped inside the range, then gives the range back. */
static void release_range(cuda_impl *c, mapping *r) {
  uintptr_t lo = r->va;
  size_t len = r->n;
  for (size_t i = c->maps.n; i-- > 0;)
    if (c->maps.e[i].va >= lo && c->maps.e[i].va < lo + len)
      drop(c, &c->maps.e[i]);
  forget_released(c, lo, len);
  c->fn.free_va((CUdeviceptr)lo, len);
  table_del(&c->res, r);
}

/* Whatever is still mapped inside the range goes with it: a reservation
 * must never be freed under live mappings. */
static void cuda_va_release(bs_dev *d, void *va, size_t n) {
  cuda_impl *c = impl(d);
  uintptr_t lo = (uintptr_t)va;
  size_t len = round_up(n, d->page);
  if (!va || n == 0 || use(c) != BS_OK)
    return;
  cudaStreamSynchronize(c->stream);
  mapping *r = find_exact(&c->res, lo, len);
  if (r)
    release_range(c, r);
}

static bs_status check_range(const bs_dev *d, const char *what, void *va,
                             size_t n) {
  if (!va || n == 0 || (uintptr_t)va % d->page || n % d->page)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "%s of %zu bytes at %p: not whole %zu-byte pages", what,
                       n, va, d->page);
  return BS_OK;
}

static bs_status cuda_phys_map(bs_dev *d, void *va, size_t n) {
  bs_status st = BS_OK;
  cuda_impl *c = impl(d);
  mapping m = {.va = (uintptr_t)va, .n = n};
  bool created = false, mapped = false;
  BS_CHECK(check_range(d, "map", va, n));
  BS_CHECK(use(c));
  if (overlaps(&c->maps, m.va, n))
    BS_FAIL(BS_ERR_STATE, NULL, "map of %zu bytes at %p: already mapped", n,
            va);
  CUmemAccessDesc access = {.location = c->prop.location,
                            .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  CU_TRY(c->fn.create(&m.handle, n, &c->prop, 0), "cuMemCreate", n);
  created = true;
  CU_TRY(c->fn.map((CUdeviceptr)m.va, n, 0, m.handle, 0), "cuMemMap", n);
  mapped = true;
  CU_TRY(c->fn.set_access((CUdeviceptr)m.va, n, &access, 1), "cuMemSetAccess",
         n);
  BS_CHECK(table_add(&c->maps, m));
  forget_released(c, m.va, n);
out:
  if (st != BS_OK && mapped)
    c->fn.unmap((CUdeviceptr)m.va, n);
  if (st != BS_OK && created)
    c->fn.release(m.handle);
  return st;
}

/* Nothing is mapped at va, and its last handle was released already: the
 * release goes to the driver again, which refuses a released handle (or,
 * had the handle been reused, takes another allocation's memory away). */
static bs_status release_again(cuda_impl *c, mapping *old) {
  bs_status st = BS_OK;
  mapping m = *old;
  table_del(&c->released, old);
  BS_CHECK(use(c));
  CUresult r = c->fn.release(m.handle);
  if (r != CUDA_SUCCESS)
    BS_FAIL(BS_ERR_STATE, NULL,
            "cuMemRelease of the handle of %zu bytes at %#lx, released "
            "already: %s (%d)",
            m.n, (unsigned long)m.va, cu_str(c, r), (int)r);
  BS_FAIL(BS_ERR_STATE, NULL,
          "cuMemRelease of the handle of %zu bytes at %#lx, released "
          "already: the driver accepted it (the handle was another "
          "allocation's)",
          m.n, (unsigned long)m.va);
out:
  return st;
}

static bs_status cuda_phys_unmap(bs_dev *d, void *va, size_t n) {
  bs_status st = BS_OK;
  cuda_impl *c = impl(d);
  BS_CHECK(check_range(d, "unmap", va, n));
  mapping *m = find_exact(&c->maps, (uintptr_t)va, n);
  mapping *old = m ? NULL : find_exact(&c->released, (uintptr_t)va, n);
  if (old)
    BS_CHECK(release_again(c, old));
  if (!m)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "unmap of %zu bytes at %p: not a mapped range", n, va);
  BS_CHECK(use(c));
  /* Work still queued on the stream may touch the range. */
  cudaError_t e = cudaStreamSynchronize(c->stream);
  if (e != cudaSuccess)
    BS_FAIL(BS_ERR_INTERNAL, NULL, "sync before unmap: %s",
            cudaGetErrorString(e));
  CU_TRY(drop(c, m), "cuMemUnmap/cuMemRelease", n);
out:
  return st;
}

static bs_status cuda_copy(bs_dev *d, void *dst, const void *src, size_t n,
                           bs_copy_dir dir) {
  static const enum cudaMemcpyKind kinds[] = {
      [BS_H2D] = cudaMemcpyHostToDevice,
      [BS_D2H] = cudaMemcpyDeviceToHost,
      [BS_D2D] = cudaMemcpyDeviceToDevice,
      [BS_H2H] = cudaMemcpyHostToHost,
  };
  bs_status st = BS_OK;
  cuda_impl *c = impl(d);
  if ((unsigned)dir > BS_H2H)
    BS_FAIL(BS_ERR_INVALID, NULL, "copy: bad direction %d", (int)dir);
  BS_CHECK(use(c));
  cudaError_t e = cudaMemcpyAsync(dst, src, n, kinds[dir], c->stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(c->stream);
  if (e != cudaSuccess)
    BS_FAIL(BS_ERR_COPY, NULL, "copy of %zu bytes on cuda:%d: %s", n, c->device,
            cudaGetErrorString(e));
out:
  return st;
}

static bs_status cuda_sync(bs_dev *d) {
  bs_status st = BS_OK;
  cuda_impl *c = impl(d);
  if (c->kerr != cudaSuccess) {
    cudaError_t k = c->kerr;
    c->kerr = cudaSuccess;
    BS_FAIL(BS_ERR_INTERNAL, NULL, "kernel %s on cuda:%d: %s", c->kwhat,
            c->device, cudaGetErrorString(k));
  }
  BS_CHECK(use(c));
  cudaError_t e = cudaStreamSynchronize(c->stream);
  if (e != cudaSuccess)
    BS_FAIL(BS_ERR_INTERNAL, NULL, "sync of cuda:%d: %s", c->device,
            cudaGetErrorString(e));
out:
  return st;
}

static void cuda_cast(bs_dev *d, uint16_t *dst, const float *src, size_t n) {
  cuda_impl *c = impl(d);
  if (use(c) == BS_OK)
    note(c, bs_cu_cast_f32_bf16(dst, src, n, c->stream), "cast");
}

static void cuda_adam(bs_dev *d, float *p, float *m, float *v, const float *g,
                      size_t n, const bs_adam_hp *hp) {
  cuda_impl *c = impl(d);
  if (use(c) == BS_OK)
    note(c, bs_cu_adam(p, m, v, g, n, hp, c->stream), "adam");
}

static void cuda_grad(bs_dev *d, float *g, const uint16_t *p, size_t n,
                      uint64_t base, uint64_t seed, int rank, int step) {
  cuda_impl *c = impl(d);
  if (use(c) == BS_OK)
    note(c, bs_cu_grad(g, p, n, base, seed, rank, step, c->stream), "grad");
}

static void cuda_bitflip(bs_dev *d, void *buf, size_t nbytes, uint64_t bit) {
  cuda_impl *c = impl(d);
  if (use(c) == BS_OK)
    note(c, bs_cu_bitflip(buf, nbytes, bit, c->stream), "bitflip");
}

/* On failure the answer is 0, "differs at once": a comparison that could
 * not run must never pass as equal. The next sync reports the error. */
static size_t cuda_first_diff(bs_dev *d, const void *a, const void *b,
                              size_t n) {
  cuda_impl *c = impl(d);
  size_t at = 0;
  int err = use(c) == BS_OK ? bs_cu_first_diff(a, b, n, &at, c->stream)
                            : (int)cudaErrorInvalidDevice;
  note(c, err, "first_diff");
  return err == cudaSuccess ? at : 0;
}

static void cuda_poison(bs_dev *d, void *buf, size_t nbytes, uint64_t seed,
                        uint64_t from) {
  cuda_impl *c = impl(d);
  if (use(c) == BS_OK)
    note(c, bs_cu_poison(buf, nbytes, seed, from, c->stream), "poison");
}

static void cuda_sm_copy(bs_dev *d, void *dst, const void *src, size_t n) {
  cuda_impl *c = impl(d);
  if (use(c) == BS_OK)
    note(c, bs_cu_copy(dst, src, n, c->stream), "sm_copy");
}

static void cuda_destroy(bs_dev *d) {
  cuda_impl *c = impl(d);
  if (use(c) == BS_OK)
    cudaStreamSynchronize(c->stream);
  /* Regions still live (a rank unwound by a paused read) give their
   * address ranges back with the device. */
  while (c->res.n)
    release_range(c, &c->res.e[0]);
  while (c->maps.n)
    drop(c, &c->maps.e[0]);
  cudaStreamDestroy(c->stream);
  free(c->maps.e);
  free(c->res.e);
  free(c->released.e);
  free(c);
  free(d);
}

static const bs_dev_ops cuda_ops = {
    .name = "cuda",
    .pinned_alloc = cuda_pinned_alloc,
    .pinned_free = cuda_pinned_free,
    .va_reserve = cuda_va_reserve,
    .va_release = cuda_va_release,
    .phys_map = cuda_phys_map,
    .phys_unmap = cuda_phys_unmap,
    .copy = cuda_copy,
    .sync = cuda_sync,
    .cast_f32_bf16 = cuda_cast,
    .adam = cuda_adam,
    .grad = cuda_grad,
    .bitflip = cuda_bitflip,
    .first_diff = cuda_first_diff,
    .poison = cuda_poison,
    .sm_copy = cuda_sm_copy,
    .destroy = cuda_destroy,
};

/* The device count first: where there is no driver or no GPU, cudart says
 * so here and nothing else is touched. */
static bs_status probe(int device) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return bs_err_fail(BS_ERR_UNSUPPORTED, NULL, "no CUDA device: %s",
                       cudaGetErrorString(e));
  if (count == 0)
    return bs_err_fail(BS_ERR_UNSUPPORTED, NULL,
                       "no CUDA device: none visible");
  if (device >= count)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "CUDA device %d out of range (%d visible)", device,
                       count);
  return BS_OK;
}

/* Set once this process has a primary context: asking a process that
 * never made one would make one (or fail on a machine without a GPU). */
static atomic_bool context_made;

bs_status bs_dev_cuda_settled(void) {
  if (!atomic_load(&context_made))
    return BS_OK;
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess)
    e = cudaGetLastError();
  if (e != cudaSuccess)
    return bs_err_fail(BS_ERR_FATAL, NULL, "CUDA context unusable: %s",
                       cudaGetErrorString(e));
  return BS_OK;
}

int bs_dev_cuda_count(void) {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

bs_status bs_dev_cuda_create(int device, bs_dev **out) {
  bs_status st = BS_OK;
  bs_dev *d = NULL;
  cuda_impl *c = NULL;
  if (!out || device < 0)
    BS_FAIL(BS_ERR_INVALID, NULL, "cuda device %d: bad argument", device);
  *out = NULL;
  uint64_t t0 = bs_span_now();
  BS_CHECK(probe(device));
  d = calloc(1, sizeof *d);
  c = calloc(1, sizeof *c);
  if (!d || !c)
    BS_FAIL(BS_ERR_NOMEM, NULL, "cuda device %d: out of host memory", device);
  c->device = device;
  BS_CHECK(use(c));
  /* Creates the primary context that the driver calls below work in. */
  cudaError_t e = cudaFree(NULL);
  if (e != cudaSuccess)
    BS_FAIL(BS_ERR_UNSUPPORTED, NULL, "no CUDA device: cuda:%d context: %s",
            device, cudaGetErrorString(e));
  atomic_store(&context_made, true);
  BS_CHECK(resolve(&c->fn));
  BS_CHECK(setup_vmm(c, &d->page));
  e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
  if (e != cudaSuccess)
    BS_FAIL(BS_ERR_INTERNAL, NULL, "cuda:%d stream: %s", device,
            cudaGetErrorString(e));
  d->ops = &cuda_ops;
  d->impl = c;
  bs_span_since(BS_SPAN_CUDA_CTX, t0);
  *out = d;
  d = NULL;
  c = NULL;
out:
  free(c);
  free(d);
  return st;
}
