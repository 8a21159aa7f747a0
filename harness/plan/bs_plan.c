#include "plan/bs_plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_actor.h"
#include "bs_fault_parse.h"
#include "bs_vec.h"
#include "driver/bs_driver.h"
#include "model/bs_config_parse.h"
#include "plan/bs_footprint.h"
#include "run/bs_nccl_plan.h"

#define USAGE(...) BS_FAIL(BS_ERR_INVALID, NULL, __VA_ARGS__)

bool bs_plan_lead(const bs_opts_run *o) {
  return o->procs.proc == 0;
}

int bs_plan_jobs(const bs_opts_run *o) {
  return o->rendezvous ? 1 : o->jobs;
}

bs_status bs_plan_fault(const char *text, bs_run_fault *out) {
  bs_status st = bs_fault_spec_parse(text, &out->spec);
  snprintf(out->text, sizeof out->text, "%s", text);
  return st;
}

bs_status bs_plan_own_faults(const bs_scenario *s, int ranks, bs_run_fault *out,
                             size_t *n) {
  bs_status st = BS_OK;
  char spec[256], prefix[160];
  *n = 0;
  for (const char *const *f = s->faults; f && *f; f++) {
    if (*n == BS_SCENARIO_FAULTS_MAX)
      BS_FAIL(BS_ERR_INTERNAL, NULL, "%s: more than %d faults of its own",
              s->name, BS_SCENARIO_FAULTS_MAX);
    bs_scenario_fault_expand(*f, ranks, spec, sizeof spec);
    snprintf(prefix, sizeof prefix, "%s: its fault", s->name);
    BS_CHECK(bs_opts_prefixed(bs_plan_fault(spec, &out[(*n)++]), prefix));
  }
out:
  return st;
}

int bs_plan_min_cycles(const bs_scenario *s) {
  int need = s->min_cycles;
  bs_run_fault own[BS_SCENARIO_FAULTS_MAX];
  size_t n = 0;
  if (bs_plan_own_faults(s, 1, own, &n) != BS_OK)
    bs_err_clear(); /* the run itself says so */
  for (size_t i = 0; i < n; i++)
    if (own[i].spec.cycle >= need)
      need = own[i].spec.cycle + 1;
  return need;
}

bs_status bs_plan_config(const bs_scenario *s, const bs_config_setting *set,
                         size_t n, bs_mutants m, bs_config *out) {
  bs_status st = BS_OK;
  char prefix[96];
  bs_config_defaults(out);
  for (const char *const *kv = s->sets; kv && *kv; kv++)
    BS_CHECK(bs_config_set_kv(out, *kv));
  for (size_t i = 0; i < n; i++)
    bs_config_apply(out, &set[i]);
  /* As the run will validate it: under its mutants (disk-offload-accepted
   * accepts what the fixed core rejects). */
  if (!s->drive)
    BS_CHECK(bs_config_validate(out, m));
out:
  snprintf(prefix, sizeof prefix, "%s: configuration rejected", s->name);
  return bs_opts_prefixed(st, prefix);
}

static bs_status check_fault_rank(const bs_run_fault *f, int ranks,
                                  const char *scn) {
  if (f->spec.rank < ranks)
    return BS_OK;
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "--fault %s: rank %d is outside the world of %d rank%s "
                     "of %s",
                     f->text, f->spec.rank, ranks, ranks == 1 ? "" : "s", scn);
}

/* A fault in a cycle the run never reaches can never fire. */
static bs_status check_fault_cycle(const bs_run_fault *f, int cycles,
                                   const char *scn) {
  int last = cycles > 0 ? cycles - 1 : 0; /* cycle 0 holds init too */
  if (f->spec.cycle <= last)
    return BS_OK;
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "--fault %s: cycle %d is past the last cycle of %s (%d "
                     "cycle%s: 0..%d); it can never fire",
                     f->text, f->spec.cycle, scn, cycles,
                     cycles == 1 ? "" : "s", last);
}

/* The run's schedule: the options', seeded by --schedule-seed or else by
 * the run's --seed; real threads for ranks that are not all threads of
 * one process on the sim (processes and GPUs keep real time). */
static bs_sched_spec plan_schedule(const bs_opts_run *o, bool spawn) {
  bs_sched_spec s = o->schedule;
  if (!o->schedule_seed_given)
    s.seed = o->seed;
  if (spawn || o->rendezvous || strcmp(o->backend, "sim") != 0)
    s = (bs_sched_spec){.policy = BS_SCHED_THREADS};
  return s;
}

