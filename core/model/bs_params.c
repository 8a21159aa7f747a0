/* The rank's live model (bs_params.h). */
#include "model/bs_params.h"

#include <stdlib.h>
#include <string.h>

#include "bs_kernels.h"

/* Keeps initial weights off the (seed, a, b) points the gradient kernel
 * draws its targets and noise from. */
#define FILL_STREAM 0x1d1a11a1ULL

static bs_status alloc_buffers(bs_params *p, bool cpu_backup) {
  bs_status st = BS_OK;
  for (int k = 0; k < BS_BUF_COUNT; k++) {
    size_t numel = p->layout.buf[k].numel;
    if (numel == 0)
      continue;
    BS_CHECK(bs_memsaver_alloc(p->ms, BS_TAG_PARAM, cpu_backup,
                               numel * sizeof(uint16_t),
                               (void **)&p->param_buf[k]));
    BS_CHECK(bs_memsaver_alloc(p->ms, BS_TAG_GRAD, cpu_backup,
                               numel * sizeof(float),
                               (void **)&p->grad_buf[k]));
    BS_CHECK(bs_memsaver_set_scratch(p->ms, p->grad_buf[k]));
  }
out:
  return st;
}

/* Each bucket's padding, past its tensors: a resume without backup leaves
 * it zero, not poisoned (bs_memsaver_set_padding). */
static bs_status mark_padding(bs_params *p) {
  bs_status st = BS_OK;
  for (int k = 0; k < BS_BUF_COUNT; k++) {
    const bs_ddp_buffer *b = &p->layout.buf[k];
    for (size_t i = 0; p->param_buf[k] && i < b->nbuckets; i++) {
      size_t from = b->buckets[i].offset + b->buckets[i].used;
      size_t n = b->buckets[i].numel - b->buckets[i].used;
      BS_CHECK(bs_memsaver_set_padding(p->ms, p->param_buf[k] + from,
                                       n * sizeof(uint16_t)));
      BS_CHECK(bs_memsaver_set_padding(p->ms, p->grad_buf[k] + from,
                                       n * sizeof(float)));
    }
  }
out:
  return st;
}

/* In-DDP tensors are views into their param buffer; every other tensor
 * gets its own allocation in "default", backed up across pauses. */
static bs_status place_tensors(bs_params *p) {
  bs_status st = BS_OK;
  for (size_t i = 0; i < p->n; i++) {
    bs_tensor *t = &p->t[i];
    const bs_ddp_slot *s = &p->layout.slot[i];
    t->spec = &p->model->t[i];
    t->bytes = bs_tensor_bytes(t->spec);
    t->buffer = s->buffer;
    t->offset = s->offset;
    if (s->buffer >= 0)
      t->ptr = p->param_buf[s->buffer] + s->offset;
    else
      BS_CHECK(
          bs_memsaver_alloc(p->ms, BS_TAG_DEFAULT, true, t->bytes, &t->ptr));
  }
out:
  return st;
}

bs_status bs_params_create(bs_dev *dev, bs_memsaver *ms, const bs_model_spec *m,
                           int dp, size_t bucket_numel, bool buffers_cpu_backup,
                           bs_params **out) {
  bs_status st = BS_OK;
  bs_params *p = NULL;
  if (!dev || !ms || !m || !out)
    BS_FAIL(BS_ERR_INVALID, NULL, "params: NULL argument");
  if (!(p = calloc(1, sizeof *p)) || !(p->t = calloc(m->n, sizeof *p->t)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "params: out of memory");
  p->dev = dev;
  p->ms = ms;
  p->model = m;
  p->n = m->n;
  BS_CHECK(bs_ddp_layout_build(m, dp, bucket_numel, &p->layout));
  BS_CHECK(alloc_buffers(p, buffers_cpu_backup));
  BS_CHECK(mark_padding(p));
  BS_CHECK(place_tensors(p));
  *out = p;
  p = NULL;
out:
  bs_params_destroy(p);
  return st;
}

void bs_params_destroy(bs_params *p) {
  if (!p)
    return;
  for (size_t i = 0; p->t && i < p->n; i++)
    if (p->t[i].buffer < 0 && p->t[i].ptr)
      bs_memsaver_free(p->ms, p->t[i].ptr);
  for (int k = 0; k < BS_BUF_COUNT; k++) {
    if (p->param_buf[k])
      bs_memsaver_free(p->ms, p->param_buf[k]);
    if (p->grad_buf[k])
      bs_memsaver_free(p->ms, p->grad_buf[k]);
  }
  bs_ddp_layout_free(&p->layout);
  free(p->t);
  free(p);
}

/* Hash units u[0..n) as a dtype's values: 0.5 * u for the floats, a small
 * integer for the others. */
static void put_values(bs_dtype dt, float *u, size_t n, void *dst) {
  if (dt == BS_BF16 || dt == BS_F32) {
    for (size_t e = 0; e < n; e++)
      u[e] = 0.5f * u[e];
    if (dt == BS_BF16)
      bs_k_cast_f32_bf16(dst, u, n);
    else
      memcpy(dst, u, n * sizeof *u);
    return;
  }
  for (size_t e = 0; e < n; e++) {
    float k = (u[e] + 1.0f) * 4.0f;
    if (dt == BS_I32)
      ((int32_t *)dst)[e] = (int32_t)k;
    else if (dt == BS_I64)
      ((int64_t *)dst)[e] = (int64_t)k;
    else
      ((uint8_t *)dst)[e] = (uint8_t)k;
  }
}

/* Tensor i's initial values into host memory, a chunk of hash units at a
 * time. */
static void gen_values(const bs_tensor_spec *t, size_t i, uint64_t seed,
                       void *dst) {
  float u[1024];
  size_t size = bs_dtype_size(t->dtype);
  for (size_t at = 0; at < t->numel; at += 1024) {
    size_t n = t->numel - at < 1024 ? t->numel - at : 1024;
    bs_k_grad_hash_units(u, n, seed, FILL_STREAM + i, at);
    put_values(t->dtype, u, n, (char *)dst + at * size);
  }
}

/* Host staging large enough for the largest single upload. */
static size_t staging_bytes(const bs_params *p) {
  size_t max = 0;
  for (int k = 0; k < BS_BUF_COUNT; k++)
    if (p->layout.buf[k].numel * sizeof(float) > max)
      max = p->layout.buf[k].numel * sizeof(float);
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].buffer < 0 && p->t[i].bytes > max)
      max = p->t[i].bytes;
  return max;
}

