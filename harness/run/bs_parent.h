/* The parent's side of running scenarios: forks one child per run through
 * the runner, shows progress, and turns what each child left (its result,
 * or a kill, or a signal) into a bs_result. The child's work is a function
 * pointer, so tests can run hanging and crashing children. */
#ifndef BS_PARENT_H
#define BS_PARENT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "bs_fork.h"
#include "bs_progress.h"
#include "catalog/bs_run.h"
#include "result/bs_result.h"

/* Runs one scenario in the child; writes its result (bs_result_pack) to fd and
 * returns the exit status. */
typedef int (*bs_run_child_fn)(const bs_run *cfg, int fd);

typedef struct bs_parent_opts {
  int jobs;
  int verbosity; /* -1: failures only, 0: a line per run, 1: every oracle */
  FILE *out;     /* progress and per-run lines; NULL: nothing */
  bool tty;      /* rewrite a live status line */
  bs_run_child_fn child;
  bs_progress *progress; /* told of every run that ends; NULL: none */
  /* Called as run `job` ended, before its result is taken from *out
   * (which it may amend); NULL: none. The rank pool's (bs_pool.h). */
  void (*ended)(size_t job, bs_job_out *out);
  /* Called on each run's result as it is taken, before progress counts
   * it (a campaign's own verdict); NULL: none. */
  void (*settle)(const bs_run *cfg, bs_result *res, void *arg);
  void *settle_arg;
  /* Runs share workers (bs_fork.h, reuse) where every run may: each rank a
   * thread of the child, on the sim and the host, outside the rank pool;
   * start(slot): once in each worker, the slot-th of jobs; keep(code):
   * after each run in it, whether the worker is as a fresh child would
   * be. NULL: a child each. */
  void (*start)(int slot);
  bool (*keep)(int code);
} bs_parent_opts;

/* The progress of n runs on stderr for a command whose lines go to o->out
 * (none without one): where o->tty redraws its status line there already,
 * nothing more; else a plain line every few seconds (a CI log), or a
 * redrawn one when only stderr is a terminal. Sets o->progress to line. */
void bs_parent_progress(bs_parent_opts *o, bs_progress *line, const char *label,
                        size_t n);

/* out[i] is the result of cfgs[i] whatever the order they finished in.
 * Every run gets a result; only the runner itself failing is an error. */
bs_status bs_parent_run(const bs_run *cfgs, size_t n, const bs_parent_opts *o,
                        bs_result *out);

/* At its deadline a run is asked to dump (this signal: bs_hangdump.h), and
 * killed a grace later: a quarter of the deadline, within 1..10 s. */
#define BS_DUMP_SIGNAL SIGUSR1
double bs_parent_grace_s(double deadline_s);

/* How long the parent lets a run take in real time: its deadline on real
 * threads; a scheduled run's deadline is on its virtual clock, where it
 * stops itself (bs_hangdump_past), so the parent only guards against a
 * bug of the scheduler: BS_PARENT_GUARD_S, or five times the deadline
 * where more. A run the guard kills is a crash that says so. */
#define BS_PARENT_GUARD_S 300.0
double bs_parent_limit_s(const bs_run *cfg);

#endif