/* A host world that would not fit this machine (bs_footprint.h). */
static bs_status check_footprint(const bs_opts_run *o, const bs_scenario *s,
                                 const bs_model_spec *m, const bs_config *cfg,
                                 int ranks) {
  bs_status st = BS_OK;
  bs_footprint fp;
  bs_room room;
  char why[300];
  bs_footprint_ranks as =
      o->spawn && ranks > 1 ? BS_FOOTPRINT_SPAWN
      : plan_schedule(o, o->spawn).policy == BS_SCHED_THREADS
          ? BS_FOOTPRINT_THREADS
          : BS_FOOTPRINT_SCHEDULED;
  bs_footprint_room(&room);
  BS_CHECK(bs_footprint_of(m, cfg, ranks, as, &fp));
  if (!bs_footprint_fits(&fp, &room, why, sizeof why))
    USAGE("%s: a world of %d rank%s of model %s%s %s; the largest that fits "
          "here: %d",
          s->name, ranks, ranks == 1 ? "" : "s", o->model ? o->model : s->model,
          o->scale != 1.0 ? " at that --scale" : "", why,
          bs_footprint_largest(m, cfg, as, &room));
out:
  return st;
}

/* The run's model at its scale must load (once: the plan's models), lay
 * out over the world, and fit in this machine's memory when the device is
 * the host's. A scenario with its own driver loads none. */
static bs_status model_fits(bs_plan *p, const bs_opts_run *o,
                            const bs_scenario *s, int ranks,
                            const bs_config *cfg, const bs_model_spec **m) {
  bs_status st = BS_OK;
  const char *model = o->model ? o->model : s->model;
  char prefix[300];
  *m = NULL;
  snprintf(prefix, sizeof prefix, "%s: --model %s%s", s->name, model,
           o->scale != 1.0 ? " at that --scale" : "");
  if (s->drive || !model)
    return BS_OK;
  BS_CHECK(
      bs_opts_prefixed(bs_models_get(&p->models, model, o->scale, m), prefix));
  snprintf(prefix, sizeof prefix, "%s at %d ranks", s->name, ranks);
  BS_CHECK(bs_opts_prefixed(bs_actor_layout_check(*m, ranks, cfg), prefix));
  if (strcmp(o->device, "host") == 0)
    BS_CHECK(check_footprint(o, s, *m, cfg, ranks));
out:
  return st;
}

/* Process-per-rank: each process gets as many of the ranks (a custom
 * driver keeps its ranks in process 0). */
static bool splits(const bs_opts_run *o, const bs_scenario *s, int ranks) {
  return s->drive || ranks % o->procs.nprocs == 0;
}

/* Why --cycles is too few for s to be judged (false: it is not). */
static bool few_cycles(const bs_opts_run *o, const bs_scenario *s, char *why,
                       size_t n) {
  int cycles = bs_plan_min_cycles(s);
  if (o->cycles < 0 || o->cycles >= cycles)
    return false;
  snprintf(why, n, "%s needs at least %d cycles, --cycles gave %d", s->name,
           cycles, o->cycles);
  return true;
}

/* Why s cannot run at this size with these options (false: it can). A
 * scenario with its own driver runs no lifecycle of its own options: no
 * --set applies and no --fault can fire. */
static bool unfit(const bs_opts_run *o, const bs_scenario *s, int ranks,
                  char *why, size_t n) {
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
             o->nsets ? o->sets[0] : o->faults[0].text);
  else
    return few_cycles(o, s, why, n);
  return true;
}

/* The user's faults must be able to fire in this world. */
static bs_status check_faults(const bs_opts_run *o, const bs_scenario *s,
                              int ranks, int cycles) {
  bs_status st = BS_OK;
  for (size_t i = 0; i < o->nfaults; i++) {
    BS_CHECK(check_fault_rank(&o->faults[i], ranks, s->name));
    BS_CHECK(check_fault_cycle(&o->faults[i], cycles, s->name));
  }
#ifndef FIU_ENABLE
  if (o->nfaults)
    USAGE("--fault %s: this build has no fault points (BS_FIU=OFF)",
          o->faults[0].text);
#endif
out:
  return st;
}

