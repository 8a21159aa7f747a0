/* Internal to the bench files (scenarios/bs_bench*.c), not part of the
 * CLI's interface: the state every measurement runs on, the timed
 * operation, and the calls the parts of `backstop bench` share. */
#ifndef BS_BENCH_IMPL_H
#define BS_BENCH_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include "backup/bs_backuper.h"
#include "bs_bench.h"
#include "bs_digest.h"
#include "comm/bs_comm.h"
#include "dev/bs_dev.h"
#include "memsaver/bs_memsaver.h"
#include "model/bs_params.h"
#include "train/bs_optimizer.h"

/* Megatron's default DDP bucket: max(40M, 1M * dp) elements. */
#define BS_BENCH_BUCKET_NUMEL 40000000u
#define BS_BENCH_SEED 0x62656e6368ull /* "bench" */

typedef struct bs_bench_state {
  const bs_bench_opts *o;
  bs_bench_report *r;
  bs_dev *dev;
  bs_memsaver *ms;
  size_t bytes;        /* weight bytes: the size of every ceiling buffer */
  void *dev_a, *dev_b; /* device buffers of the copy ceilings */
  void *pin;           /* pinned buffer of the copy and hash ceilings */
  void *pin_tmp;       /* the allocation ceiling's allocation */
  bs_params *params;
  bs_backuper *normal; /* backed up once before timing: steady state */
  bs_backuper *fresh;  /* a new one per run: first-backup cost */
  bs_tensor_map host;  /* normal's host copies: what verification hashes */
  const void **hash_data;
  size_t *hash_len;
  bs_digest *digests;
  bs_optimizer *opt;
  bs_backuper *maincast; /* lives in the rank body (it borrows the comm) */
  bs_comm *comm;         /* a MainCast rank's: runs are timed in lockstep */
  const char *tag;       /* pause/resume: the region measured */
} bs_bench_state;

typedef bs_status (*bs_bench_step)(bs_bench_state *b);

/* setup and teardown are untimed (and optional); run is timed up to the
 * device sync that follows it. */
typedef struct bs_bench_op {
  const char *name;
  const char *ceiling; /* figure it is compared with, NULL for none */
  bool is_ceiling;
  bs_bench_step setup, run, teardown;
  bool busbw; /* an all-gather: reported as bus bandwidth */
} bs_bench_op;

/* Appends op's figure for `bytes` moved in `seconds` to r. */
bs_status bs_bench_measure_add_fig(bs_bench_report *r, const bs_bench_op *op,
                                   double bytes, double seconds);

/* A figure built from measured ones, not timed again: the bytes of `from`
 * in its seconds plus those of `plus` (NULL: none). BS_ERR_INTERNAL when
 * one is not in r yet. */
bs_status bs_bench_measure_add_derived(bs_bench_report *r,
                                       const bs_bench_op *op, const char *from,
                                       const char *plus);

/* Best of b->r->repeat runs of op after one warm-up run, as a figure. */
bs_status bs_bench_measure(bs_bench_state *b, const bs_bench_op *op,
                           double bytes);
/* CLOCK_MONOTONIC in seconds: every time the bench takes. */
double bs_bench_measure_now_s(void);

/* Writes the seeded weight pattern over b->params on b->dev. */
void bs_bench_weights_fill(bs_bench_state *b);

/* The MainCast figures, in a world of b->r->ranks ranks of b->params's
 * model. */
bs_status bs_bench_maincast(bs_bench_state *b);

/* The memory saver's pause and resume figures, with and without backup. */
bs_status bs_bench_pause_resume(bs_bench_state *b);

#endif
