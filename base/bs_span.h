/* Where a run's wall time goes (backstop bench --gate): each process adds
 * the time it spends in a few phases that are not the system under test's
 * own work (process start, CUDA context, communicator creation per kind,
 * engine start, teardown) and, when BS_SPANS names a folder, writes its
 * totals there as one line at its end (spans.<pid>). Without BS_SPANS
 * nothing is written, and adding costs two clock reads. */
#ifndef BS_SPAN_H
#define BS_SPAN_H

#include <stdint.h>

#define BS_SPAN_KINDS(X)                                                       \
  X(PROC_START, "proc_start", "fork of a rank's process to its first step")    \
  X(CUDA_CTX, "cuda_ctx", "the CUDA context of a rank's device")               \
  X(COMM_INIT, "comm_init", "communicator creation at init")                   \
  X(COMM_WAKE, "comm_wake", "communicator re-creation at wake_up")             \
  X(COMM_TEMP, "comm_temp", "temporary communicators of an asleep sync")       \
  X(COMM_OTHER, "comm_other", "other communicator creation (replay)")          \
  X(COMM_DESTROY, "comm_destroy", "communicator teardown (sleep, after sync)") \
  X(ENGINE_START, "engine_start", "engine processes started")                  \
  X(LIFECYCLE, "lifecycle", "the rank's lifecycle, the above included")        \
  X(TEARDOWN, "teardown", "from the lifecycle's end to the process's end")     \
  /* the lifecycle's phases, by the names the run record gives them */         \
  X(PH_INIT, "init", "actor init")                                             \
  X(PH_TRAIN, "train_step", "train steps")                                     \
  X(PH_SLEEP, "sleep", "sleeps")                                               \
  X(PH_UPDATE, "update_weights", "weight syncs")                               \
  X(PH_RESTART, "restart_engine", "engine restarts")                           \
  X(PH_WAKE, "wake_up", "wake-ups")                                            \
  X(PH_RESTORE, "restore", "restores")

typedef enum bs_span_kind {
#define BS_SPAN_ENUM(id, name, what) BS_SPAN_##id,
  BS_SPAN_KINDS(BS_SPAN_ENUM)
#undef BS_SPAN_ENUM
      BS_SPAN_COUNT
} bs_span_kind;

const char *bs_span_name(bs_span_kind k);
/* The kind of that name; BS_SPAN_COUNT (which bs_span_add ignores) when
 * none is. */
bs_span_kind bs_span_named(const char *name);
/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bs_span_now(void);
/* Adds t1 - t0 (ns) to kind k of this process (thread-safe). */
void bs_span_add(bs_span_kind k, uint64_t t0, uint64_t t1);
/* The span from `since` to now. */
void bs_span_since(bs_span_kind k, uint64_t since);
/* Remembers now as the moment this process is forked from (the child
 * measures its start from it: fork copies the value). */
void bs_span_mark_fork(void);
/* In a forked child: the time since the parent's mark, as PROC_START. */
void bs_span_forked(void);
/* Writes this process's totals so far to $BS_SPANS/spans.<pid> (one line:
 * "name count total_ns" per kind with a count), whole (tmp + rename) or
 * not at all; nothing without BS_SPANS; a failed write is ignored (a
 * measurement). A pool worker saves after each run, so that one killed
 * later keeps what it measured. */
void bs_span_save(void);
/* As a process ends: its teardown (from the lifecycle's end), then
 * bs_span_save. */
void bs_span_flush(void);

#endif
