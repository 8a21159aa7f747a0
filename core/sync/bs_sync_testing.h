/* The engine process as white-box tests watch and pace it. Not a public
 * header. */
#ifndef BS_SYNC_TESTING_H
#define BS_SYNC_TESTING_H

#include <sys/types.h>

#include "sync/bs_engine.h"

/* The engine's pid, -1 once it has been reaped. */
pid_t bs_engine_pid(const bs_engine *e);
/* Reaps it without waiting if it has ended. */
bool bs_engine_alive(bs_engine *e);
int bs_engine_rank(const bs_engine *e);
/* Longest wait for progress on the socket (default 10000 ms). */
void bs_engine_set_timeout_ms(bs_engine *e, int ms);

#endif
