/* The sync source of the MainCast backuper (docs/behavior.md §4): every synced
 * tensor of the params (each param and the expert_bias buffers, global
 * names, spec order), read afresh at every call, as miles' source getter
 * is, instead of a list fixed at init. A tensor that joins or leaves the
 * source after a backup is then what the next get, restore and check see.
 *
 * Fault source/change, checked after every backup("actor"): failinfo 0 makes
 * a late expert_bias buffer join (its own allocation in "default", as any
 * module buffer), anything else makes the source's last tensor leave; either
 * stays so for the rest of the run. */
#ifndef BS_SOURCE_H
#define BS_SOURCE_H

#include <stddef.h>

#include "bs_err.h"

/* The name of the tensor the fault makes join (a scenario's expectation
 * names it: bs_core_testing.h carries this header). */
#define BS_SOURCE_LATE_NAME "decoder.layers.0.mlp.late_router.expert_bias"

/* The params' types, opaque here (model/bs_params.h). */
typedef struct bs_params bs_params;
typedef struct bs_tensor bs_tensor;

typedef struct bs_source bs_source;

bs_status bs_source_create(bs_params *p, bs_source **out);
void bs_source_destroy(bs_source *s);

/* The source now, into a fresh array (*out: free() it; never NULL on
 * success). */
bs_status bs_source_list(const bs_source *s, const bs_tensor ***out, size_t *n);

/* After a backup: where fault source/change fires. */
bs_status bs_source_after_backup(bs_source *s);

#endif
