/* The run record: what the core did, phase by phase and rank by rank. The
 * driver fills it; the oracles read nothing else. Each rank's thread writes
 * only its own bs_rank_rec, so recording needs no lock. */
#ifndef BS_RECORD_H
#define BS_RECORD_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_core_testing.h" /* bs_paused_read */
#include "bs_digest.h"
#include "bs_err.h"
#include "bs_fault_control.h"
#include "bs_hasher.h"
#include "comm/bs_comm.h" /* bs_coll_rec */
#include "dev/bs_dev.h"

#define BS_PHASE_MAX 32
/* Digests of a tensor list (names in the same order, each the process's
 * one copy: bs_record_names.h). */
typedef struct bs_digests {
  bs_digest *d;
  const char **names;
  size_t n;
  size_t npaused; /* live digests only: tensors that were paused */
} bs_digests;

/* One lifecycle phase on one rank: its outcome and the state at its end. */
typedef struct bs_event {
  char phase[BS_PHASE_MAX]; /* "init", "update_weights", "restore", ... */
  int cycle;
  bs_status status;
  /* When status != BS_OK (NULL: none, or no memory for it): read through
   * bs_record_err. Apart, not inline: 456 bytes of every event of every
   * rank, and few fail (115 MiB of a 16,384-rank world). */
  bs_error *err;
  double t0_ms, t1_ms; /* since the run started; t1 < 0 while open */
  double
      cpu_wait_ms; /* of them, waiting for a CPU (bs_comm_cpu_wait_ms_since) */
  size_t pinned[BS_PIN_OWNER_COUNT], pinned_peak[BS_PIN_OWNER_COUNT];
  size_t resident, resident_peak;
  size_t resident_params; /* of resident: the param buffer's */
  int param_paused;       /* param_buffer all PAUSED: 1, not: 0, unknown: -1 */
  bs_digests live;        /* live digests at the end (n == 0: not taken) */
  bs_digests recv;        /* update_weights: what the engine received */
} bs_event;

typedef struct bs_rank_rec {
  bs_event *ev;
  size_t n, cap;
  bool returned; /* the rank body came back (normally or unwound) */
  bool unwound;  /* a paused read unwound it */
  bs_status end; /* what the rank body returned */
  bs_error end_err;
  /* The rank's process: 1 when a fatal error of the memory saver ended it
   * (end is BS_ERR_FATAL, end_err the library's message), else 0. */
  int exit_status;
  char *flight; /* its flight recorder as JSON, NULL when none */
  /* Its flight recorder's entries as its dump's reader takes them, oldest
   * first (bs_schedule_of_rank): NULL when not taken (a rank of another
   * process). Kept beside the dump at any size: reading 16,384 dumps back
   * was 12% of such a world's time; the entries take 240 bytes a
   * collective after the world, where its dump takes some 600, and the
   * peak of a large world is in its train step, before either exists. */
  bs_coll_rec *colls;
  size_t ncolls;
} bs_rank_rec;

/* How pause safety applies to this configuration. */
typedef enum bs_pause_rule {
  BS_PAUSE_NONE = 0,   /* param_buffer stays resident (no offload, LoRA) */
  BS_PAUSE_AT_SLEEP,   /* Normal under offload: paused from sleep on */
  BS_PAUSE_AFTER_SYNC, /* MainCast: update_weights pauses it, any path */
} bs_pause_rule;

/* What the pinned host budget of the backuper is made of (per rank). */
typedef enum bs_budget_kind {
  BS_BUDGET_NONE = 0, /* no weight backup: nothing pinned */
  BS_BUDGET_NORMAL,   /* full copy of every synced tensor per tag */
  BS_BUDGET_MAINCAST, /* extras for actor, full copies for other tags */
  BS_BUDGET_MEMSAVER, /* colocated LoRA reads the memory saver: nothing */
} bs_budget_kind;

typedef struct bs_budget {
  bs_budget_kind kind;
  size_t synced_bytes; /* bytes of every synced tensor */
  size_t extras_bytes; /* expert_bias buffers, fp32 and frozen params */
  int tags;            /* backed-up tags, actor included */
} bs_budget;

/* A named check of a custom driver (config-matrix: one per rule). */
typedef struct bs_check {
  char name[64];
  bool ok;
  char detail[256];
} bs_check;

typedef struct bs_record {
  int nranks, cycles;
  char backend[8]; /* "sim" or "nccl" */
  int nprocs;      /* processes the ranks were spread over (1: threads) */
  bs_pause_rule pause_rule;
  bs_budget budget;
  double start_mono_ms; /* CLOCK_MONOTONIC at the start */
  double start_real_ms; /* the same instant on the flight recorder's clock */
  double duration_ms, deadline_ms;
  bs_rank_rec *rank;
  bs_fault_fired *fired;
  size_t nfired;
  bs_fault_reach *reaches; /* every point's reaches per rank and cycle */
  size_t nreaches;
  bs_paused_read *reads;
  size_t nreads;
  char *world_report; /* the hang/desync report, NULL or "" when none */
  double detect_ms;   /* < 0: nothing was contained */
  bs_check *checks;
  size_t nchecks;
  /* The synced tensors' digests at init, computed apart from the ranks
   * from the model and the seed (n == 0: none): the reference for the
   * first sync and restore, before any step end exists. */
  bs_digests init_ref;
  /* Where the ranks' live digests are hashed (NULL: at once, by each
   * rank): drained before anything reads them (bs_child_threads.c). */
  bs_hasher *hasher;
  /* Rank 0's optimizer chain as its init built it (inner < 0: none). */
  struct {
    int inner, hdo; /* inner optimizers, how many of them HDOs */
    char desc[200]; /* "dense 0+2, dense 2+2, expert 0+1" (buckets) */
  } opt0;
} bs_record;

bs_status bs_record_init(bs_record *r, int nranks, int cycles);
void bs_record_free(bs_record *r);
void bs_record_rank_free(bs_rank_rec *rr); /* and zeroes it */
double bs_record_now_ms(const bs_record *r);

/* Opens a phase on rank; the pointer is valid until the next begin. */
bs_event *bs_record_begin(bs_record *r, int rank, const char *phase, int cycle);
/* Closes the open phase with st (and this thread's bs_err() if it failed). */
void bs_record_end(bs_record *r, int rank, bs_status st);
/* The last event of rank (NULL when none). */
bs_event *bs_record_last(const bs_record *r, int rank);
/* e's error record: an empty one where it has none. */
const bs_error *bs_record_err(const bs_event *e);

/* Copies n digests into d (dig NULL: zeros), with their names (interned). */
bs_status bs_record_digests_set(bs_digests *d, const bs_digest *dig,
                                const char *const *names, size_t n);
void bs_record_digests_free(bs_digests *d);

bs_status bs_record_check(bs_record *r, const char *name, bool ok,
                          const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Facts of the record the oracles share. */
/* A rank that left the run on purpose (a fault of BS_FAULT_LEAVES fired on
 * it: comm/rank_exit), was unwound by a paused read, or whose process a
 * fatal error of the memory saver ended in a phase: it cannot take part in
 * agreement. */
bool bs_record_rank_lost(const bs_record *r, int rank);
/* A fault fired whose point's .def row has one of the flags of what
 * (BS_FAULT_OFF_SCHEDULE, ...). */
bool bs_record_fired_any(const bs_record *r, unsigned what);
bool bs_record_event_failed(const bs_event *e);

#endif
