/* One process's side of a process-per-rank run (bs_launcher.h): drive its
 * ranks, publish its part of the record in the run's folder; process 0
 * merges every part, judges and publishes the verdict, which the others
 * report as theirs. Every wait is bounded by the run's deadline. */
#ifndef BS_CHILD_PART_H
#define BS_CHILD_PART_H

#include "catalog/bs_scenario.h"

/* A bs_run_child_fn (bs_parent.h) for cfg->rendezvous runs. */
int bs_child_part_run(const bs_run_cfg *cfg, int fd);

#endif
