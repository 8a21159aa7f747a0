/* The kill matrix (docs/cli.md `mutants`): the planned runs against the fixed
 * core and against each mutant; a mutant is killed by every scenario whose
 * run did not pass, untested when this build could run no scenario that
 * targets it. An ordering mutant (bs_mutant_ordering: a race one schedule
 * may hide) runs each of its scheduled runs under BS_KILL_SCHEDULES more
 * schedules besides (bs_kill_matrix_schedule), the same ones every time;
 * a scenario that kills it only under one of those is named with the
 * first that did; one whose every run was on real threads (nccl, --spawn,
 * --rendezvous) is untested, not survived. backstop mutants runs the
 * matrix and prints it. */
#ifndef BS_KILL_MATRIX_H
#define BS_KILL_MATRIX_H

#include <stdbool.h>
#include <stddef.h>

#include "catalog/bs_run.h"
#include "report/bs_report.h"
#include "result/bs_result.h"

/* Why an ordering mutant whose every run was on real threads is untested
 * (bs_kill.untested points here). */
extern const char bs_kill_unexplored[];

/* Explored schedules per scheduled run of an ordering mutant. */
#define BS_KILL_SCHEDULES 4

/* The k-th (from 1) explored schedule of a run whose own is s: random and
 * pct:3 in turn, seeded past s's seed (s.seed + 1, + 1, + 2, + 2). */
bs_sched_spec bs_kill_matrix_schedule(const bs_sched_spec *s, int k);

/* The fixed core's runs first (mut[] = -1), then each mutant over the same
 * runs, or (targeted) over the runs of the scenarios that target it, an
 * ordering one's scheduled runs each followed by its explored schedules
 * (explored[i]). The runs, *mut and *explored are malloc'd; NULL when out
 * of memory. */
bs_run *bs_kill_matrix_plan(const bs_run *base, size_t nbase, bool targeted,
                            int **mut, bool **explored, size_t *n);
/* k[BS_MUT_COUNT] from the matrix's results res[0..n) (mut[i]: run i's
 * mutant, -1 for the fixed core; explored[i]: under an explored
 * schedule). */
bs_status bs_kill_matrix_judge(const bs_result *res, const int *mut,
                               const bool *explored, size_t n, bs_kill *k);

#endif
