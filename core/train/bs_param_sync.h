/* The DDP collectives of a training step (docs/behavior.md §3), per bucket and
 * in place, identical on every rank: the reduce-scatter of the fp32 grad
 * buffers (each rank gets the summed gradient of its shard) and the
 * all-gather of the bf16 param buffers (start_param_sync: every rank has
 * every param again). MainCast's restore reuses the all-gather. */
#ifndef BS_PARAM_SYNC_H
#define BS_PARAM_SYNC_H

#include "comm/bs_comm.h"
#include "model/bs_params.h"

/* Each bucket's grads are made by make(ctx, buffer, bucket) as its
 * reduce-scatter begins (bs_comm_reduce_scatter_made): a rank holds one
 * bucket of grads at a time, as Megatron's backward hooks hand each bucket
 * to its reduce-scatter once ready. */
typedef void (*bs_grads_make)(void *ctx, int buffer, size_t bucket);
bs_status bs_param_sync_grads(bs_comm *c, bs_params *p, bs_grads_make make,
                              void *ctx);
bs_status bs_param_sync_params(bs_comm *c, bs_params *p);

#endif
