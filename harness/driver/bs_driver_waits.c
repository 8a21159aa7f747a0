/* What a run's faults make it wait for (bs_driver_waits_ms): the deadline
 * a run needs beyond its work. */
#include <stdio.h>

#include "bs_fault_control.h"
#include "driver/bs_driver.h"

/* The communicator's watchdog timeout when a run names none. */
#define DEFAULT_TIMEOUT_MS 10000

/* The points a firing of which is a wait, and how long: whole timeouts
 * when every rank fires it (all) or one does (one), else the spec's
 * failinfo in ms, each time it fires. */
static const struct {
  const char *point;
  int all, one;
} waits[] = {
    /* every rank skipping waits out its own bound, twice the timeout; one
     * skipping rank is found by its peers' watchdog */
    {"comm/init_skip", 2, 1},
    {"comm/init_late", 0, 0},
    {"comm/stall", 0, 0},
};

static double cost_ms(const bs_fault_spec *f, int timeout_ms,
                      const char **point) {
  double most = 0;
  for (size_t i = 0; i < sizeof waits / sizeof waits[0]; i++) {
    if (!bs_fault_spec_matches(f->name, waits[i].point))
      continue;
    int timeouts = f->rank < 0 ? waits[i].all : waits[i].one;
    long times = f->times > 1 ? f->times : 1;
    double ms = timeouts ? (double)timeouts * timeout_ms
                         : (double)f->failinfo * (double)times;
    if (ms > most) {
      most = ms;
      *point = waits[i].point;
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

static void add(tally *t, const char *spec) {
  bs_fault_spec f;
  const char *point = NULL;
  if (bs_fault_spec_parse(spec, &f) != BS_OK) {
    bs_err_clear(); /* the run itself says what is wrong with it */
    return;
  }
  double ms = cost_ms(&f, t->timeout_ms, &point);
  t->total += ms;
  if (ms > t->most) {
    t->most = ms;
    t->point = point;
  }
}

double bs_driver_waits_ms(const bs_run_cfg *cfg, char *why, size_t n) {
  tally t = {.timeout_ms =
                 cfg->timeout_ms > 0 ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS};
  for (const char *const *f = cfg->scn->faults; f && *f; f++) {
    char spec[256];
    bs_scenario_fault_expand(*f, cfg->ranks, spec, sizeof spec);
    add(&t, spec);
  }
  for (size_t i = 0; i < cfg->nfaults; i++)
    add(&t, cfg->faults[i]);
  if (why && n)
    snprintf(why, n, "%s: %.0f ms with a %d ms watchdog",
             t.point ? t.point : "none", t.most, t.timeout_ms);
  return t.total;
}
