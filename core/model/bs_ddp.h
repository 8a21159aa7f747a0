/* DDP layout: dense and expert-parallel param buffers (bf16) with grad
 * buffers of the same layout, split into buckets, each bucket padded to a
 * multiple of the DP size; the distributed optimizer gives rank r the r-th
 * contiguous shard of every bucket. Frozen, fp32 and buffer tensors are
 * outside the buffers. Pure layout: no memory here. */
#ifndef BS_DDP_H
#define BS_DDP_H

#include <stddef.h>

#include "model/bs_model.h"

enum { BS_BUF_DENSE = 0, BS_BUF_EXPERT = 1, BS_BUF_COUNT = 2 };

typedef struct bs_ddp_bucket {
  size_t offset; /* first element in the buffer */
  size_t numel;  /* padded: a multiple of dp */
  size_t used;   /* its tensors' elements, from offset on; the rest padding */
  size_t shard;  /* numel / dp: each rank's share */
} bs_ddp_bucket;

typedef struct bs_ddp_buffer {
  size_t numel; /* sum of padded buckets */
  bs_ddp_bucket *buckets;
  size_t nbuckets;
} bs_ddp_buffer;

typedef struct bs_ddp_slot {
  int buffer; /* BS_BUF_DENSE/EXPERT, or -1 when outside the buffers */
  int bucket;
  size_t offset; /* element offset of the tensor in its buffer */
} bs_ddp_slot;

typedef struct bs_ddp_layout {
  int dp;
  bs_ddp_buffer buf[BS_BUF_COUNT];
  bs_ddp_slot *slot; /* one per model tensor, same order as the spec */
  size_t n;
} bs_ddp_layout;

/* bucket_numel: target elements per bucket before padding (a tensor is never
 * split across buckets; a bucket closes once it reaches the target). */
bs_status bs_ddp_layout_build(const bs_model_spec *m, int dp,
                              size_t bucket_numel, bs_ddp_layout *out);
void bs_ddp_layout_free(bs_ddp_layout *l);

/* The bucket target a world of dp ranks uses: at least one element a rank,
 * as Megatron's default bucket grows with the DP size (max(40M, 1M x dp)
 * elements). Below it every bucket of a small model is mostly padding past
 * some thousands of ranks: 5 buckets of the moe preset padded to 16,384
 * ranks each were 3 times its 27,234 elements, in every rank's buffers. */
size_t bs_ddp_bucket_numel(size_t bucket_numel, int dp);

/* Rank r's shard of bucket b of buffer k: [*first, *first + *count). */
void bs_ddp_shard(const bs_ddp_layout *l, int k, size_t b, int rank,
                  size_t *first, size_t *count);
/* Elements rank r owns in buffer k (sum over buckets). */
size_t bs_ddp_shard_numel(const bs_ddp_layout *l, int k);

#endif
