#include "explore/bs_kill_matrix.h"

#include <stdlib.h>
#include <string.h>

#include "bs_mutant.h"
#include "bs_vec.h"
#include "catalog/bs_scenario.h"

/* Whether scenario s lists mutant m in its targets. */
static bool targets(const bs_scenario *s, int m) {
  for (size_t i = 0; s->targets && s->targets[i]; i++)
    if (strcmp(s->targets[i], bs_mutant_name((bs_mutant)m)) == 0)
      return true;
  return false;
}

bs_sched_spec bs_kill_matrix_schedule(const bs_sched_spec *s, int k) {
  bs_sched_spec e = *s;
  e.policy = k % 2 ? BS_SCHED_RANDOM : BS_SCHED_PCT;
  e.depth = k % 2 ? 0 : 3;
  e.horizon = 0;
  e.seed = s->seed + (uint64_t)(k + 1) / 2;
  return e;
}

/* The runs of mutant m (-1: the fixed core) over base[i]: the run itself,
 * then, for an ordering mutant on a scheduled world, its explored
 * schedules. */
static void add_runs(const bs_run *base, int m, bs_run *all, int *mut,
                     bool *explored, size_t *n) {
  bool explore = m >= 0 && bs_mutant_ordering((bs_mutant)m) &&
                 base->schedule.policy != BS_SCHED_THREADS;
  for (int k = 0; k <= (explore ? BS_KILL_SCHEDULES : 0); k++) {
    bs_run *c = &all[*n];
    *c = *base;
    c->run_index = *n; /* its own folder */
    if (k)
      c->schedule = bs_kill_matrix_schedule(&base->schedule, k);
    explored[*n] = k > 0;
    mut[(*n)++] = m;
    if (m < 0)
      continue;
    c->mutants[0] = (bs_mutant)m;
    c->nmutants = 1;
  }
}

bs_run *bs_kill_matrix_plan(const bs_run *base, size_t nbase, bool targeted,
                            int **mut, bool **explored, size_t *n) {
  size_t cap = nbase * (BS_MUT_COUNT * (BS_KILL_SCHEDULES + 1) + 1);
  bs_run *all = calloc(cap ? cap : 1, sizeof *all);
  *mut = calloc(cap ? cap : 1, sizeof **mut);
  *explored = calloc(cap ? cap : 1, sizeof **explored);
  *n = 0;
  if (!all || !*mut || !*explored) {
    free(all);
    return NULL;
  }
  for (int m = -1; m < BS_MUT_COUNT; m++)
    for (size_t i = 0; i < nbase; i++)
      if (m < 0 || !targeted || targets(base[i].scn, m))
        add_runs(&base[i], m, all, *mut, *explored, n);
  return all;
}

/* Every scenario that targets the mutant is one this build cannot run
 * (BS_FIU=OFF): its survival would say nothing. The reason; NULL when a
 * scenario that targets it can run. */
static const char *untested(int m) {
  const char *why = NULL;
  for (size_t i = 0; i < bs_scenario_count(); i++) {
    const bs_scenario *s = bs_scenario_at(i);
    if (!targets(s, m))
      continue;
    if (!bs_scenario_skip_reason(s))
      return NULL;
    why = bs_scenario_skip_reason(s);
  }
  return why;
}

const char bs_kill_unexplored[] =
    "an ordering mutant whose every run here was on real threads (--schedule "
    "threads: nccl, --spawn, --rendezvous), where no schedule is explored";

/* An ordering mutant (a race one schedule may hide) whose every run was on
 * real threads (--schedule threads: what nccl, --spawn and --rendezvous
 * runs resolve to): no schedule was explored, so its survival would say
 * nothing (failure-before-ready is the sim's own race: an NCCL run never
 * reaches its code). The reason; NULL when one of its runs was scheduled. */
static const char *unexplored(int m, const bs_result *res, const int *mut,
                              size_t n) {
  bool ran = false;
  if (!bs_mutant_ordering((bs_mutant)m))
    return NULL;
  for (size_t i = 0; i < n; i++) {
    if (mut[i] != m)
      continue;
    if (strcmp(res[i].schedule, "threads") != 0)
      return NULL;
    ran = true;
  }
  return ran ? bs_kill_unexplored : NULL;
}

static bs_status add_killer(bs_kill *k, const char *what) {
  char *name = strdup(what);
  bs_status st = name
                     ? bs_vec_push(&k->killed_by, &k->nkilled, NULL, &name,
                                   sizeof name, "kill matrix")
                     : bs_err_fail(BS_ERR_NOMEM, NULL, "kill matrix: %s", what);
  if (st != BS_OK)
    free(name);
  return st;
}

/* r killed k: named by its scenario, with the explored schedule it took
 * (once: the first run of the scenario to kill it, in the matrix's
 * order, its own schedule before the explored ones). */
static bs_status killed_by(bs_kill *k, const bs_result *r, bool explored) {
  size_t len = strlen(r->scenario);
  for (size_t i = 0; i < k->nkilled; i++)
    if (!strncmp(k->killed_by[i], r->scenario, len) &&
        (!k->killed_by[i][len] || k->killed_by[i][len] == ' '))
      return BS_OK;
  char name[160];
  if (explored)
    snprintf(name, sizeof name, "%s (--schedule %s --schedule-seed %llu)",
             r->scenario, r->schedule, (unsigned long long)r->schedule_seed);
  else
    snprintf(name, sizeof name, "%s", r->scenario);
  return add_killer(k, name);
}

bs_status bs_kill_matrix_judge(const bs_result *res, const int *mut,
                               const bool *explored, size_t n, bs_kill *k) {
  bs_status st = BS_OK;
  for (int m = 0; m < BS_MUT_COUNT; m++) {
    memset(&k[m], 0, sizeof k[m]);
    snprintf(k[m].name, sizeof k[m].name, "%s", bs_mutant_name((bs_mutant)m));
  }
  /* A vacuous run broke no invariant, an interrupted one was cut short:
   * neither kills. */
  for (size_t i = 0; i < n; i++) {
    bs_verdict v = res[i].verdict;
    if (mut[i] >= 0 && v == BS_INTERRUPTED)
      k[mut[i]].interrupted = true;
    else if (mut[i] >= 0 && v != BS_PASS && v != BS_VACUOUS)
      BS_CHECK(killed_by(&k[mut[i]], &res[i], explored && explored[i]));
  }
  for (int m = 0; m < BS_MUT_COUNT; m++) {
    k[m].interrupted &= k[m].nkilled == 0;
    if (k[m].nkilled == 0 && !k[m].interrupted)
      k[m].untested = untested(m);
    if (k[m].nkilled == 0 && !k[m].interrupted && !k[m].untested)
      k[m].untested = unexplored(m, res, mut, n);
    k[m].survived = k[m].nkilled == 0 && !k[m].untested && !k[m].interrupted;
  }
out:
  return st;
}
