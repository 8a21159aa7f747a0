/* The failure artifacts of one run: each rank's flight-recorder dump, the
 * trace timeline and the hang report. */
#ifndef BS_ARTIFACTS_H
#define BS_ARTIFACTS_H

#include "record/bs_record.h"
#include "result/bs_result.h"

/* The run's own folder in cfg->artifacts (DIR): DIR/<scenario>-r<ranks>-
 * s<seed>[-<mutant>...], then -<8 hex digits of the SHA256 of its repro
 * line> when that line has more options than those (faults, settings,
 * cycles...: two sweep runs never share one), then -<k> for the k-th of
 * identical runs (--repeat). */
void bs_artifacts_run_dir(const bs_run *cfg, char *out, size_t n);
/* Empties the run's folder before it runs (removed: a run that writes
 * nothing leaves none), so nothing of an earlier run is read as its own. */
bs_status bs_artifacts_clear(const bs_run *cfg);

/* Writes each rank's flight recorder as <run>/rank_<R> (the pickle PyTorch
 * writes, which `torchfrtrace <run>` reads as it is) and its JSON copy
 * <run>/json/rank<R>.flight.json (BS_DUMPS_JSON_DIR), the timeline
 * <run>/trace.json and the hang report <run>/report.txt, <run> being
 * bs_artifacts_run_dir, and lists them in res (the pickles as its flight
 * recorders). BS_ERR_INVALID naming the path that could not be written. */
bs_status bs_artifacts_write(const bs_run *cfg, const bs_record *rec,
                             bs_result *res);

/* Only the flight recorders of bs_artifacts_write, of the ranks of rec that
 * have one (a process of a process-per-rank run, for its own ranks: the
 * rest is process 0's). */
bs_status bs_artifacts_write_flights(const bs_run *cfg, const bs_record *rec,
                                     bs_result *res);

#endif
