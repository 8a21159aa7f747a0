/* Fault points on libfiu (architecture.md "Faults").
 *
 * A site asks bs_fault_hit("engine/send", &info): true when the point is
 * armed and its filters (rank, cycle, nth, seeded probability) pass for the
 * calling rank now. Each site is also reachable by libfiu's own tools under
 * the rank-qualified name "<point>/r<rank>" (fiu-run -c 'enable name=...').
 * Every firing is logged (point, rank, cycle, nth, failinfo) for the
 * "explained" oracle. Without FIU_ENABLE every site compiles to nothing. */
#ifndef BS_FAULT_H
#define BS_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_status.h"

typedef struct bs_fault_point {
  const char *name;     /* "engine/send" */
  const char *where;    /* where it fires */
  const char *failinfo; /* what failinfo means */
} bs_fault_point;

/* The catalogue: one table, NULL-name terminated. */
const bs_fault_point *bs_fault_catalogue(void);
const bs_fault_point *bs_fault_find(const char *name);

typedef struct bs_fault_fired {
  char point[48];
  int rank, cycle;
  long nth;
  uint64_t failinfo;
} bs_fault_fired;

#ifdef FIU_ENABLE
bool bs_fault_hit(const char *point, uint64_t *failinfo);
#else
#define bs_fault_hit(point, failinfo) ((void)(point), (void)(failinfo), false)
#endif

/* The calling rank's training cycle (thread-local), for cycle filters. */
void bs_fault_set_cycle(int cycle);
int bs_fault_cycle(void);

/* Arms a fault from its spec (cli.md "Fault spec"); BS_ERR_INVALID with a
 * message naming the problem for a malformed spec or an unknown point. */
bs_status bs_fault_arm(const char *spec, uint64_t seed);
void bs_fault_disarm_all(void);

/* The firing log of this process. */
size_t bs_fault_fired_count(void);
bool bs_fault_fired_get(size_t i, bs_fault_fired *out);
void bs_fault_log_reset(void);

#endif
