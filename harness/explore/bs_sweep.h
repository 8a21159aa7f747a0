/* Systematic fault exploration (docs/cli.md `sweep`: SQLite's fail-Nth loop,
 * the kernel's fail-nth): a counting pass of the scenario's run lists every
 * reach of every fault point (point, rank, cycle, nth); then one run per
 * reach, transient (that reach only) and persistent (every reach of the
 * point on that rank in that cycle from it on), each judged on the
 * invariants: the same run as `backstop run SCENARIO --fault SPEC`. */
#ifndef BS_SWEEP_H
#define BS_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_fault_control.h"
#include "result/bs_result.h"

typedef enum bs_sweep_outcome {
  BS_SWEEP_CONTAINED = 0, /* it fired, a phase failed, every invariant held */
  BS_SWEEP_RECOVERED,     /* it fired and no rank's phase failed */
  BS_SWEEP_VACUOUS,       /* it never fired */
  BS_SWEEP_KNOWN,         /* failed as the configuration allows (bs_known.h) */
  BS_SWEEP_FAIL,          /* an invariant broke, or the run hung or crashed */
  BS_SWEEP_INTERRUPTED,   /* a signal stopped the command first (bs_stop.h) */
  BS_SWEEP_OUTCOMES
} bs_sweep_outcome;

/* "contained-and-agreed", "recovered", "vacuous", "known", "fail",
 * "interrupted". */
const char *bs_sweep_outcome_name(bs_sweep_outcome o);

/* The nth reach of point on rank in cycle, of `of` there. */
typedef struct bs_sweep_reach {
  bs_fault_point_id point;
  int rank, cycle;
  long nth, of;
} bs_sweep_reach;

typedef struct bs_sweep_filter {
  const char *const *points; /* names or PREFIX*; none: every point */
  size_t npoints;
  int rank, cycle; /* -1: any */
  size_t sample;   /* at most this many reaches; 0: every one */
  int sample_pct;  /* else this percentage of them, rounded up; 0: none */
  size_t offset;   /* a sample smaller than the points starts at this one */
} bs_sweep_filter;

/* Whether the filter's points, rank and cycle keep a reach count. */
bool bs_sweep_keeps(const bs_sweep_filter *f, const bs_fault_reach *r);

/* The reaches of a counting pass's result (its reach counts) that the
 * filter keeps, *total of them; with a sample, at most that many, shared
 * evenly between the points and spread evenly over each point's reaches
 * (in rank, cycle, nth order), so the choice is the same every time; when
 * the sample is smaller than the points, the points from the offset-th on
 * get one each (several sweeps with offsets cover every point). *out
 * is malloc'd (NULL when *n is 0). */
bs_status bs_sweep_reaches(const bs_result *count, const bs_sweep_filter *f,
                           bs_sweep_reach **out, size_t *n, size_t *total);

/* Whether the run's own faults (faults[0..n): the scenario's and the
 * user's, armed before the swept one, which fires only where none of them
 * does) take the reach's run for sure: the reach (persistent: every reach
 * from it on in its cycle) is in the window of a fault of its point, rank
 * and cycle that always fires (no prob=, no onetime). Such a run is not
 * armed: its swept fault could never fire. */
bool bs_sweep_taken(const bs_run_fault *faults, size_t n,
                    const bs_sweep_reach *r, bool persistent);

/* "name=P,rank=R,cycle=C,nth=K" (and ",persistent"). */
void bs_sweep_spec(const bs_sweep_reach *r, bool persistent, char *out,
                   size_t n);

/* The outcome of a sweep run whose swept fault is res->armed[armed]. A run
 * whose own scenario fault the swept one pre-empted is judged on the
 * swept one (its verdict may say vacuous for the other: bs_sweep_settle
 * makes it say what the sweep judged). A BS_KNOWN verdict is known. */
bs_sweep_outcome bs_sweep_judge(const bs_result *res, size_t armed);

/* Makes res's verdict the sweep's judgement, so that its JSON, JUnit and
 * summary agree: known when bs_known says so (unless strict: then a
 * fail), pass when judged on a swept fault that fired and the run's own
 * verdict said vacuous only for a pre-empted scenario fault. */
void bs_sweep_settle(const bs_run *cfg, bs_result *res, size_t armed,
                     bool strict);

#endif
