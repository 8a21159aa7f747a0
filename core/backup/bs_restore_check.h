/* The SHA256 check of MainCast's round trip (docs/behavior.md §4,
 * --check-rematerialize-param-from-master-weight, forced on by --ci-test).
 * Every backup of "actor" either takes the expected hashes (the first
 * BS_RCHECK_CYCLES backups: every source tensor hashed) or clears them
 * (every later backup). Every restore compares against the hashes held and
 * keeps them: they stay until the next backup, so two restores after one
 * backup are both checked, and so is the first restore after a sleep,
 * update_weights and wake_up. A changed tensor set is BS_ERR_TENSOR_SET
 * "... changed the tensor set ..."; changed bytes are BS_ERR_HASH_MISMATCH
 * "restore is not bit-identical to the backup for k/N tensors (cycle c):
 * first <name>", c being the backup the hashes came from. Mutant
 * check-window-cleared drops the hashes at the first restore instead.
 *
 * Also the tensor digests it is built on: SHA256 of each tensor's raw
 * device bytes, staged to the host through the device seam. */
#ifndef BS_RESTORE_CHECK_H
#define BS_RESTORE_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_digest.h"
#include "model/bs_params.h"

#define BS_RCHECK_CYCLES 2

/* SHA256 of each tensor's bytes as they are on the device now. With ms, a
 * tensor in a PAUSED allocation is not read: it gets an all-zero digest and
 * is counted in *npaused (npaused may be NULL). Without ms every tensor is
 * read (a paused one faults, as any read of it would). */
bs_status bs_restore_check_hash(bs_dev *dev, const bs_memsaver *ms,
                                const bs_tensor *const *t, size_t n,
                                bs_digest *out, size_t *npaused);

/* The same for an observer (the oracles' snapshots): the reads bypass the
 * fault points, so looking at the weights never fires an armed fault nor
 * counts towards its nth. */
bs_status bs_restore_check_hash_observe(bs_dev *dev, const bs_memsaver *ms,
                                        const bs_tensor *const *t, size_t n,
                                        bs_digest *out, size_t *npaused);
/* Its staging alone, for an observer that hashes elsewhere: the readable
 * tensors' bytes one after the other in host (room for all of them);
 * skipped[i] marks a paused one, not staged. */
bs_status bs_restore_check_stage_observe(bs_dev *dev, const bs_memsaver *ms,
                                         const bs_tensor *const *t, size_t n,
                                         void *host, bool *skipped);

typedef struct bs_restore_check bs_restore_check;

bs_status bs_restore_check_create(bs_dev *dev, bool armed,
                                  bs_restore_check **out);
void bs_restore_check_destroy(bs_restore_check *rc);

/* At backup, when armed: the first BS_RCHECK_CYCLES backups hash the
 * tensors (replacing the hashes held), every later one drops them. A
 * failed hash leaves none held. Unarmed: nothing. */
bs_status bs_restore_check_take(bs_restore_check *rc, const bs_tensor *const *t,
                                size_t n);
/* At restore: compares with the hashes held, if any, and keeps them. */
bs_status bs_restore_check_verify(bs_restore_check *rc,
                                  const bs_tensor *const *t, size_t n);
/* Drops the hashes held (the backup they came from was released). */
void bs_restore_check_clear(bs_restore_check *rc);

#endif
