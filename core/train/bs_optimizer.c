/* The distributed (chained) optimizer; the model is described in
 * bs_optimizer.h. Without HDO an inner optimizer is the HDO split with
 * h = d0 = 0 (no host map, the device map covers the whole shard), so the
 * plain and hybrid paths share every line of the step and the copy-back. */
#include "train/bs_optimizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bs_fault.h"
#include "bs_kernels.h"
#include "train/bs_train_testing.h"

/* The rank's shard range of one bucket, placed in the inner shard. */
typedef struct opt_seg {
  size_t first; /* first element in the param/grad buffer */
  size_t off;   /* its shard element */
  size_t count;
} opt_seg;

typedef struct opt_inner {
  int buf;
  size_t b0, nb;   /* the buckets of buf it owns: [b0, b0 + nb) */
  bool hdo;        /* a HybridDeviceOptimizer (host and device maps) */
  uint16_t *param; /* the rank's param buffer (device) */
  opt_seg *seg;
  size_t nseg, n;
  size_t h, d0;   /* host map [0, h), device map [d0, n) */
  float *dmaster; /* device fp32 master of [d0, n) */
  float *dm, *dv; /* device Adam state of [h, n): the overlap has none */
  float *dstage;  /* device staging for the host masters' copy-back */
  float *hmaster, *hm, *hv, *hgrad; /* pinned, h elements each */
  void *pinned;
  size_t pinned_bytes;
} opt_inner;

struct bs_optimizer {
  bs_dev *dev;
  bs_memsaver *ms;
  bs_optimizer_cfg cfg;
  opt_inner *inner;
  size_t ninner;
};

static const char *buf_name(int k) {
  return k == BS_BUF_EXPERT ? "expert" : "dense";
}

/* Clips segment s to shard range [a, b); false when they do not meet. */
static bool seg_clip(const opt_seg *s, size_t a, size_t b, size_t *lo,
                     size_t *count) {
  size_t l = s->off > a ? s->off : a;
  size_t e = s->off + s->count < b ? s->off + s->count : b;
  if (l >= e)
    return false;
  *lo = l;
  *count = e - l;
  return true;
}

/* Buffer element of shard element i (i inside s). */
static size_t seg_pos(const opt_seg *s, size_t i) {
  return s->first + (i - s->off);
}

bs_optimizer_cfg bs_optimizer_cfg_of(const bs_config *c) {
  const bs_sim_config *s = &c->sim;
  return (bs_optimizer_cfg){.lr = (float)s->lr,
                            .beta1 = (float)s->adam_beta1,
                            .beta2 = (float)s->adam_beta2,
                            .eps = (float)s->adam_eps,
                            .weight_decay = (float)s->weight_decay,
                            .precision_aware = c->precision_aware_optimizer,
                            .cpu_offload = c->optimizer_cpu_offload,
                            .offload_fraction = s->offload_fraction,
                            .chunks = s->optimizer_chunks};
}

static bs_status cfg_check(const bs_optimizer_cfg *c) {
  bs_status st = BS_OK;
  if (c->cpu_offload && !c->precision_aware)
    BS_FAIL(BS_ERR_CONFIG, NULL,
            "optimizer CPU offload must be used with the precision-aware "
            "optimizer: the hybrid device optimizer reuses its code path");
  if (c->chunks > BS_OPT_CHUNKS_MAX)
    BS_FAIL(BS_ERR_INVALID, NULL, "optimizer chunks must be in 0..%d, got %zu",
            BS_OPT_CHUNKS_MAX, c->chunks);
  if (c->cpu_offload &&
      !(c->offload_fraction >= 0.0 && c->offload_fraction <= 1.0))
    BS_FAIL(BS_ERR_INVALID, NULL, "offload_fraction must be in [0, 1], got %g",
            c->offload_fraction);
  if (!isfinite(c->lr) || c->lr < 0 || !(c->beta1 >= 0 && c->beta1 < 1) ||
      !(c->beta2 >= 0 && c->beta2 < 1) || !(c->eps > 0) || !isfinite(c->eps) ||
      !isfinite(c->weight_decay) || c->weight_decay < 0)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "Adam hyper-parameters out of range: lr=%g beta1=%g beta2=%g "
            "eps=%g weight_decay=%g",
            c->lr, c->beta1, c->beta2, c->eps, c->weight_decay);
