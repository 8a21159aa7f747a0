/* One process's side of a process-per-rank run (bs_launcher.h): drive its
 * ranks, publish its part of the record in the run's folder; process 0
 * merges every part, judges and publishes the verdict, which the others
 * report as theirs. Every wait is bounded by the run's deadline. Past the
 * deadline, asked to dump (bs_hangdump.h), each process dumps its own
 * ranks and process 0 gathers the dumps into the artifacts (how:
 * bs_child_part.c), within the parent's grace. */
#ifndef BS_CHILD_PART_H
#define BS_CHILD_PART_H

#include <sys/types.h>

#include "catalog/bs_run.h"

/* A bs_run_child_fn (bs_parent.h) for cfg->rendezvous runs, but for procs:
 * in process 0, the other processes' ids when it started them itself
 * (bs_child_spawn.h; cfg->nprocs of them, procs[0] unused): a dump asked
 * of it is passed on to them. NULL: a launcher's processes, each asked by
 * its own parent. */
int bs_child_part_run(const bs_run *cfg, int fd, pid_t *procs);

#endif
