/* Engine processes kept for reuse: a process that runs many runs one after
 * another (a worker of the runner) starts its ranks' engines once and
 * hands each, when its rank stops it, to the next rank that starts one,
 * instead of a process ended and another spawned and loaded for every rank
 * of every run (bs_engine.h). Only a rank's own engine is kept, alive,
 * between updates: the next user resets it (a RESET frame: its rank, its
 * state dropped) and it answers, else it is ended and a fresh one spawned.
 * An engine death stays a real death: a dead engine is never kept. Off
 * unless bs_engine_keep says so. */
#ifndef BS_ENGINE_KEEP_H
#define BS_ENGINE_KEEP_H

#include <stdbool.h>
#include <sys/types.h>

/* Keep up to max idle engines from now on (0: none; those kept are told
 * to quit). */
void bs_engine_keep(int max);
/* Engine handles of this process in use (started and not stopped): 0
 * after a run that stopped every rank's engine. */
int bs_engine_keep_busy(void);

/* bs_engine.c's side. An idle engine (its pid, its socket) kept; false
 * when none is wanted (the caller quits it). */
bool bs_engine_keep_park(pid_t pid, int fd);
/* A kept one, taken (false: none). */
bool bs_engine_keep_take(pid_t *pid, int *fd);
/* A handle starts (+1) or stops (-1) being used. */
void bs_engine_keep_use(int delta);

#endif
