/* The registry of running worlds (bs_world_running.c), for a dump asked
 * for from outside while ranks run: the hang dump of a run past its
 * deadline (the harness reaches it through bs_core_testing.h). */
#ifndef BS_WORLD_RUNNING_H
#define BS_WORLD_RUNNING_H

#include "comm/bs_comm.h"

/* fn(w, arg) for each world of this process whose ranks are running now;
 * none of them ends before fn returns. */
void bs_world_running_each(void (*fn)(const bs_world *w, void *arg), void *arg);
/* This process's ranks of the world: how many, and the first's global
 * rank. */
int bs_world_running_local_size(const bs_world *w);
int bs_world_running_first_rank(const bs_world *w);

#endif
