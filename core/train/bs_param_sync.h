/* The DDP collectives of a training step (docs/behavior.md §3), per bucket and
 * in place, identical on every rank: the reduce-scatter of the fp32 grad
 * buffers (each rank gets the summed gradient of its shard) and the
 * all-gather of the bf16 param buffers (start_param_sync: every rank has
 * every param again). MainCast's restore reuses the all-gather. */
#ifndef BS_PARAM_SYNC_H
#define BS_PARAM_SYNC_H

#include "comm/bs_comm.h"
#include "model/bs_params.h"

bs_status bs_param_sync_grads(bs_comm *c, bs_params *p);
bs_status bs_param_sync_params(bs_comm *c, bs_params *p);

#endif
