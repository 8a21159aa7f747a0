/* A schedule as text and as the scheduler takes it (bs_sched.h): what
 * --schedule and BS_SCHEDULE say, and the seed it runs from. */
#ifndef BS_SCHED_SPEC_H
#define BS_SCHED_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "bs_err.h"

typedef enum bs_sched_policy {
  BS_SCHED_THREADS = 0, /* no scheduler: real threads on the real clock */
  BS_SCHED_RANDOM,
  BS_SCHED_PCT,
} bs_sched_policy;

typedef struct bs_sched_spec {
  bs_sched_policy policy;
  int depth;        /* pct: D, the priority change points plus one */
  uint64_t horizon; /* pct: K, the decisions the change points fall in */
  uint64_t seed;
  int guard_ms; /* no decision for this long is a scheduler bug; 0: 300 s */
} bs_sched_spec;

/* "threads", "random", "pct:D" or "pct:D:K" (D 1..64) into *out (seed and
 * guard left as they are); BS_ERR_CONFIG naming the forms otherwise. */
bs_status bs_sched_spec_parse(const char *text, bs_sched_spec *out);
/* The spec as bs_sched_spec_parse reads it ("pct:3", K only when not the
 * default). */
void bs_sched_spec_format(const bs_sched_spec *s, char *buf, size_t n);
#define BS_SCHED_PCT_HORIZON 4096

#endif