out:
  return st;
}

/* The rank's shard of each bucket it owns, concatenated. */
static bs_status inner_layout(opt_inner *in, const bs_ddp_layout *l, int rank) {
  bs_status st = BS_OK;
  const bs_ddp_buffer *b = &l->buf[in->buf];
  in->seg = calloc(in->nb ? in->nb : 1, sizeof *in->seg);
  if (!in->seg)
    BS_FAIL(BS_ERR_NOMEM, NULL, "optimizer: %zu bucket ranges", in->nb);
  for (size_t i = 0; i < in->nb; i++) {
    opt_seg *s = &in->seg[i];
    bs_ddp_shard(l, in->buf, in->b0 + i, rank, &s->first, &s->count);
    if (s->first + s->count > b->numel)
      BS_FAIL(BS_ERR_INTERNAL, NULL,
              "%s bucket %zu: rank %d shard [%zu, +%zu) past buffer end %zu",
              buf_name(in->buf), in->b0 + i, rank, s->first, s->count,
              b->numel);
    s->off = in->n;
    in->n += s->count;
  }
  in->nseg = in->nb;
out:
  return st;
}

/* The HDO split (h = d0 = 0 without CPU offload). d0 = h / 2 gives a
 * non-empty overlap whenever there is a host map. */
static void inner_split(opt_inner *in, const bs_optimizer_cfg *c) {
  in->hdo = c->cpu_offload;
  if (!in->hdo)
    return;
  in->h = (size_t)llround(c->offload_fraction * (double)in->n);
  if (in->h > in->n)
    in->h = in->n;
  in->d0 = in->h / 2;
}

/* Optimizer state: "default" region. backup=false only for scratch. */
static bs_status dev_floats(bs_memsaver *ms, bool backup, size_t count,
                            float **p) {
  bs_status st = BS_OK;
  void *v = NULL;
  if (count)
    BS_CHECK(bs_memsaver_alloc(ms, BS_TAG_DEFAULT, backup,
                               count * sizeof(float), &v));
out:
  *p = v;
  return st;
}

static bs_status inner_alloc(bs_optimizer *o, opt_inner *in) {
  bs_status st = BS_OK;
  size_t h = in->h;
  BS_CHECK(dev_floats(o->ms, true, in->n - in->d0, &in->dmaster));
  BS_CHECK(dev_floats(o->ms, true, in->n - h, &in->dm));
  BS_CHECK(dev_floats(o->ms, true, in->n - h, &in->dv));
  /* Rewritten before every use: a resume may leave garbage in it. */
  BS_CHECK(dev_floats(o->ms, false, h, &in->dstage));
  if (h) {
    size_t bytes = 4 * h * sizeof(float);
    BS_CHECK(bs_dev_pinned_alloc(o->dev, BS_PIN_OTHER, bytes, &in->pinned));
    in->pinned_bytes = bytes;
    memset(in->pinned, 0, bytes);
    in->hmaster = in->pinned;
    in->hm = in->hmaster + h;
    in->hv = in->hm + h;
    in->hgrad = in->hv + h;
  }
out:
  return st;
}

/* The rank's bf16 shard of the param buffer, to host memory. */
static bs_status read_shard(bs_optimizer *o, const opt_inner *in,
                            uint16_t *dst) {
  bs_status st = BS_OK;
  for (size_t i = 0; i < in->nseg; i++) {
    const opt_seg *s = &in->seg[i];
    if (s->count)
      BS_CHECK(bs_dev_copy(o->dev, dst + s->off, in->param + s->first,
                           s->count * sizeof *dst, BS_D2H));
  }
  BS_CHECK(bs_dev_sync(o->dev));
out:
  return st;
}

/* Masters from the current params cast up; Adam state zero. Device memory
 * has no memset: the zeroes are copied up. */
