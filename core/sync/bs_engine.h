/* The rollout-engine stand-in: a separate process per trainer rank that
 * receives weight updates and checks every tensor's SHA256 against what the
 * trainer says it sent (check_weight_update_equal). A separate process, so
 * that an engine death is a real process death and the trainer sees a real
 * broken connection.
 *
 * The process is started by executing a binary (posix_spawn, never fork of
 * a threaded trainer) as
 *     exe [argv_prefix...] engine --fd 3 --rank R [--count K]
 * (K ranks R.. on fds 3..: a process shared by K ranks) and that binary hands
 * everything from "engine" on to bs_engine_main() (bs_engine_main.h); or,
 * in a process that keeps engines, forked by its zygote, an execution of
 * that binary too (bs_engine_zygote.h).
 *
 * Every read and write waits at most the handle's timeout for progress. A
 * broken connection is BS_ERR_ENGINE_DEAD, naming the rank, the bucket and
 * tensor, and how the process ended ("killed by signal 9"). A handle is
 * used by one thread (its rank). */
#ifndef BS_ENGINE_H
#define BS_ENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_digest.h"
#include "bs_dtype.h"
#include "bs_err.h"
#include "bs_limits.h"

typedef struct bs_engine bs_engine;

/* What the engine reported at the end of an update. */
typedef struct bs_engine_result {
  int cycle;
  size_t ntensors;  /* received */
  size_t nmismatch; /* received bytes whose SHA256 differs from expected */
  size_t first_bad; /* index of the first mismatch, when nmismatch > 0 */
  char first_bad_name[96];
  bs_digest *digests; /* SHA256 of what it received, in send order */
} bs_engine_result;
void bs_engine_result_free(bs_engine_result *r);

/* Spawns the engine for `rank`. argv_prefix: NULL-terminated arguments
 * between exe and "engine", or NULL. BS_ERR_INVALID when exe cannot be
 * executed. */
bs_status bs_engine_start(const char *exe, const char *const *argv_prefix,
                          int rank, bs_engine **out);
/* As bs_engine_start, for rank of a world of `world` ranks: above
 * BS_ENGINE_PROCS_MAX ranks a process serves ceil(world / that) ranks in
 * a row, as a real engine spans several GPUs (16,384 processes would not
 * fit a machine: some 1 MiB each, and the kernel's pid_max): one rank's
 * engine death is then its neighbours' too. The process ends once the
 * last of its ranks stops it (at most BS_ENGINE_GROUP_MAX ranks). */
bs_status bs_engine_start_world(const char *exe, const char *const *argv_prefix,
                                int rank, int world, bs_engine **out);
/* Sends QUIT and waits (bounded) for the exit, SIGKILL past it; reaps;
 * frees. BS_OK unless the engine ended abnormally now (a death already
 * reported by another call is not reported again). NULL is a no-op. */
bs_status bs_engine_stop(bs_engine *e);
/* A fresh process for the same rank (after a death); in a world of
 * groups, a fresh group process, which the first of its ranks to use its
 * engine again (an update, a reconnect) starts: until then the engine has
 * no process (pid -1, not alive). */
bs_status bs_engine_restart(bs_engine *e);

/* Starts an update. The engine/verify fault is checked here: when it
 * fires, the engine flips a bit of one received tensor (failinfo: low 32
 * bits the tensor index, high 32 the bit) before verifying it. */
bs_status bs_engine_update_begin(bs_engine *e, int cycle);
/* Start of bucket k. The engine/send fault fires here: the trainer
 * SIGKILLs the engine (a real death) and the next write fails. */
void bs_engine_bucket(bs_engine *e, int k);
/* Streams one tensor: nbytes of host memory at host_ptr, and the SHA256
 * the trainer computed for them. An unreadable host_ptr (a paused region)
 * is BS_ERR_PAUSED_READ; the engine is stopped then, since the stream is
 * cut mid-frame. */
bs_status bs_engine_send(bs_engine *e, const char *name, bs_dtype dtype,
                         const void *host_ptr, size_t nbytes,
                         const bs_digest *expected);
/* Streams n tensors as bs_engine_send does, in one write (up to 64 a
 * write): one wake-up of the engine a bucket, not one a tensor. Every
 * tensor's arguments are checked before any is sent; a death or a failed
 * write names the first tensor of the write. */
typedef struct bs_engine_tensor {
  const char *name;
  bs_dtype dtype;
  const void *host_ptr;
  size_t nbytes;
  const bs_digest *expected;
} bs_engine_tensor;
bs_status bs_engine_send_many(bs_engine *e, const bs_engine_tensor *t,
                              size_t n);
/* Ends the update and reads the engine's answer into *res (may be NULL;
 * free with bs_engine_result_free). BS_ERR_ENGINE_VERIFY naming the first
 * mismatching tensor when any tensor did not match; *res is filled then
 * too. */
bs_status bs_engine_update_end(bs_engine *e, bs_engine_result *res);

/* The session re-established (under offload, inside the memory saver's
 * disable() region, before weight sync: docs/behavior.md §5): a HELLO round
 * trip within the timeout. BS_ERR_ENGINE_DEAD when the engine is gone or
 * the fault point engine/reconnect fires. */
bs_status bs_engine_reconnect(bs_engine *e);

#endif
