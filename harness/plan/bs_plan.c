#include "plan/bs_plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_actor.h"
#include "bs_mutant.h"
#include "driver/bs_driver.h"
#include "model/bs_config.h"
#include "model/bs_model.h"
#include "plan/bs_footprint.h"
#include "run/bs_nccl_plan.h"

#define USAGE(...) BS_FAIL(BS_ERR_INVALID, NULL, __VA_ARGS__)

bs_status bs_plan_prefixed(bs_status st, const char *prefix) {
  if (st == BS_OK)
    return st;
  char msg[sizeof bs_err()->message];
  snprintf(msg, sizeof msg, "%s", bs_err()->message);
  bs_err_clear();
  return bs_err_fail(st == BS_ERR_CONFIG ? BS_ERR_INVALID : st, NULL, "%s: %s",
                     prefix, msg);
}

bool bs_plan_lead(const bs_opts *o) {
  return o->procs.proc == 0;
}

void bs_plan_defaults(const char *cmd, bs_opts *o) {
  memset(o, 0, sizeof *o);
  o->backend = "sim";
  o->scale = 1.0;
  o->cycles = -1;
  o->deadline_s = BS_RUN_DEADLINE_S;
  o->jobs = 2;
  o->repeat = 1;
  o->procs.nprocs = 1;
  o->artifacts = strcmp(cmd, "run") == 0 ? "backstop-artifacts" : NULL;
  o->sweep_rank = o->sweep_cycle = -1;
  o->max_ranks = 4;
  o->shrink_max = 120;
  /* Thousands of runs: one that waits for the watchdog (a rank that never
   * joins an init) or hangs costs that much, so both are short unless
   * given; a repro line names the watchdog it ran with. */
  if (strcmp(cmd, "sweep") == 0)
    o->timeout_ms = 1000;
  if (strcmp(cmd, "fuzz") == 0) {
    o->timeout_ms = 1000;
    o->deadline_s = 20;
  }
  /* Their runs wait on watchdogs more than they compute: twice the CPUs. */
  if (!strcmp(cmd, "sweep") || !strcmp(cmd, "fuzz")) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o->jobs = cpus < 1 ? 2 : cpus > 32 ? 64 : (int)(2 * cpus);
  }
}

/* A simulated world's ranks share this machine's CPUs: its time grows
 * with the ranks per CPU (docs/performance.md: 16,384 ranks took some
 * 90 s on 2 cores, 4,096 ranks 15-18 s), so a fixed default would kill a
 * large world that is merely slow. Past BS_RUN_DEADLINE_RANKS_PER_CPU ranks
 * per CPU the default grows in proportion (16,384 ranks on 2 CPUs: 240 s,
 * some 2.5 times what such a world takes); a deadline the user gives is
 * kept as it is. */
double bs_plan_deadline_s(const bs_opts *o, int ranks) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  double per = (double)BS_RUN_DEADLINE_RANKS_PER_CPU * (cpus < 1 ? 1 : cpus);
  if (o->deadline_given || ranks <= per)
    return o->deadline_s;
  return o->deadline_s * (double)ranks / per;
}

int bs_plan_jobs(const bs_opts *o) {
  return o->rendezvous ? 1 : o->jobs;
}

static bs_status check_fault_rank(const char *spec, int ranks,
                                  const char *scn) {
  bs_fault_spec f;
  bs_status st = bs_fault_spec_parse(spec, &f);
  if (st == BS_OK && f.rank >= ranks)
    st = bs_err_fail(BS_ERR_INVALID, NULL,
                     "--fault %s: rank %d is outside the "
                     "world of %d rank%s of %s",
                     spec, f.rank, ranks, ranks == 1 ? "" : "s", scn);
  return st;
}

/* A fault in a cycle the run never reaches can never fire. */
static bs_status check_fault_cycle(const char *spec, int cycles,
                                   const char *scn) {
  bs_fault_spec f;
  bs_status st = bs_fault_spec_parse(spec, &f);
  int last = cycles > 0 ? cycles - 1 : 0; /* cycle 0 holds init too */
  if (st == BS_OK && f.cycle > last)
    st = bs_err_fail(BS_ERR_INVALID, NULL,
                     "--fault %s: cycle %d is past the last cycle of %s (%d "
                     "cycle%s: 0..%d); it can never fire",
                     spec, f.cycle, scn, cycles, cycles == 1 ? "" : "s", last);
  return st;
}