static bs_status inner_init(bs_optimizer *o, opt_inner *in) {
  bs_status st = BS_OK;
  size_t an = in->n - in->h, dn = in->n - in->d0;
  float *f = calloc(in->n, sizeof *f);
  uint16_t *bf = calloc(in->n, sizeof *bf);
  if (!f || !bf)
    BS_FAIL(BS_ERR_NOMEM, NULL, "optimizer init: %zu elements", in->n);
  if (an) {
    BS_CHECK(bs_dev_copy(o->dev, in->dm, f, an * sizeof *f, BS_H2D));
    BS_CHECK(bs_dev_copy(o->dev, in->dv, f, an * sizeof *f, BS_H2D));
  }
  BS_CHECK(read_shard(o, in, bf)); /* also syncs: f is free to reuse */
  for (size_t i = 0; i < in->n; i++)
    f[i] = bs_k_cast_bf16_to_f32(bf[i]);
  if (dn)
    BS_CHECK(
        bs_dev_copy(o->dev, in->dmaster, f + in->d0, dn * sizeof *f, BS_H2D));
  if (in->h)
    memcpy(in->hmaster, f, in->h * sizeof *f);
  BS_CHECK(bs_dev_sync(o->dev));
out:
  free(f);
  free(bf);
  return st;
}

static bs_status inner_create(bs_optimizer *o, opt_inner *in,
                              const bs_ddp_layout *l, int rank) {
  bs_status st = BS_OK;
  BS_CHECK(inner_layout(in, l, rank));
  inner_split(in, &o->cfg);
  BS_CHECK(inner_alloc(o, in));
  BS_CHECK(inner_init(o, in));
out:
  return st;
}

static void inner_free(bs_optimizer *o, opt_inner *in) {
  float *dev[] = {in->dmaster, in->dm, in->dv, in->dstage};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i])
      bs_memsaver_free(o->ms, dev[i]);
  if (in->pinned)
    bs_dev_pinned_free(o->dev, BS_PIN_OTHER, in->pinned, in->pinned_bytes);
  free(in->seg);
}

/* How many inner optimizers share buffer k: the dense buffer is split
 * into its model chunks, the expert buffer has one. */
static bs_status chunks_of(const bs_optimizer_cfg *c, const bs_ddp_layout *l,
                           int k, size_t *parts) {
  size_t nb = l->buf[k].nbuckets;
  *parts = k == BS_BUF_DENSE && c->chunks > 1 ? c->chunks : 1;
  if (*parts <= nb)
    return BS_OK;
  return bs_err_fail(BS_ERR_CONFIG, NULL,
                     "optimizer: %zu model chunks need as many buckets in the "
                     "%s buffer, it has %zu (lower bucket_numel)",
                     *parts, buf_name(k), nb);
}

bs_status bs_optimizer_layout_check(const bs_optimizer_cfg *c,
                                    const bs_ddp_layout *l) {
  size_t parts;
  return chunks_of(c, l, BS_BUF_DENSE, &parts);
}

/* Buffer k's inner optimizers, each over a contiguous run of its buckets. */
static bs_status chain_buffer(bs_optimizer *o, const bs_ddp_layout *l, int k,
                              uint16_t *param, int rank) {
  bs_status st = BS_OK;
  size_t parts = 1, nb = l->buf[k].nbuckets;
  BS_CHECK(chunks_of(&o->cfg, l, k, &parts));
  for (size_t c = 0; c < parts; c++) {
    opt_inner *in = &o->inner[o->ninner++]; /* counted first: freed on error */
    in->buf = k;
    in->b0 = c * nb / parts;
    in->nb = (c + 1) * nb / parts - in->b0;
    in->param = param;
    BS_CHECK(inner_create(o, in, l, rank));
  }
out:
  return st;
}

