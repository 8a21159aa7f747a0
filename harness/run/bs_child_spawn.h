/* A run whose NCCL ranks would share a GPU (bs_run.spawn): its child
 * starts one process per rank, in a fresh folder of its own, and they run
 * it as a launcher's processes would (bs_child_part.c): process p drives
 * rank p, process 0 (the child itself) merges the parts, judges and sends
 * the verdict to the parent. The processes are in the child's process
 * group, so the parent's kill at the deadline takes them all; its dump
 * signal before that reaches process 0, which passes it on to the others
 * and gathers their dumps (bs_child_part.c). */
#ifndef BS_CHILD_SPAWN_H
#define BS_CHILD_SPAWN_H

#include "catalog/bs_run.h"

/* A bs_run_child_fn (bs_parent.h). */
int bs_child_spawn_run(const bs_run *cfg, int fd);

#endif
