/* Fault points: the control API (libfiu's fiu-control.h): the catalogue,
 * the spec parser, arming and disarming, the calling rank's cycle and the
 * firing log. Sites need only bs_fault.h.
 *
 * Each point is reachable by libfiu's own tools under its name and the
 * rank-qualified "<point>/r<rank>" (fiu-run -c 'enable name=...'). Every
 * firing is logged (point, rank, cycle, nth, failinfo) for the "explained"
 * oracle.
 *
 * Filter semantics (docs/cli.md "Fault spec"):
 * - nth=K: the K-th time the calling rank reaches the point in its current
 *   cycle (from 1). Reaches are counted per (point, rank, cycle) by
 *   bs_fault_hit itself, armed or not, so a prefix spec with nth=2 fires on
 *   the 2nd reach of each point it matches, and a run can say how often a
 *   fault that never fired had its point reached.
 * - times=T: fires on T consecutive reaches from nth on (default 1);
 *   persistent: on every reach from nth on (nth defaults to 1 with either).
 * - prob=P: a draw from (seed, spec index, rank, cycle, nth): the same run
 *   fires the same faults whatever the thread schedule.
 * - onetime: fires at most once per rank (not once overall), so a rank
 *   filter is not needed to make every rank see its single fault.
 * Sites reached through bs_fault_hit only: a bare fiu_fail() call on an
 * armed name never passes the project's filters. Only ranks' threads reach
 * points (bs_err_rank() >= 0): the framework's own work on other threads
 * (the reference weights a run computes before its ranks start) never
 * fires a fault nor counts as a reach. */
#ifndef BS_FAULT_CONTROL_H
#define BS_FAULT_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_err.h"
#include "bs_fault.h"

#define BS_FAULT_NAME_MAX 48  /* longest point name + NUL */
#define BS_FAULT_MAX_SPECS 32 /* armed specs per process */
#define BS_FAULT_LOG_MAX 4096 /* firings kept; later ones are counted */

/* What a firing does besides failing its site (the .def's WHAT). */
enum {
  BS_FAULT_OFF_SCHEDULE = 1, /* its rank leaves the common schedule */
  BS_FAULT_LEAVES = 2,       /* its rank leaves the run */
  BS_FAULT_CORRUPTS = 4,     /* it corrupts bytes a digest covers */
  /* A watchdog waits it out: one timeout when one rank fires it, two when
   * every rank does (each waits out its own bound). A point whose
   * failinfo is milliseconds (BS_FAILINFO_MS) waits that long instead. */
  BS_FAULT_WAITS_OUT = 8,
};

/* What a point's failinfo is (the .def's FAILINFO), as fuzz draws it. */
typedef enum bs_fault_failinfo {
  BS_FAILINFO_NONE = 0,   /* unused, or only 0 drawn */
  BS_FAILINFO_TENSOR_BIT, /* a tensor index | the bit to flip << 32 */
  BS_FAILINFO_BIT,        /* the bit to flip */
  BS_FAILINFO_MS,         /* milliseconds */
  BS_FAILINFO_PARITY,     /* odd or even picks the variant */
} bs_fault_failinfo;

/* A row of bs_fault_points.def. */
typedef struct bs_fault_point {
  bs_fault_point_id id;
  const char *name;          /* "engine/send" */
  const bs_status *explains; /* statuses a firing explains; BS_OK ends it */
  unsigned what;             /* BS_FAULT_OFF_SCHEDULE | ... */
  bs_fault_failinfo draw;
  const char *where;    /* where it fires */
  const char *failinfo; /* what failinfo means */
} bs_fault_point;

/* The catalogue, in the .def's order. NULL for an id out of range. */
const bs_fault_point *bs_fault_catalogue_get(bs_fault_point_id id);
/* The point of that exact name, NULL (or -1) when it is not one. */
const bs_fault_point *bs_fault_catalogue_find(const char *name);
int bs_fault_catalogue_index(const char *name);
/* Whether a firing of point id can explain the status st. */
bool bs_fault_catalogue_explains(bs_fault_point_id id, bs_status st);

