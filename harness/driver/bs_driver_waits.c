/* What a run's faults make it wait for (bs_driver_waits_ms): the deadline
 * a run needs beyond its work. */
#include <stdio.h>

#include "bs_fault_control.h"
#include "driver/bs_driver.h"

/* The communicator's watchdog timeout when a run names none. */
#define DEFAULT_TIMEOUT_MS 10000

/* What a firing of point p costs in waiting: whole watchdog timeouts
 * for a point a watchdog waits out (two when every rank fires it, one
 * when one does), the spec's failinfo in ms each time it fires for a
 * point whose failinfo is milliseconds, else nothing (the .def's rows). */
static double point_ms(const bs_fault_point *p, const bs_fault_spec *f,
                       int timeout_ms) {
  if (p->what & BS_FAULT_WAITS_OUT)
    return (f->rank < 0 ? 2.0 : 1.0) * timeout_ms;
  if (p->draw != BS_FAILINFO_MS)
    return 0;
  long times = f->times > 1 ? f->times : 1;
  return (double)f->failinfo * (double)times;
}

static double cost_ms(const bs_fault_spec *f, int timeout_ms,
                      const char **point) {
  double most = 0;
  for (int id = 0; id < BS_FP_COUNT; id++) {
    const bs_fault_point *p = bs_fault_catalogue_get((bs_fault_point_id)id);
    if (!bs_fault_spec_matches(f->name, p->name))
      continue;
    double ms = point_ms(p, f, timeout_ms);
    if (ms > most) {
      most = ms;
      *point = p->name;
    }
  }
  return most;
}

/* The waits so far: their sum, and the largest with its point. */
typedef struct tally {
  int timeout_ms;
  double total, most;
  const char *point;
} tally;

static void add(tally *t, const bs_fault_spec *f) {
  const char *point = NULL;
  double ms = cost_ms(f, t->timeout_ms, &point);
  t->total += ms;
  if (ms > t->most) {
    t->most = ms;
    t->point = point;
  }
}

double bs_driver_waits_ms(const bs_run *cfg, char *why, size_t n) {
  tally t = {.timeout_ms =
                 cfg->timeout_ms > 0 ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS};
  for (size_t i = 0; i < cfg->nfaults; i++)
    add(&t, &cfg->faults[i].spec);
  if (why && n)
    snprintf(why, n, "%s: %.0f ms with a %d ms watchdog",
             t.point ? t.point : "none", t.most, t.timeout_ms);
  return t.total;
}
