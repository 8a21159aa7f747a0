/* Many runs through the parent's fork machinery with one progress line:
 * what sweep and fuzz share. The runs go in chunks (a few per job), and
 * between chunks the line is rewritten on a terminal. */
#ifndef BS_BATCH_H
#define BS_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "verdict/bs_result.h"

/* Runs per job in a chunk: enough to keep every job busy past a slow run
 * (the line is rewritten between chunks). */
#define BS_BATCH_CHUNK_PER_JOB 64

typedef struct bs_batch {
  int jobs;
  FILE *tty;          /* the progress line goes here; NULL: none */
  const char *label;  /* "sweep steady-normal" */
  size_t done, total; /* runs so far and in all, for the line */
} bs_batch;

/* Runs cfgs[0..n) (out[i] for cfgs[i]); only the runner failing is an
 * error. */
bs_status bs_batch_run(bs_batch *b, const bs_run_cfg *cfgs, size_t n,
                       bs_result *out);

/* Rewrites the progress line: "<label> done/total <what>". */
void bs_batch_line(const bs_batch *b, const char *what);
/* Ends the line (so the next output starts on a fresh one). */
void bs_batch_end(const bs_batch *b);

#endif
