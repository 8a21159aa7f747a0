/* The compiled-in presets: texts in the model-spec format, so that a preset
 * and a file go through the same parser. Kept small at scale 1 (the CPU suite
 * runs every preset many times) with sizes that are not multiples of the DP
 * sizes, so bucket padding is always exercised. */
#include <stdio.h>
#include <string.h>

#include "model/bs_model.h"

/* A one-layer toy: bf16 params, one fp32 param (gpt-oss style attention
 * sinks), one expert_bias buffer. Odd sizes so that every DP size pads. */
static const char tiny_text[] =
    "model tiny\n"
    "embedding.word_embeddings.weight bf16 61x13\n"
    "decoder.layers.0.self_attention.linear_qkv.weight bf16 39x13\n"
    "decoder.layers.0.self_attention.linear_proj.weight bf16 13x13\n"
    "decoder.layers.0.self_attention.core_attention.softmax_offset fp32 3 "
    "fp32\n"
    "decoder.layers.0.mlp.linear_fc1.weight bf16 23x13\n"
    "decoder.layers.0.mlp.linear_fc2.weight bf16 13x23\n"
    "decoder.layers.0.mlp.router.expert_bias fp32 5 buffer expert_bias\n"
    "decoder.final_layernorm.weight bf16 13\n"
    "output_layer.weight bf16 61x13\n";

/* A small GPT in Megatron naming (TE fused layer norms, SwiGLU fc1). */
static const char dense_text[] =
    "model dense\n"
    "embedding.word_embeddings.weight bf16 211x29\n"
    "decoder.layers.0.self_attention.linear_qkv.layer_norm_weight bf16 29\n"
    "decoder.layers.0.self_attention.linear_qkv.weight bf16 87x29\n"
    "decoder.layers.0.self_attention.linear_proj.weight bf16 29x29\n"
    "decoder.layers.0.mlp.linear_fc1.layer_norm_weight bf16 29\n"
    "decoder.layers.0.mlp.linear_fc1.weight bf16 154x29\n"
    "decoder.layers.0.mlp.linear_fc2.weight bf16 29x77\n"
    "decoder.layers.1.self_attention.linear_qkv.layer_norm_weight bf16 29\n"
    "decoder.layers.1.self_attention.linear_qkv.weight bf16 87x29\n"
    "decoder.layers.1.self_attention.linear_proj.weight bf16 29x29\n"
    "decoder.layers.1.mlp.linear_fc1.layer_norm_weight bf16 29\n"
    "decoder.layers.1.mlp.linear_fc1.weight bf16 154x29\n"
    "decoder.layers.1.mlp.linear_fc2.weight bf16 29x77\n"
    "decoder.final_layernorm.weight bf16 29\n"
    "output_layer.weight bf16 211x29\n";

/* Dense attention, grouped experts (expert-parallel buffer), a trainable
 * router and an expert_bias buffer per MoE layer, an fp32 param. */
