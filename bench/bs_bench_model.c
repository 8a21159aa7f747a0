/* The model a bench run measures: a preset or file, or by default a
 * synthetic GPT ("bench") whose many similar tensors are what a real model
 * looks like to the per-tensor hashing (the presets have so few tensors
 * that the largest one bounds any parallel speed-up). Sizes go through the
 * model parser's own scale factor, which multiplies every first dimension,
 * so the byte count grows linearly with it. */
#include <stdlib.h>
#include <string.h>

#include "bs_bench.h"
#include "bs_buf.h"
#include "model/bs_model_parse.h"

enum { BENCH_LAYERS = 32, BENCH_HIDDEN = 64, BENCH_VOCAB = 4 * BENCH_HIDDEN };

#define GB 1e9
#define HOST_DEFAULT_GB 0.25
#define CUDA_DEFAULT_GB 4.0

/* One transformer layer in Megatron's naming (TE fused layer norms, SwiGLU
 * fc1): about 16 H^2 elements. */
static void layer_text(bs_buf *b, int l) {
  const int h = BENCH_HIDDEN;
  const char *p = "decoder.layers.";
  bs_buf_printf(b, "%s%d.self_attention.linear_qkv.layer_norm_weight bf16 %d\n",
                p, l, h);
  bs_buf_printf(b, "%s%d.self_attention.linear_qkv.weight bf16 %dx%d\n", p, l,
                3 * h, h);
  bs_buf_printf(b, "%s%d.self_attention.linear_proj.weight bf16 %dx%d\n", p, l,
                h, h);
  bs_buf_printf(b, "%s%d.mlp.linear_fc1.layer_norm_weight bf16 %d\n", p, l, h);
  bs_buf_printf(b, "%s%d.mlp.linear_fc1.weight bf16 %dx%d\n", p, l, 8 * h, h);
  bs_buf_printf(b, "%s%d.mlp.linear_fc2.weight bf16 %dx%d\n", p, l, h, 4 * h);
}

static char *synthetic_text(void) {
  bs_buf b = {0};
  bs_buf_printf(&b, "model bench\n");
  bs_buf_printf(&b, "embedding.word_embeddings.weight bf16 %dx%d\n",
                BENCH_VOCAB, BENCH_HIDDEN);
  for (int l = 0; l < BENCH_LAYERS; l++)
    layer_text(&b, l);
  bs_buf_printf(&b, "decoder.final_layernorm.weight bf16 %d\n", BENCH_HIDDEN);
  bs_buf_printf(&b, "output_layer.weight bf16 %dx%d\n", BENCH_VOCAB,
                BENCH_HIDDEN);
  return bs_buf_take(&b);
}

static bs_status load(const char *model, double scale, bs_model_spec *out) {
  bs_status st = BS_OK;
  char *text = NULL;
  if (model && strcmp(model, "bench") != 0) {
    BS_CHECK(bs_model_load(model, scale, out));
    goto out;
  }
  if (!(text = synthetic_text()))
    BS_FAIL(BS_ERR_NOMEM, NULL, "bench model: out of memory");
  BS_CHECK(bs_model_parse(text, "bench", scale, out));
out:
  free(text);
  return st;
}

/* What one Normal backup copies: the synced tensors. */
static size_t synced_bytes(const bs_model_spec *m) {
  size_t n = 0;
  for (size_t i = 0; i < m->n; i++)
    if (bs_tensor_is_synced(&m->t[i]))
      n += bs_tensor_bytes(&m->t[i]);
  return n;
}

static double target_gb(const bs_bench_opts *o) {
  if (o->gb > 0)
    return o->gb;
  return strcmp(o->device, "cuda") == 0 ? CUDA_DEFAULT_GB : HOST_DEFAULT_GB;
}

bs_status bs_bench_model(bs_bench_opts *o, bs_model_spec *out) {
  bs_status st = BS_OK;
  bs_model_spec unit = {0};
  if (!o || !out || !o->device)
    BS_FAIL(BS_ERR_INVALID, NULL, "bench model: NULL argument");
  if (o->scale > 0) {
    BS_CHECK(load(o->model, o->scale, out));
    goto out;
  }
  BS_CHECK(load(o->model, 1.0, &unit));
  size_t unit_bytes = synced_bytes(&unit);
  if (unit_bytes == 0)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "model %s: no synced tensors, nothing to back up", unit.name);
  o->scale = target_gb(o) * GB / (double)unit_bytes;
  BS_CHECK(load(o->model, o->scale, out));
out:
  bs_model_free(&unit);
  return st;
}