/* The scenario's settings, then the user's, must pass validation. */
static bs_status check_config(const bs_opts *o, const bs_scenario *s,
                              bs_config *cfg) {
  bs_status st = BS_OK;
  char prefix[96];
  bs_config_defaults(cfg);
  for (const char *const *kv = s->sets; kv && *kv; kv++)
    BS_CHECK(bs_config_set_kv(cfg, *kv));
  for (size_t i = 0; i < o->nsets; i++)
    BS_CHECK(bs_config_set_kv(cfg, o->sets[i]));
  /* As the run will validate it: under its mutants (disk-offload-accepted
   * accepts what the fixed core rejects). */
  for (size_t i = 0; i < o->nmutants; i++)
    bs_mutant_set((bs_mutant)bs_mutant_parse(o->mutants[i]), true);
  if (!s->drive)
    st = bs_config_validate(cfg);
  bs_mutant_reset();
  BS_CHECK(st);
out:
  snprintf(prefix, sizeof prefix, "%s: configuration rejected", s->name);
  return bs_plan_prefixed(st, prefix);
}

/* A host world that would not fit this machine (bs_footprint.h). */
static bs_status check_footprint(const bs_opts *o, const bs_scenario *s,
                                 const bs_model_spec *m, const bs_config *cfg,
                                 int ranks) {
  bs_status st = BS_OK;
  bs_footprint fp;
  bs_room room;
  char why[300];
  bool spawn = o->spawn && ranks > 1;
  bs_footprint_room(&room);
  BS_CHECK(bs_footprint_of(m, cfg, ranks, spawn, &fp));
  if (!bs_footprint_fits(&fp, &room, why, sizeof why))
    USAGE("%s: a world of %d rank%s of model %s%s %s; the largest that fits "
          "here: %d",
          s->name, ranks, ranks == 1 ? "" : "s", o->model ? o->model : s->model,
          o->scale != 1.0 ? " at that --scale" : "", why,
          bs_footprint_largest(m, cfg, spawn, &room));
out:
  return st;
}

/* The run's model at its scale must load, lay out over the world, and fit
 * in this machine's memory when the device is the host's. */
static bs_status check_model_fits(const bs_opts *o, const bs_scenario *s,
                                  int ranks, const bs_config *cfg) {
  bs_status st = BS_OK;
  bs_model_spec m = {0};
  const char *model = o->model ? o->model : s->model;
  char prefix[300];
  snprintf(prefix, sizeof prefix, "%s: --model %s%s", s->name, model,
           o->scale != 1.0 ? " at that --scale" : "");
  if (s->drive || !model)
    return BS_OK;
  BS_CHECK(bs_plan_prefixed(bs_model_load(model, o->scale, &m), prefix));
  snprintf(prefix, sizeof prefix, "%s at %d ranks", s->name, ranks);
  BS_CHECK(bs_plan_prefixed(bs_actor_layout_check(&m, ranks, cfg), prefix));
  if (strcmp(o->device, "host") == 0)
    BS_CHECK(check_footprint(o, s, &m, cfg, ranks));
out:
  bs_model_free(&m);
  return st;
}

/* Process-per-rank: each process gets as many of the ranks (a custom
 * driver keeps its ranks in process 0). */
static bool splits(const bs_opts *o, const bs_scenario *s, int ranks) {
  return s->drive || ranks % o->procs.nprocs == 0;
}

/* Why s cannot run at this size with these options (false: it can). A
 * scenario with its own driver runs no lifecycle of its own options: no
 * --set applies and no --fault can fire. */
static bool unfit(const bs_opts *o, const bs_scenario *s, int ranks, char *why,
                  size_t n) {
  if (ranks < s->min_ranks)
    snprintf(why, n, "%s needs at least %d ranks, --ranks gave %d", s->name,
             s->min_ranks, ranks);
  else if (!splits(o, s, ranks))
    snprintf(why, n, "%s: %d ranks do not split evenly over %d processes",
             s->name, ranks, o->procs.nprocs);
  else if (s->drive && (o->nsets || o->nfaults))
    snprintf(why, n,
             "%s runs its own driver: %s %s does not apply (it takes no "
             "--set and fires no --fault)",
             s->name, o->nsets ? "--set" : "--fault",
             o->nsets ? o->sets[0] : o->faults[0]);
  else
    return false;
  return true;
}