/* The run's faults: the scenario's, then the user's. */
static bs_status plan_faults(const bs_opts_run *o, const bs_scenario *s,
                             int ranks, bs_run_fault *out, size_t *nown) {
  bs_status st = bs_plan_own_faults(s, ranks, out, nown);
  if (st == BS_OK && o->nfaults)
    memcpy(out + *nown, o->faults, o->nfaults * sizeof *out);
  return st;
}

/* c's fields from the options; its faults at out. */
static void fill(const bs_opts_run *o, const bs_scenario *s, int ranks,
                 const char *exe, bs_run *c) {
  *c = (bs_run){
      .scn = s,
      .ranks = ranks,
      .backend = o->backend,
      .device = o->device,
      .model_name = o->model ? o->model : s->model,
      .scale = o->scale,
      .cycles = o->cycles >= 0 ? o->cycles : s->cycles,
      .nmutants = o->nmutants,
      .sets = o->sets,
      .nsets = o->nsets,
      .seed = o->seed,
      .timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : s->timeout_ms,
      .deadline_s = o->deadline_s,
      .artifacts = o->artifacts,
      .exe = exe,
      .proc = o->procs.proc,
      .nprocs = o->procs.nprocs,
      .rendezvous = o->rendezvous ? o->rdv : NULL,
      .spawn = o->spawn && !s->drive && ranks > 1,
  };
  c->schedule = plan_schedule(o, o->spawn);
  memcpy(c->mutants, o->mutants, o->nmutants * sizeof *c->mutants);
}

static bs_status plan_one(bs_plan *p, const bs_opts_run *o,
                          const bs_scenario *s, int ranks, const char *exe,
                          bs_run *c, bs_run_fault *faults) {
  bs_status st = BS_OK;
  char why[400];
  fill(o, s, ranks, exe, c);
  if (unfit(o, s, ranks, why, sizeof why))
    USAGE("%s", why);
  BS_CHECK(check_faults(o, s, ranks, c->cycles));
  BS_CHECK(bs_plan_config(s, o->settings, o->nsets,
                          bs_mutant_of(o->mutants, o->nmutants), &c->config));
  BS_CHECK(model_fits(p, o, s, ranks, &c->config, &c->model));
  BS_CHECK(plan_faults(o, s, ranks, faults, &c->nown));
  c->nfaults = c->nown + o->nfaults;
out:
  return st;
}

/* Whether a selector names s exactly (not through a label or a glob). */
static bool named(const bs_opts_run *o, const bs_scenario *s) {
  for (size_t i = 0; i < o->nsel; i++)
    if (strcmp(o->sel[i], s->name) == 0)
      return true;
  return false;
}

/* "backstop: skipping NAME<why>" on stderr, from the lead process only
 * (every process plans alike; the others stay silent). */
