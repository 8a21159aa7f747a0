/* The core's testing hooks: what the harness reaches into the system under
 * test with that a trainer never calls. The hang dump's: a run past its
 * deadline asks each running world of this process where its ranks are,
 * while they run (harness/run/bs_hangdump.c); and the observers of an
 * actor that the oracles read (the driver records them after each phase).
 * and the paused-read guard a rank's work runs under. It carries the
 * testing parts of the core's own headers (the trap, the running worlds,
 * the late tensor's name), so that the harness includes this one.
 * The product's face is bs_actor.h, comm/bs_comm.h (with the device and
 * the report block), model/bs_model.h and model/bs_config.h; white-box
 * tests see more (core/<part>/bs_<part>_testing.h, which are not public).
 * ci/layers.py holds the list (CORE_FACE). */
#ifndef BS_CORE_TESTING_H
#define BS_CORE_TESTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backup/bs_source.h" /* BS_SOURCE_LATE_NAME */
#include "bs_digest.h"
#include "comm/bs_comm.h"
#include "comm/front/bs_comm_report.h"   /* bs_comm_report_now, _waits */
#include "comm/front/bs_world_running.h" /* the running worlds */
#include "memsaver/bs_trap.h"            /* the paused-read guard */
#include "model/bs_config.h"
#include "model/bs_model.h"

/* ---- observers of an actor (bs_actor_observe.c) ---- */
typedef struct bs_actor bs_actor;
/* Its memory saver's resident bytes now and their high-water mark, the
 * params' resident bytes, and whether every allocation of the params is
 * paused. */
size_t bs_actor_observe_resident(bs_actor *a);
size_t bs_actor_observe_resident_peak(bs_actor *a);
size_t bs_actor_observe_resident_params(bs_actor *a);
bool bs_actor_observe_params_paused(bs_actor *a);
/* Its optimizer chain as init built it: how many inner optimizers, how
 * many of them HDOs, and desc ("dense 0+2, expert 0+1": each one's buffer,
 * first bucket and buckets; cut at n). false: it has no optimizer. */
bool bs_actor_observe_chain(bs_actor *a, int *inner, int *hdo, char *desc,
                            size_t n);
/* The synced tensors' SHA256 as a fresh parameter store on the host device
 * holds them: the same model and seed, none of the ranks' code paths (the
 * reference before any step). *dig and *names (into m: valid while it is)
 * are the caller's to free, *n of each. */
bs_status bs_actor_observe_initial(const bs_model_spec *m, const bs_config *cfg,
                                   uint64_t seed, bs_digest **dig,
                                   const char ***names, size_t *n);

#endif
