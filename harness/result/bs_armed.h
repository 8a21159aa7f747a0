/* What became of every armed fault of a run (docs/cli.md "Fault spec"): its
 * firings and how often its point was reached where its filters allow,
 * the result's bs_armed, made here beside its type from the record's
 * firing log and reach counts. A fault that never fired makes a run that
 * broke nothing vacuous: it proves nothing about that fault. */
#ifndef BS_ARMED_H
#define BS_ARMED_H

#include <stdbool.h>
#include <stddef.h>

#include "catalog/bs_run.h"
#include "record/bs_record.h"
#include "result/bs_result.h"

/* res->armed from the run's faults (in the order they were armed), the
 * commands of libfiu's fiu-run and the firings nothing of ours armed
 * (fiu-ctrl), against rec's firing log and reach counts. */
bs_status bs_armed_collect(const bs_run *run, const bs_record *rec,
                           bs_result *res);

/* The first armed fault that never fired, said in why ("name=... never
 * fired: engine/send was reached 1 time on rank 4 in cycle 2"); false when
 * every one fired. */
bool bs_armed_vacuous(const bs_result *res, char *why, size_t n);

#endif