static const char moe_text[] =
    "model moe\n"
    "embedding.word_embeddings.weight bf16 211x29\n"
    "decoder.layers.0.self_attention.linear_qkv.layer_norm_weight bf16 29\n"
    "decoder.layers.0.self_attention.linear_qkv.weight bf16 87x29\n"
    "decoder.layers.0.self_attention.linear_proj.weight bf16 29x29\n"
    "decoder.layers.0.self_attention.core_attention.softmax_offset fp32 3 "
    "fp32\n"
    "decoder.layers.0.mlp.linear_fc1.layer_norm_weight bf16 29\n"
    "decoder.layers.0.mlp.router.weight bf16 3x29\n"
    "decoder.layers.0.mlp.experts.linear_fc1.weight0 bf16 26x29 expert\n"
    "decoder.layers.0.mlp.experts.linear_fc1.weight1 bf16 26x29 expert\n"
    "decoder.layers.0.mlp.experts.linear_fc1.weight2 bf16 26x29 expert\n"
    "decoder.layers.0.mlp.experts.linear_fc2.weight0 bf16 29x13 expert\n"
    "decoder.layers.0.mlp.experts.linear_fc2.weight1 bf16 29x13 expert\n"
    "decoder.layers.0.mlp.experts.linear_fc2.weight2 bf16 29x13 expert\n"
    "decoder.layers.0.mlp.router.expert_bias fp32 3 buffer expert_bias\n"
    "decoder.layers.1.self_attention.linear_qkv.layer_norm_weight bf16 29\n"
    "decoder.layers.1.self_attention.linear_qkv.weight bf16 87x29\n"
    "decoder.layers.1.self_attention.linear_proj.weight bf16 29x29\n"
    "decoder.layers.1.mlp.linear_fc1.layer_norm_weight bf16 29\n"
    "decoder.layers.1.mlp.router.weight bf16 4x29\n"
    "decoder.layers.1.mlp.experts.linear_fc1.weight0 bf16 26x29 expert\n"
    "decoder.layers.1.mlp.experts.linear_fc1.weight1 bf16 26x29 expert\n"
    "decoder.layers.1.mlp.experts.linear_fc1.weight2 bf16 26x29 expert\n"
    "decoder.layers.1.mlp.experts.linear_fc1.weight3 bf16 26x29 expert\n"
    "decoder.layers.1.mlp.experts.linear_fc2.weight0 bf16 29x13 expert\n"
    "decoder.layers.1.mlp.experts.linear_fc2.weight1 bf16 29x13 expert\n"
    "decoder.layers.1.mlp.experts.linear_fc2.weight2 bf16 29x13 expert\n"
    "decoder.layers.1.mlp.experts.linear_fc2.weight3 bf16 29x13 expert\n"
    "decoder.layers.1.mlp.router.expert_bias fp32 4 buffer expert_bias\n"
    "decoder.final_layernorm.weight bf16 29\n"
    "output_layer.weight bf16 211x29\n";

/* Frozen params that must survive every cycle as extras: inkling's
 * rel_proj (frozen bf16), and deepseek-v4's hash-routed layer with a frozen
 * mlp.router.weight and a frozen int32 tid2eid table (token id -> experts). */
static const char frozen_text[] =
    "model frozen\n"
    "embedding.word_embeddings.weight bf16 211x29\n"
    "decoder.layers.0.self_attention.linear_qkv.layer_norm_weight bf16 29\n"
    "decoder.layers.0.self_attention.linear_qkv.weight bf16 87x29\n"
    "decoder.layers.0.self_attention.rel_proj.weight bf16 29x7 frozen\n"
    "decoder.layers.0.self_attention.linear_proj.weight bf16 29x29\n"
    "decoder.layers.0.mlp.linear_fc1.layer_norm_weight bf16 29\n"
    "decoder.layers.0.mlp.router.weight bf16 4x29 frozen\n"
    "decoder.layers.0.mlp.router.tid2eid int32 211x2 frozen\n"
    "decoder.layers.0.mlp.experts.linear_fc1.weight0 bf16 26x29 expert\n"
    "decoder.layers.0.mlp.experts.linear_fc1.weight1 bf16 26x29 expert\n"
    "decoder.layers.0.mlp.experts.linear_fc1.weight2 bf16 26x29 expert\n"
    "decoder.layers.0.mlp.experts.linear_fc1.weight3 bf16 26x29 expert\n"
    "decoder.layers.0.mlp.experts.linear_fc2.weight0 bf16 29x13 expert\n"
    "decoder.layers.0.mlp.experts.linear_fc2.weight1 bf16 29x13 expert\n"
    "decoder.layers.0.mlp.experts.linear_fc2.weight2 bf16 29x13 expert\n"
    "decoder.layers.0.mlp.experts.linear_fc2.weight3 bf16 29x13 expert\n"
    "decoder.layers.1.self_attention.linear_qkv.layer_norm_weight bf16 29\n"
    "decoder.layers.1.self_attention.linear_qkv.weight bf16 87x29\n"
    "decoder.layers.1.self_attention.rel_proj.weight bf16 29x7 frozen\n"
    "decoder.layers.1.self_attention.linear_proj.weight bf16 29x29\n"
    "decoder.layers.1.mlp.linear_fc1.layer_norm_weight bf16 29\n"
    "decoder.layers.1.mlp.router.weight bf16 3x29\n"
    "decoder.layers.1.mlp.experts.linear_fc1.weight0 bf16 26x29 expert\n"
    "decoder.layers.1.mlp.experts.linear_fc1.weight1 bf16 26x29 expert\n"
    "decoder.layers.1.mlp.experts.linear_fc1.weight2 bf16 26x29 expert\n"
    "decoder.layers.1.mlp.experts.linear_fc2.weight0 bf16 29x13 expert\n"
    "decoder.layers.1.mlp.experts.linear_fc2.weight1 bf16 29x13 expert\n"
    "decoder.layers.1.mlp.experts.linear_fc2.weight2 bf16 29x13 expert\n"
    "decoder.layers.1.mlp.router.expert_bias fp32 3 buffer expert_bias\n"
    "decoder.final_layernorm.weight bf16 29\n"
    "output_layer.weight bf16 211x29\n";

