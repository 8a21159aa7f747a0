/* The failure artifacts of one run: each rank's flight-recorder dump, the
 * trace timeline and the hang report. */
#ifndef BS_ARTIFACTS_H
#define BS_ARTIFACTS_H

#include "record/bs_record.h"
#include "verdict/bs_result.h"

/* Writes each rank's flight recorder as dir/<run>/rank_<R> (the pickle
 * PyTorch writes, which `torchfrtrace dir/<run>` reads as it is) and its
 * JSON copy dir/<run>/rank<R>.flight.json, the timeline dir/<run>/
 * trace.json and the hang report dir/<run>/report.txt, where <run> names
 * the scenario, ranks, seed and mutants, and lists them in res (the JSON
 * pickles as its flight recorders). BS_ERR_INVALID naming the path that
 * could not be written. */
bs_status bs_artifacts_write(const char *dir, const bs_record *rec,
                             bs_result *res);

/* Only the flight recorders of bs_artifacts_write, of the ranks of rec that
 * have one (a process of a process-per-rank run, for its own ranks: the
 * rest is process 0's). */
bs_status bs_artifacts_write_flights(const char *dir, const bs_record *rec,
                                     bs_result *res);

#endif
