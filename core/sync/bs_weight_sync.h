/* Weight sync (docs/behavior.md §5 update_weights, §7.2, §7.4): the tensor set
 * from get_actor_weights is streamed to this rank's engine in buckets (a
 * bucket: consecutive tensors up to a byte budget, at least one). Each
 * bucket is first gathered across ranks, as Megatron's tensor-parallel
 * gather does when it converts weights for the engine (each rank gives its
 * 1/N share of the bucket, so the gather grows with the bucket, not with N
 * times it: a world of thousands of ranks fits), so a rank with a
 * different tensor set issues a different number of collectives: the
 * mechanism of the real divergence hang. The fixed core checks the set
 * first (a cross-rank fingerprint of names, dtypes and sizes), then against
 * the model's synced tensors (a tensor dropped on every rank looks uniform).
 *
 * A rank that cannot prepare (its plan or gather buffer) fails on every
 * rank through an agreement before any other collective. A rank that fails
 * later (engine death, a paused read, a copy error) keeps issuing the
 * remaining bucket gathers, so no peer is left waiting; the caller then
 * agrees. Fault sync/tensor_set drops this rank's last
 * tensor. Each tensor goes out with the SHA256 the trainer expects for it
 * (the step's digest), which the engine checks. */
#ifndef BS_WEIGHT_SYNC_H
#define BS_WEIGHT_SYNC_H

#include <stdbool.h>
#include <stddef.h>

#include "backup/bs_backuper.h"
#include "bs_digest.h"
#include "comm/bs_comm.h"
#include "memsaver/bs_memsaver.h"
#include "sync/bs_engine.h"
#include "sync/bs_sync_result.h"

typedef struct bs_ws_opts {
  bs_comm *comm;
  bs_memsaver *ms; /* the gather buffer lives in this memory saver */
  bs_engine *engine;
  size_t bucket_bytes; /* > 0 */
  int cycle;           /* handed to the engine */
  bool check_uniform;  /* the set checks (fingerprint, model) first */
  /* The step's expected SHA256 of each synced tensor, by name. */
  const char *const *expect_names;
  const bs_digest *expect;
  size_t nexpect;
} bs_ws_opts;

/* Streams m. res (may be NULL) is filled when the engine answered. */
bs_status bs_weight_sync(const bs_ws_opts *o, const bs_tensor_map *m,
                         bs_sync_result *res);

/* The bucket plan: bucket k holds tensors [first[k], first[k+1]). Returns
 * the number of buckets; first needs n + 1 entries. */
size_t bs_weight_sync_plan(const bs_tensor_map *m, size_t n,
                           size_t bucket_bytes, size_t *first);

#endif