/* Colocated LoRA: every base weight frozen, trainable lora_A/lora_B
 * adapters (rank 3) on qkv and proj of both layers and on fc1 of layer 1. */
static const char lora_text[] =
    "model lora\n"
    "embedding.word_embeddings.weight bf16 211x29 frozen\n"
    "decoder.layers.0.self_attention.linear_qkv.layer_norm_weight bf16 29 "
    "frozen\n"
    "decoder.layers.0.self_attention.linear_qkv.weight bf16 87x29 frozen\n"
    "decoder.layers.0.self_attention.linear_qkv.lora_A.weight bf16 3x29 lora\n"
    "decoder.layers.0.self_attention.linear_qkv.lora_B.weight bf16 87x3 lora\n"
    "decoder.layers.0.self_attention.linear_proj.weight bf16 29x29 frozen\n"
    "decoder.layers.0.self_attention.linear_proj.lora_A.weight bf16 3x29 lora\n"
    "decoder.layers.0.self_attention.linear_proj.lora_B.weight bf16 29x3 lora\n"
    "decoder.layers.0.mlp.linear_fc1.layer_norm_weight bf16 29 frozen\n"
    "decoder.layers.0.mlp.linear_fc1.weight bf16 154x29 frozen\n"
    "decoder.layers.0.mlp.linear_fc2.weight bf16 29x77 frozen\n"
    "decoder.layers.1.self_attention.linear_qkv.layer_norm_weight bf16 29 "
    "frozen\n"
    "decoder.layers.1.self_attention.linear_qkv.weight bf16 87x29 frozen\n"
    "decoder.layers.1.self_attention.linear_qkv.lora_A.weight bf16 3x29 lora\n"
    "decoder.layers.1.self_attention.linear_qkv.lora_B.weight bf16 87x3 lora\n"
    "decoder.layers.1.self_attention.linear_proj.weight bf16 29x29 frozen\n"
    "decoder.layers.1.self_attention.linear_proj.lora_A.weight bf16 3x29 lora\n"
    "decoder.layers.1.self_attention.linear_proj.lora_B.weight bf16 29x3 lora\n"
    "decoder.layers.1.mlp.linear_fc1.layer_norm_weight bf16 29 frozen\n"
    "decoder.layers.1.mlp.linear_fc1.weight bf16 154x29 frozen\n"
    "decoder.layers.1.mlp.linear_fc1.lora_A.weight bf16 3x29 lora\n"
    "decoder.layers.1.mlp.linear_fc1.lora_B.weight bf16 154x3 lora\n"
    "decoder.layers.1.mlp.linear_fc2.weight bf16 29x77 frozen\n"
    "decoder.final_layernorm.weight bf16 29 frozen\n"
    "output_layer.weight bf16 211x29 frozen\n";

static const struct {
  const char *name;
  const char *text;
} presets[] = {
    {"tiny", tiny_text},     {"dense", dense_text}, {"moe", moe_text},
    {"frozen", frozen_text}, {"lora", lora_text},
};
#define NPRESETS (sizeof presets / sizeof presets[0])

static const char *const preset_names[NPRESETS + 1] = {"tiny",   "dense", "moe",
                                                       "frozen", "lora",  NULL};

const char *const *bs_model_preset_list(void) {
  return preset_names;
}

const char *bs_model_preset_text(const char *name) {
  for (size_t i = 0; name && i < NPRESETS; i++)
    if (strcmp(presets[i].name, name) == 0)
      return presets[i].text;
  return NULL;
}
