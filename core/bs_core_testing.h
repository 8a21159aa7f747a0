/* The core's testing hooks: what the harness reaches into the system under
 * test with that a trainer never calls. Today the hang dump's: a run past
 * its deadline asks each running world of this process where its ranks
 * are, while they run (harness/run/bs_hangdump.c). The product's face is
 * bs_actor.h, comm/bs_comm.h and model/; white-box tests see more
 * (core/<part>/bs_<part>_testing.h, which are not public). */
#ifndef BS_CORE_TESTING_H
#define BS_CORE_TESTING_H

#include "comm/bs_comm.h"

/* For a dump asked for from outside while ranks run (a run past its
 * deadline): fn(w, arg) for each world of this process whose ranks are
 * running now; none of them ends before fn returns. */
void bs_world_running_each(void (*fn)(const bs_world *w, void *arg), void *arg);
/* Where every rank is now, as a hang report block whose cause is why
 * (caller frees; NULL when out of memory). */
char *bs_comm_report_now(const bs_world *w, const char *why);
/* Where the world's waits stand against its watchdog now (a run at its
 * deadline): the longest any local rank has waited in a collective (< 0:
 * none waits in one), the watchdog's timeout, whether the world failed. */
typedef struct bs_world_waits {
  double longest_ms;
  int timeout_ms;
  bool failed;
} bs_world_waits;
bs_world_waits bs_comm_report_waits(const bs_world *w);
/* This process's ranks of the world: how many, and the first's global
 * rank. */
int bs_world_running_local_size(const bs_world *w);
int bs_world_running_first_rank(const bs_world *w);

#endif