/* Copy then sync: the staging buffer is reused right after, and the seam
 * does not promise that a copy has consumed its source when it returns.
 * An observer's copy bypasses the fault point. */
static bs_status upload(bs_params *p, bool observe, void *dst, const void *host,
                        size_t bytes) {
  bs_status st = BS_OK;
  BS_CHECK(observe ? bs_dev_copy_observe(p->dev, dst, host, bytes, BS_H2D)
                   : bs_dev_copy(p->dev, dst, host, bytes, BS_H2D));
  BS_CHECK(bs_dev_sync(p->dev));
out:
  return st;
}

static bs_status fill_buffer(bs_params *p, bool observe, int k, uint64_t seed,
                             void *host) {
  bs_status st = BS_OK;
  size_t numel = p->layout.buf[k].numel;
  memset(host, 0, numel * sizeof(float));
  BS_CHECK(upload(p, observe, p->grad_buf[k], host, numel * sizeof(float)));
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].buffer == k)
      gen_values(p->t[i].spec, i, seed, (uint16_t *)host + p->t[i].offset);
  BS_CHECK(upload(p, observe, p->param_buf[k], host, numel * sizeof(uint16_t)));
out:
  return st;
}

static bs_status fill(bs_params *p, bool observe, uint64_t seed) {
  bs_status st = BS_OK;
  void *host = NULL;
  if (!p)
    BS_FAIL(BS_ERR_INVALID, NULL, "params fill: no params");
  if (!(host = malloc(staging_bytes(p))))
    BS_FAIL(BS_ERR_NOMEM, NULL, "params fill: out of host memory");
  for (int k = 0; k < BS_BUF_COUNT; k++)
    if (p->param_buf[k])
      BS_CHECK(fill_buffer(p, observe, k, seed, host));
  for (size_t i = 0; i < p->n; i++) {
    if (p->t[i].buffer >= 0)
      continue;
    gen_values(p->t[i].spec, i, seed, host);
    BS_CHECK(upload(p, observe, p->t[i].ptr, host, p->t[i].bytes));
  }
out:
  free(host);
  return st;
}

bs_status bs_params_fill(bs_params *p, uint64_t seed) {
  return fill(p, false, seed);
}

bs_status bs_params_fill_observe(bs_params *p, uint64_t seed) {
  return fill(p, true, seed);
}

const bs_tensor *bs_params_find(const bs_params *p, const char *name) {
  for (size_t i = 0; p && name && i < p->n; i++)
    if (strcmp(p->t[i].spec->name, name) == 0)
      return &p->t[i];
  return NULL;
}

size_t bs_params_synced(const bs_params *p, const bs_tensor **out, size_t max) {
  size_t n = 0;
  for (size_t i = 0; p && i < p->n; i++) {
    if (!bs_tensor_is_synced(p->t[i].spec))
      continue;
    if (n < max)
      out[n] = &p->t[i];
    n++;
  }
  return n;
}

size_t bs_params_synced_bytes(const bs_params *p) {
  size_t bytes = 0;
  for (size_t i = 0; p && i < p->n; i++)
    if (bs_tensor_is_synced(p->t[i].spec))
      bytes += p->t[i].bytes;
  return bytes;
}