/* A parsed spec (bs_fault_parse.h parses one):
 * name=POINT[,rank=R][,cycle=C][,nth=K][,times=T]
 * [,persistent][,prob=P][,failinfo=I][,onetime]. */
typedef struct bs_fault_spec {
  char name[BS_FAULT_NAME_MAX]; /* catalogue point or "prefix*" */
  int rank;                     /* -1: every rank */
  int cycle;                    /* -1: every cycle */
  long nth;                     /* 0: every reach */
  long times;                   /* reaches from nth on; 0: persistent */
  double prob;                  /* 1: always; never 0 (it could not fire) */
  uint64_t failinfo;
  bool onetime;
} bs_fault_spec;

/* libfiu's matching: exact, or a trailing '*' matches a prefix. */
bool bs_fault_spec_matches(const char *pattern, const char *point);
/* The same for a catalogue point. */
bool bs_fault_spec_matches_point(const char *pattern, bs_fault_point_id point);

/* Arms a parsed fault (docs/cli.md "Fault spec": bs_fault_spec_parse made
 * it, when the run was planned); BS_ERR_INVALID when BS_FAULT_MAX_SPECS
 * are armed already, BS_ERR_UNSUPPORTED when built without libfiu. */
bs_status bs_fault_arm(const bs_fault_spec *spec, uint64_t seed);
/* Disarms what bs_fault_arm armed and restarts the reach counts. */
void bs_fault_disarm_all(void);
size_t bs_fault_armed_count(void);

/* The calling thread's training cycle, which the cycle and nth filters
 * read (thread-local, default 0): the driver sets it for each rank. */
void bs_fault_set_cycle(int cycle);

typedef struct bs_fault_fired {
  bs_fault_point_id point;
  int rank, cycle;
  long nth; /* reach count of the point on that rank in that cycle */
  uint64_t failinfo;
  int spec; /* index of the armed spec, -1 when armed by libfiu's tools */
} bs_fault_fired;

/* The firing log of this process (thread-safe). count is what is kept (at
 * most BS_FAULT_LOG_MAX); total also counts firings past that. */
size_t bs_fault_log_count(void);
size_t bs_fault_log_total(void);
bool bs_fault_log_get(size_t i, bs_fault_fired *out);
void bs_fault_log_reset(void);
void bs_fault_log_add(const bs_fault_fired *f);

/* Per (key, rank, cycle) counters: the layer's reach counts (key: the point
 * id) and onetime marks (negative keys, cycle -1). Adds delta (0 reads) and
 * returns the new count; -1 when out of memory (the filters then do not
 * fire). */
long bs_fault_count_add(int key, int rank, int cycle, long delta);
void bs_fault_count_reset(void);

/* How often one rank reached one point in one cycle. */
typedef struct bs_fault_reach {
  bs_fault_point_id point;
  int rank, cycle;
  long count;
} bs_fault_reach;

/* Every reach count of this process since the last reset, in catalogue,
 * rank, cycle order: up to max in out; returns how many there are. */
size_t bs_fault_count_reaches(bs_fault_reach *out, size_t max);
/* That order, for counts gathered from several processes. */
void bs_fault_count_sort(bs_fault_reach *r, size_t n);

/* Armed from outside through libfiu's fiu-run (its FIU_ENABLE commands) on
 * one of the catalogue's points; what fiu-ctrl arms later is known only
 * from what fires. */
typedef struct bs_fault_external {
  char command[160];                 /* "enable name=engine/send/r3" */
  char name[BS_FAULT_NAME_MAX + 16]; /* the libfiu name: "engine/send/r3" */
} bs_fault_external;

/* Up to max of them in out; returns how many there are. */
size_t bs_fault_external_list(bs_fault_external *out, size_t max);
/* Whether the libfiu name (a point, "<point>/r<rank>", or a prefix ending
 * in '*') covers a reach of point on rank. */
bool bs_fault_external_covers(const char *name, bs_fault_point_id point,
                              int rank);

#endif
