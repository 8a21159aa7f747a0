/* Many runs through the parent's fork machinery with one progress line:
 * what sweep and fuzz share. The runs go in chunks (a few per job); the
 * line (bs_progress.h) follows every run that ends: redrawn on a terminal,
 * a plain line every few seconds elsewhere. */
#ifndef BS_BATCH_H
#define BS_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "bs_progress.h"
#include "result/bs_result.h"

/* Runs per job in a chunk: enough to keep every job busy past a slow run
 * (the line is rewritten between chunks). */
#define BS_BATCH_CHUNK_PER_JOB 64

typedef struct bs_batch {
  int jobs;
  FILE *out;          /* the progress line goes here (stderr); NULL: none */
  const char *label;  /* "sweep steady-normal" */
  size_t done, total; /* runs so far and in all (0: not known ahead) */
  double budget_s;    /* > 0: a time budget, the line shows what is left */
  bs_progress line;   /* bs_batch_run's and bs_batch_line's */
  /* Each run's result as it ends, before the line counts it (the
   * parent's settle); NULL: none. */
  void (*settle)(const bs_run *cfg, bs_result *res, void *arg);
  void *settle_arg;
} bs_batch;

/* Runs cfgs[0..n) (out[i] for cfgs[i]); only the runner failing is an
 * error. */
bs_status bs_batch_run(bs_batch *b, const bs_run *cfgs, size_t n,
                       bs_result *out);

/* Shows the progress line (bs_progress_show), what after the counts. */
void bs_batch_line(bs_batch *b, const char *what);
/* Ends the line (so the next output starts on a fresh one). */
void bs_batch_end(bs_batch *b);

#endif
