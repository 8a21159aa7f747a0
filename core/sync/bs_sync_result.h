/* What the engine reported for the last update_weights: bs_weight_sync
 * fills it, bs_actor_update_weights hands it to its caller. A leaf, so that
 * the actor's face does not carry the weight sync. */
#ifndef BS_SYNC_RESULT_H
#define BS_SYNC_RESULT_H

#include <stddef.h>

#include "bs_digest.h"

typedef struct bs_sync_result {
  size_t ntensors; /* tensors the engine received */
  size_t nbuckets;
  bs_digest *received; /* digests of what it received, sync order */
  char (*names)[96];   /* their names */
} bs_sync_result;
void bs_sync_result_free(bs_sync_result *r);

#endif
