/* A schedule as text (bs_sched_spec.h). */
#include "bs_sched_spec.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PCT_MAX_DEPTH = 64 };

/* "D" or "D:K" after "pct:". */
static bool pct_args(const char *s, bs_sched_spec *out) {
  char *end = NULL;
  long d = strtol(s, &end, 10);
  unsigned long long k = BS_SCHED_PCT_HORIZON;
  if (end == s || d < 1 || d > PCT_MAX_DEPTH)
    return false;
  if (*end == ':') {
    const char *ks = end + 1;
    k = strtoull(ks, &end, 10);
    if (end == ks || k < 1)
      return false;
  }
  if (*end)
    return false;
  out->policy = BS_SCHED_PCT;
  out->depth = (int)d;
  out->horizon = k;
  return true;
}

bs_status bs_sched_spec_parse(const char *text, bs_sched_spec *out) {
  const char *t = text ? text : "";
  bs_sched_spec s = *out;
  s.depth = 0;
  s.horizon = 0;
  if (strcmp(t, "threads") == 0)
    s.policy = BS_SCHED_THREADS;
  else if (strcmp(t, "random") == 0)
    s.policy = BS_SCHED_RANDOM;
  else if (strncmp(t, "pct:", 4) != 0 || !pct_args(t + 4, &s))
    return bs_err_fail(BS_ERR_CONFIG, NULL,
                       "schedule '%s': threads, random, pct:D or pct:D:K "
                       "(D 1..%d change points plus one, K decisions)",
                       t, PCT_MAX_DEPTH);
  *out = s;
  return BS_OK;
}

void bs_sched_spec_format(const bs_sched_spec *s, char *buf, size_t n) {
  if (s->policy == BS_SCHED_RANDOM)
    snprintf(buf, n, "random");
  else if (s->policy != BS_SCHED_PCT)
    snprintf(buf, n, "threads");
  else if (s->horizon && s->horizon != BS_SCHED_PCT_HORIZON)
    snprintf(buf, n, "pct:%d:%llu", s->depth, (unsigned long long)s->horizon);
  else
    snprintf(buf, n, "pct:%d", s->depth);
}