bs_status bs_optimizer_create(bs_dev *dev, bs_memsaver *ms,
                              const bs_ddp_layout *l, int rank,
                              const bs_optimizer_cfg *cfg,
                              uint16_t *const param_buf[BS_BUF_COUNT],
                              bs_optimizer **out) {
  bs_status st = BS_OK;
  bs_optimizer *o = NULL;
  if (!out || !dev || !ms || !l || !cfg || !param_buf)
    BS_FAIL(BS_ERR_INVALID, NULL, "optimizer: NULL argument");
  *out = NULL;
  if (rank < 0 || rank >= l->dp)
    BS_FAIL(BS_ERR_INVALID, NULL, "optimizer: rank %d outside dp size %d", rank,
            l->dp);
  BS_CHECK(cfg_check(cfg));
  o = calloc(1, sizeof *o);
  if (!o || !(o->inner = calloc(BS_BUF_COUNT + (cfg->chunks ? cfg->chunks : 1),
                                sizeof *o->inner)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "optimizer: no memory");
  o->dev = dev;
  o->ms = ms;
  o->cfg = *cfg;
  for (int k = 0; k < BS_BUF_COUNT; k++) {
    if (l->buf[k].numel == 0)
      continue;
    if (!param_buf[k])
      BS_FAIL(BS_ERR_INVALID, NULL, "optimizer: no %s param buffer",
              buf_name(k));
    BS_CHECK(chain_buffer(o, l, k, param_buf[k], rank));
  }
  *out = o;
  o = NULL;
out:
  bs_optimizer_destroy(o);
  return st;
}

void bs_optimizer_destroy(bs_optimizer *o) {
  if (!o)
    return;
  for (size_t i = 0; i < o->ninner; i++)
    inner_free(o, &o->inner[i]);
  free(o->inner);
  free(o);
}

/* The CPU Adam of the host map: HDO copies the gradient to the host and
 * steps there, so this runs the host kernel, not the device's. */
static bs_status adam_host(bs_optimizer *o, opt_inner *in, const float *grad,
                           const bs_adam_hp *hp) {
  bs_status st = BS_OK;
  size_t lo, c;
  if (!in->h)
    goto out;
  for (size_t i = 0; i < in->nseg; i++)
    if (seg_clip(&in->seg[i], 0, in->h, &lo, &c))
      BS_CHECK(bs_dev_copy(o->dev, in->hgrad + lo,
                           grad + seg_pos(&in->seg[i], lo), c * sizeof *grad,
                           BS_D2H));
  BS_CHECK(bs_dev_sync(o->dev));
  bs_k_adam(in->hmaster, in->hm, in->hv, in->hgrad, in->h, hp);
out:
  return st;
}

/* Device Adam on [h, n): the overlap [d0, h) is left stale. */
static void adam_dev(bs_optimizer *o, opt_inner *in, const float *grad,
                     const bs_adam_hp *hp) {
  size_t lo, c;
  for (size_t i = 0; i < in->nseg; i++)
    if (seg_clip(&in->seg[i], in->h, in->n, &lo, &c))
      bs_dev_adam(o->dev, in->dmaster + (lo - in->d0), in->dm + (lo - in->h),
                  in->dv + (lo - in->h), grad + seg_pos(&in->seg[i], lo), c,
                  hp);
}

/* Casts src (device fp32 of shard elements [a, b)) into the param slice. */
static void cast_range(bs_optimizer *o, opt_inner *in, const float *src,
                       size_t a, size_t b) {
  size_t lo, c;
  for (size_t i = 0; i < in->nseg; i++)
    if (seg_clip(&in->seg[i], a, b, &lo, &c))
      bs_dev_cast_f32_bf16(o->dev, in->param + seg_pos(&in->seg[i], lo),
                           src + (lo - a), c);
}

/* The two step post-hooks of HDO, in their order: host map first
 * (gpu_params_map_cpu_copy), then the device map (param_to_fp32_param) for
 * the elements not already written, so the host copy wins on the overlap. */
static bs_status copy_back(bs_optimizer *o, opt_inner *in) {
  bs_status st = BS_OK;
  if (in->h) {
    BS_CHECK(bs_dev_copy(o->dev, in->dstage, in->hmaster, in->h * sizeof(float),
                         BS_H2D));
    cast_range(o, in, in->dstage, 0, in->h);
  }
  size_t from = in->h > in->d0 ? in->h : in->d0;
  cast_range(o, in, in->dmaster + (from - in->d0), from, in->n);
out:
  return st;
}

bs_status bs_optimizer_step(bs_optimizer *o,
                            float *const grad_buf[BS_BUF_COUNT], int step) {
  bs_status st = BS_OK;
  if (!o || !grad_buf)
    BS_FAIL(BS_ERR_INVALID, NULL, "optimizer step: NULL argument");
  if (step < 1)
    BS_FAIL(BS_ERR_INVALID, NULL, "optimizer step: step %d, counts from 1",
            step);
  for (size_t i = 0; i < o->ninner; i++)
    if (!grad_buf[o->inner[i].buf])
      BS_FAIL(BS_ERR_INVALID, NULL, "optimizer step: no %s grad buffer",
              buf_name(o->inner[i].buf));
  /* Before any update: a failed step leaves the masters as they were. */
  if (bs_fault_hit(BS_FP_OPTIMIZER_STEP, NULL))
    BS_FAIL(BS_ERR_NOMEM, NULL,
            "optimizer step %d: out of memory (fault optimizer/step)", step);
  const bs_optimizer_cfg *c = &o->cfg;
  bs_adam_hp hp = bs_k_adam_hp_make(c->lr, c->beta1, c->beta2, c->eps,
                                    c->weight_decay, step);
  for (size_t i = 0; i < o->ninner; i++) {
    opt_inner *in = &o->inner[i];
    BS_CHECK(adam_host(o, in, grad_buf[in->buf], &hp));
    adam_dev(o, in, grad_buf[in->buf], &hp);
    BS_CHECK(copy_back(o, in));
  }
  BS_CHECK(bs_dev_sync(o->dev));
out:
  return st;
}

bs_status bs_optimizer_cast_to_params(bs_optimizer *o) {
  bs_status st = BS_OK;
  if (!o)
    BS_FAIL(BS_ERR_INVALID, NULL, "optimizer cast: NULL optimizer");
  BS_CHECK(bs_optimizer_check_rebuildable(o));
  for (size_t i = 0; i < o->ninner; i++)
    BS_CHECK(copy_back(o, &o->inner[i]));
  BS_CHECK(bs_dev_sync(o->dev));
out:
  return st;
}

/* Before any cast: nothing is written unless every inner one can cast. */
bs_status bs_optimizer_check_rebuildable(const bs_optimizer *o) {
  bs_status st = BS_OK;
  if (!o)
    BS_FAIL(BS_ERR_INVALID, NULL, "optimizer: none");
  for (size_t i = 0; o->cfg.precision_aware && i < o->ninner; i++)
    if (!o->inner[i].hdo)
      BS_FAIL(BS_ERR_UNSUPPORTED, NULL,
              "precision-aware optimizer: inner optimizer %zu (%s buckets "
              "%zu..%zu) is not a HybridDeviceOptimizer; it keeps the master "
              "as bf16 param + int16 remainder, nothing to rebuild from",
              i, buf_name(o->inner[i].buf), o->inner[i].b0,
              o->inner[i].b0 + o->inner[i].nb - 1);
out:
  return st;
}

size_t bs_optimizer_num_inner(const bs_optimizer *o) {
  return o ? o->ninner : 0;
}

static bs_status inner_get(const bs_optimizer *o, int inner) {
  bs_status st = BS_OK;
  if (!o || inner < 0 || (size_t)inner >= o->ninner)
    BS_FAIL(BS_ERR_INVALID, NULL, "optimizer: no inner optimizer %d (of %zu)",
            inner, o ? o->ninner : 0);
out:
  return st;
}

bs_status bs_optimizer_master_ptr(bs_optimizer *o, int inner, float **master,
                                  size_t *n) {
  bs_status st = BS_OK;
  BS_CHECK(inner_get(o, inner));
  if (!master || !n)
    BS_FAIL(BS_ERR_INVALID, NULL, "optimizer master: NULL argument");
  const opt_inner *in = &o->inner[inner];
  *master = in->dmaster + (in->h - in->d0);
  *n = in->n - in->h;
out:
  return st;
}

bs_status bs_optimizer_view_get(const bs_optimizer *o, int inner,
                                bs_optimizer_view *out) {
  bs_status st = BS_OK;
  BS_CHECK(inner_get(o, inner));
  if (!out)
    BS_FAIL(BS_ERR_INVALID, NULL, "optimizer view: NULL argument");
  const opt_inner *in = &o->inner[inner];
  *out = (bs_optimizer_view){.buf = in->buf,
                             .first_bucket = in->b0,
                             .nbuckets = in->nb,
                             .hdo = in->hdo,
                             .n = in->n,
                             .host = in->hmaster,
                             .host_n = in->h,
                             .dev = in->dmaster,
                             .dev_first = in->d0};
out:
  return st;
}

size_t bs_optimizer_host_master_bytes(const bs_optimizer *o) {
  size_t bytes = 0;
  for (size_t i = 0; o && i < o->ninner; i++)
    bytes += o->inner[i].pinned_bytes;
  return bytes;
}