static bs_status plan_one(const bs_opts *o, const bs_scenario *s, int ranks,
                          const char *exe, bs_run_cfg *c) {
  bs_status st = BS_OK;
  bs_config cfg;
  char why[400];
  int cycles = o->cycles >= 0 ? o->cycles : s->cycles;
  if (unfit(o, s, ranks, why, sizeof why))
    USAGE("%s", why);
  for (size_t i = 0; i < o->nfaults; i++) {
    BS_CHECK(check_fault_rank(o->faults[i], ranks, s->name));
    BS_CHECK(check_fault_cycle(o->faults[i], cycles, s->name));
  }
#ifndef FIU_ENABLE
  if (o->nfaults)
    USAGE("--fault %s: this build has no fault points (BS_FIU=OFF)",
          o->faults[0]);
#endif
  BS_CHECK(check_config(o, s, &cfg));
  BS_CHECK(check_model_fits(o, s, ranks, &cfg));
  *c = (bs_run_cfg){
      .scn = s,
      .ranks = ranks,
      .backend = o->backend,
      .device = o->device,
      .model = o->model ? o->model : s->model,
      .scale = o->scale,
      .cycles = cycles,
      .sets = o->sets,
      .nsets = o->nsets,
      .faults = o->faults,
      .nfaults = o->nfaults,
      .mutants = o->mutants,
      .nmutants = o->nmutants,
      .seed = o->seed,
      .timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : s->timeout_ms,
      .deadline_s = bs_plan_deadline_s(o, ranks),
      .deadline_scaled = !o->deadline_given,
      .artifacts = o->artifacts,
      .exe = exe,
      .proc = o->procs.proc,
      .nprocs = o->procs.nprocs,
      .rendezvous = o->rendezvous ? o->rdv : NULL,
      .spawn = o->spawn && !s->drive && ranks > 1,
  };
out:
  return st;
}

/* Whether a selector names s exactly (not through a label or a glob). */
static bool named(const bs_opts *o, const bs_scenario *s) {
  for (size_t i = 0; i < o->nsel; i++)
    if (strcmp(o->sel[i], s->name) == 0)
      return true;
  return false;
}

/* "backstop: skipping NAME<why>" on stderr, from the lead process only
 * (every process plans alike; the others stay silent). */
static void skipping(const bs_opts *o, const bs_scenario *s, const char *fmt,
                     ...) __attribute__((format(printf, 3, 4)));
static void skipping(const bs_opts *o, const bs_scenario *s, const char *fmt,
                     ...) {
  if (!bs_plan_lead(o))
    return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "backstop: skipping %s", s->name);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* Valid, but this build cannot run it: left out of the run and of the
 * reports, said once per scenario. */
static bool buildable(const bs_opts *o, const bs_scenario *s, bool *told) {
  const char *why = bs_scenario_skip_reason(s);
  if (why && !*told)
    skipping(o, s, ": %s", why);
  *told |= why != NULL;
  return !why;
}

bs_status bs_plan_runs(const bs_opts *o, const char *exe, bs_run_cfg **out,
                       size_t *n) {
  bs_status st = BS_OK;
  static const char *const suite[] = {BS_DEFAULT_SUITE};
  const bs_scenario *scn[BS_SCENARIO_MAX];
  size_t nscn = 0;
  *out = NULL;
  *n = 0;
  BS_CHECK(bs_scenario_select(o->nsel ? o->sel : suite, o->nsel ? o->nsel : 1,
                              scn, &nscn));
  size_t per = o->nranks ? o->nranks : 1, reps = (size_t)o->repeat;
  *out = calloc(nscn * per * reps + 1, sizeof **out);
  if (!*out)
    BS_FAIL(BS_ERR_NOMEM, NULL, "plan of %zu runs", nscn * per * reps);
  for (size_t i = 0; i < nscn; i++) {
    bool told = false;
    size_t first = *n; /* this scenario's runs start here */
    for (size_t k = 0; k < per * reps; k++) {
      int ranks = o->nranks ? o->ranks[k % per] : scn[i]->default_ranks;
      /* A matrix of sizes, a label or a glob runs each scenario where it is
       * meaningful; a scenario named with a size below its minimum is a
       * usage error. */
      bool chosen = o->nranks <= 1 && named(o, scn[i]);
      char why[400];
      if (!chosen && unfit(o, scn[i], ranks, why, sizeof why)) {
        if (k < per) /* said once */
          skipping(o, scn[i], " at %d rank%s: %s", ranks, ranks == 1 ? "" : "s",
                   why);
        continue;
      }
      BS_CHECK(plan_one(o, scn[i], ranks, exe, &(*out)[*n]));
      if (!buildable(o, scn[i], &told))
        continue;
      (*out)[*n].run_index = *n;
      for (size_t j = first; j < *n; j++) /* the same run planned before */
        (*out)[*n].repeat += (*out)[j].ranks == ranks;
      (*n)++;
    }
  }
  /* Every scenario it selects skipped (each said why above): nothing to
   * judge, and an exit status 0 would say all passed. */
  if (*n == 0)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "the selection runs nothing: every scenario it selects was "
            "skipped");
  BS_CHECK(bs_nccl_plan(*out, *n));
  /* Last, once nothing else refuses the runs: a job id used twice. */
  if (o->rendezvous)
    BS_CHECK(bs_launcher_claim(&o->procs, o->rdv));
out:
  if (st != BS_OK) {
    free(*out);
    *out = NULL;
    *n = 0;
  }
  return st;
}
