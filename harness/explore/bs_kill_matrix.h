/* The kill matrix (docs/cli.md `mutants`): the planned runs against the fixed
 * core and against each mutant; a mutant is killed by every scenario whose
 * run did not pass, untested when this build could run no scenario that
 * targets it. backstop mutants runs the matrix and prints it. */
#ifndef BS_KILL_MATRIX_H
#define BS_KILL_MATRIX_H

#include <stdbool.h>
#include <stddef.h>

#include "catalog/bs_run.h"
#include "report/bs_report.h"
#include "result/bs_result.h"

/* The fixed core's runs first (mut[] = -1), then each mutant over the same
 * runs, or (targeted) over the runs of the scenarios that target it. The
 * runs and *mut are malloc'd; NULL when out of memory. */
bs_run *bs_kill_matrix_plan(const bs_run *base, size_t nbase, bool targeted,
                            int **mut, size_t *n);
/* k[BS_MUT_COUNT] from the matrix's results res[0..n) (mut[i]: run i's
 * mutant, -1 for the fixed core). */
bs_status bs_kill_matrix_judge(const bs_result *res, const int *mut, size_t n,
                               bs_kill *k);

#endif
