/* Per-bucket in-place collectives over the DDP buffers (bs_param_sync.h).
 * Collective errors are the world's, not the rank's: every rank sees one,
 * so stopping at the first keeps the schedule uniform. */
#include "train/bs_param_sync.h"

static bs_status check_args(const bs_comm *c, const bs_params *p) {
  if (!c || !p)
    return bs_err_fail(BS_ERR_INVALID, NULL, "param sync: NULL argument");
  if (p->layout.dp != bs_comm_size(c))
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "param sync: layout for dp %d, communicator of %d ranks",
                       p->layout.dp, bs_comm_size(c));
  return BS_OK;
}

/* One bucket for its reduce-scatter's make. */
typedef struct bucket_of {
  bs_grads_make make;
  void *ctx;
  int buffer;
  size_t bucket;
} bucket_of;

static void make_bucket(void *ctx) {
  const bucket_of *b = ctx;
  b->make(b->ctx, b->buffer, b->bucket);
}

bs_status bs_param_sync_grads(bs_comm *c, bs_params *p, bs_grads_make make,
                              void *ctx) {
  bs_status st = BS_OK;
  BS_CHECK(check_args(c, p));
  if (!make)
    BS_FAIL(BS_ERR_INVALID, NULL, "param sync: no maker of the grads");
  size_t r = (size_t)bs_comm_rank(c);
  for (int k = 0; k < BS_BUF_COUNT; k++) {
    const bs_ddp_buffer *b = &p->layout.buf[k];
    for (size_t i = 0; p->grad_buf[k] && i < b->nbuckets; i++) {
      float *base = p->grad_buf[k] + b->buckets[i].offset;
      size_t shard = b->buckets[i].shard;
      bucket_of one = {make, ctx, k, i};
      BS_CHECK(bs_comm_reduce_scatter_made(c, make_bucket, &one, base,
                                           base + r * shard, shard, BS_F32));
    }
  }
out:
  return st;
}

bs_status bs_param_sync_params(bs_comm *c, bs_params *p) {
  bs_status st = BS_OK;
  BS_CHECK(check_args(c, p));
  size_t r = (size_t)bs_comm_rank(c);
  for (int k = 0; k < BS_BUF_COUNT; k++) {
    const bs_ddp_buffer *b = &p->layout.buf[k];
    for (size_t i = 0; p->param_buf[k] && i < b->nbuckets; i++) {
      uint16_t *base = p->param_buf[k] + b->buckets[i].offset;
      size_t shard = b->buckets[i].shard;
      BS_CHECK(bs_comm_all_gather(c, base + r * shard, base, shard, BS_BF16));
    }
  }
out:
  return st;
}
