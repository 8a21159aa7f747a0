/* DDP buffer layout (bs_ddp.h). Tensors go into their buffer in spec order;
 * a bucket closes once it holds at least bucket_numel elements and is padded
 * to a multiple of dp so that every rank's shard has the same size. */
#include "model/bs_ddp.h"

#include <stdlib.h>
#include <string.h>

#include "bs_limits.h"
#include "bs_vec.h"

#define DP_MAX BS_WORLD_MAX_RANKS

static int buffer_of(const bs_tensor_spec *t) {
  if (!bs_tensor_in_ddp(t))
    return -1;
  return (t->flags & BS_TF_EXPERT) ? BS_BUF_EXPERT : BS_BUF_DENSE;
}

/* Pads the open bucket [start, *end) and appends it. */
static bs_status close_bucket(bs_ddp_buffer *b, int dp, size_t start,
                              size_t *end) {
  bs_status st = BS_OK;
  size_t numel = (*end - start + (size_t)dp - 1) / (size_t)dp * (size_t)dp;
  bs_ddp_bucket nb = {.offset = start,
                      .numel = numel,
                      .used = *end - start,
                      .shard = numel / (size_t)dp};
  BS_CHECK(bs_vec_push(&b->buckets, &b->nbuckets, NULL, &nb, sizeof nb,
                       "ddp layout"));
  *end = start + numel;
  b->numel = *end;
out:
  return st;
}

static bs_status build_buffer(const bs_model_spec *m, int k, size_t target,
                              bs_ddp_layout *l) {
  bs_status st = BS_OK;
  bs_ddp_buffer *b = &l->buf[k];
  size_t start = 0, end = 0;
  for (size_t i = 0; i < m->n; i++) {
    if (buffer_of(&m->t[i]) != k)
      continue;
    l->slot[i] =
        (bs_ddp_slot){.buffer = k, .bucket = (int)b->nbuckets, .offset = end};
    end += m->t[i].numel;
    if (target && end - start >= target) {
      BS_CHECK(close_bucket(b, l->dp, start, &end));
      start = end;
    }
  }
  if (end > start)
    BS_CHECK(close_bucket(b, l->dp, start, &end));
out:
  return st;
}

bs_status bs_ddp_layout_build(const bs_model_spec *m, int dp,
                              size_t bucket_numel, bs_ddp_layout *out) {
  bs_status st = BS_OK;
  bs_ddp_layout l = {.dp = dp};
  if (!m || !out || m->n == 0)
    BS_FAIL(BS_ERR_INVALID, NULL, "ddp layout: expected a non-empty model");
  if (dp < 1 || dp > DP_MAX)
    BS_FAIL(BS_ERR_INVALID, NULL, "ddp layout: expected dp in 1..%d, got %d",
            DP_MAX, dp);
  if (!(l.slot = malloc(m->n * sizeof *l.slot)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "ddp layout: out of memory");
  l.n = m->n;
  for (size_t i = 0; i < m->n; i++)
    l.slot[i] = (bs_ddp_slot){.buffer = -1, .bucket = -1, .offset = 0};
  for (int k = 0; k < BS_BUF_COUNT; k++)
    BS_CHECK(build_buffer(m, k, bucket_numel, &l));
out:
  if (st == BS_OK)
    *out = l;
  else
    bs_ddp_layout_free(&l);
  return st;
}

void bs_ddp_layout_free(bs_ddp_layout *l) {
  if (!l)
    return;
  for (int k = 0; k < BS_BUF_COUNT; k++)
    free(l->buf[k].buckets);
  free(l->slot);
  memset(l, 0, sizeof *l);
}

size_t bs_ddp_bucket_numel(size_t bucket_numel, int dp) {
  return dp > 0 && (size_t)dp > bucket_numel ? (size_t)dp : bucket_numel;
}

void bs_ddp_shard(const bs_ddp_layout *l, int k, size_t b, int rank,
                  size_t *first, size_t *count) {
  *first = 0;
  *count = 0;
  if (k < 0 || k >= BS_BUF_COUNT || b >= l->buf[k].nbuckets || rank < 0 ||
      rank >= l->dp)
    return;
  const bs_ddp_bucket *bk = &l->buf[k].buckets[b];
  *first = bk->offset + (size_t)rank * bk->shard;
  *count = bk->shard;
}

size_t bs_ddp_shard_numel(const bs_ddp_layout *l, int k) {
  size_t n = 0;
  if (k < 0 || k >= BS_BUF_COUNT)
    return 0;
  for (size_t b = 0; b < l->buf[k].nbuckets; b++)
    n += l->buf[k].buckets[b].shard;
  return n;
}
