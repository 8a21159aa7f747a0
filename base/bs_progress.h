/* The progress line of long work (sweep, fuzz, mutants, big suites;
 * docs/cli.md): on a terminal, one line redrawn as runs end; elsewhere (a CI
 * log), one plain line every few seconds, so a job that runs for minutes is
 * never silent. "<label>: <done>/<total> runs, eta <E> s, <F> failed, <V>
 * vacuous" (a time budget: "<done> runs, <L> s left, ..."), or the
 * caller's own counts in place of the verdicts' (fuzz judges a run on the
 * faults that fired: its vacuous are not the verdicts'). BS_PROGRESS_S
 * sets the interval of plain lines (0: every run, as the tests use). */
#ifndef BS_PROGRESS_H
#define BS_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Plain lines at most this often unless BS_PROGRESS_S says otherwise. */
#define BS_PROGRESS_INTERVAL_S 5.0

typedef struct bs_progress {
  FILE *out; /* NULL: no progress */
  bool tty;  /* redraw one line (else plain lines, at most one a interval) */
  double interval_s;
  const char *label;
  size_t done, total; /* total 0: not known ahead (a time budget) */
  size_t failed, vacuous;
  double budget_s; /* > 0: a time budget, shown as the time left */
  double t0, last; /* seconds, monotonic; last: the last plain line */
  bool drawn;      /* a redrawn line is on the terminal */
  char what[160];  /* the caller's counts, shown until replaced; "": ours */
} bs_progress;

/* Progress to out (stderr; NULL: none), a terminal or not as isatty says;
 * counters zero, the clock started. */
void bs_progress_init(bs_progress *p, FILE *out, const char *label);
/* One run ended with this verdict's counts (failed: fail, hang or crash). */
void bs_progress_add(bs_progress *p, bool failed, bool vacuous);
/* Shows the line now (redrawn), or when the interval has passed (plain);
 * what: the caller's counts from now on ("": the verdicts' again), NULL:
 * as before. */
void bs_progress_show(bs_progress *p, const char *what);
/* Clears a redrawn line, so what follows starts on a fresh one. */
void bs_progress_end(bs_progress *p);

#endif