static void skipping(const bs_opts_run *o, const bs_scenario *s,
                     const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void skipping(const bs_opts_run *o, const bs_scenario *s,
                     const char *fmt, ...) {
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
static bool buildable(const bs_opts_run *o, const bs_scenario *s, bool *told) {
  const char *why = bs_scenario_skip_reason(s);
  if (why && !*told)
    skipping(o, s, ": %s", why);
  *told |= why != NULL;
  return !why;
}

/* The selection and the room its runs need: one per scenario, size and
 * repeat; a place for the faults of each scenario at each size (stride of
 * them), which its repeats share. */
typedef struct selection {
  const bs_scenario *scn[BS_SCENARIO_MAX];
  size_t nscn, per, reps, stride;
  bool told; /* the scenario at hand was said to be skipped */
} selection;

static bs_status select_runs(const bs_opts_run *o, bs_plan *p, selection *x) {
  bs_status st = BS_OK;
  static const char *const suite[] = {BS_DEFAULT_SUITE};
  const bs_model_spec *m;
  char prefix[300];
  /* A model the user names is checked first, whatever runs it. */
  snprintf(prefix, sizeof prefix, "--model %s", o->model ? o->model : "");
  if (o->model)
    BS_CHECK(bs_opts_prefixed(bs_models_get(&p->models, o->model, o->scale, &m),
                              prefix));
  BS_CHECK(bs_scenario_select(o->nsel ? o->sel : suite, o->nsel ? o->nsel : 1,
                              x->scn, &x->nscn));
  x->per = o->nranks ? o->nranks : 1;
  x->reps = (size_t)o->repeat;
  x->stride = BS_SCENARIO_FAULTS_MAX + o->nfaults;
  size_t most = x->nscn * x->per * x->reps + 1;
  p->runs = calloc(most, sizeof *p->runs);
  p->faults = calloc((x->nscn * x->per + 1) * x->stride, sizeof *p->faults);
  if (!p->runs || !p->faults)
    BS_FAIL(BS_ERR_NOMEM, NULL, "plan of %zu runs", most - 1);
out:
  return st;
}

/* Plans scenario s's k-th run, or skips it (a size of a matrix it does not
 * fit, a build that cannot run it). */
static bs_status plan_k(const bs_opts_run *o, const char *exe, bs_plan *p,
                        selection *x, size_t i, size_t k, size_t first) {
  bs_status st = BS_OK;
  const bs_scenario *s = x->scn[i];
  int ranks = o->nranks ? o->ranks[k % x->per] : s->default_ranks;
  /* A matrix of sizes, a label or a glob runs each scenario where it is
   * meaningful; a scenario named with a size below its minimum is a
   * usage error. */
  bool chosen = o->nranks <= 1 && named(o, s);
  char why[400];
  if (!chosen && few_cycles(o, s, why, sizeof why)) { /* at any size */
    if (k == 0)
      skipping(o, s, ": %s", why);
    return BS_OK;
  }
  if (!chosen && unfit(o, s, ranks, why, sizeof why)) {
    if (k < x->per) /* said once */
      skipping(o, s, " at %d rank%s: %s", ranks, ranks == 1 ? "" : "s", why);
    return BS_OK;
  }
  bs_run *c = &p->runs[p->n];
  bs_run_fault *faults = &p->faults[(i * x->per + k % x->per) * x->stride];
  BS_CHECK(plan_one(p, o, s, ranks, exe, c, faults));
  if (!buildable(o, s, &x->told))
    return BS_OK;
  c->faults = faults;
  c->run_index = p->n;
  for (size_t j = first; j < p->n; j++) /* the same run planned before */
    c->repeat += p->runs[j].ranks == ranks;
  /* --repeat N runs N schedules: the k-th repeat's seed is k past the
   * first's (real threads: the same run again, races by chance). */
  if (c->schedule.policy != BS_SCHED_THREADS)
    c->schedule.seed += (uint64_t)c->repeat;
  p->n++;
out:
  return st;
}

bs_status bs_plan_runs(const bs_opts_run *o, const char *exe, bs_plan *out) {
  bs_status st = BS_OK;
  selection x = {0};
  memset(out, 0, sizeof *out);
  BS_CHECK(select_runs(o, out, &x));
  for (size_t i = 0; i < x.nscn; i++) {
    size_t first = out->n; /* this scenario's runs start here */
    x.told = false;
    for (size_t k = 0; k < x.per * x.reps; k++)
      BS_CHECK(plan_k(o, exe, out, &x, i, k, first));
  }
  /* Every scenario it selects skipped (each said why above): nothing to
   * judge, and an exit status 0 would say all passed. */
  if (out->n == 0)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "the selection runs nothing: every scenario it selects was "
            "skipped");
  BS_CHECK(bs_nccl_plan(out->runs, out->n));
  /* Last, once nothing else refuses the runs: a job id used twice. */
  if (o->rendezvous)
    BS_CHECK(bs_launcher_claim(&o->procs, o->rdv));
out:
  if (st != BS_OK)
    bs_plan_free(out);
  return st;
}

void bs_plan_warn_deadlines(const bs_plan *p) {
  for (size_t i = 0; i < p->n; i++) {
    const bs_run *r = &p->runs[i];
    char why[160];
    double ms = bs_driver_waits_ms(r, why, sizeof why);
    if (ms < r->deadline_s * 1000 ||
        (i && !strcmp(r->scn->name, p->runs[i - 1].scn->name)))
      continue;
    fprintf(stderr,
            "backstop: warning: %s: --deadline-s %g is shorter than the "
            "%.0f ms its faults make it wait (%s): the deadline would end it "
            "before its watchdog does (raise --deadline-s or lower "
            "--timeout-ms)\n",
            r->scn->name, r->deadline_s, ms, why);
  }
}

void bs_plan_free(bs_plan *p) {
  free(p->runs);
  free(p->faults);
  bs_models_free(&p->models);
  memset(p, 0, sizeof *p);
}
