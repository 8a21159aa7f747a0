#include "plan/bs_opts.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_fault_parse.h"
#include "bs_file.h"
#include "bs_near.h"
#include "bs_num.h"
#include "model/bs_config_parse.h"
#include "run/bs_nccl_plan.h"

#define USAGE(...) BS_FAIL(BS_ERR_INVALID, NULL, __VA_ARGS__)

enum {
  O_RANKS = 256,
  O_BACKEND,
  O_DEVICE,
  O_MODEL,
  O_SCALE,
  O_CYCLES,
  O_SET,
  O_FAULT,
  O_MUTANT,
  O_SEED,
  O_SCHEDULE,
  O_SCHEDULE_SEED,
  O_TIMEOUT,
  O_DEADLINE,
  O_JSON,
  O_JUNIT,
  O_ARTIFACTS,
  O_RENDEZVOUS,
  O_SPAWN,
  O_REPEAT,
  O_TARGETED,
  O_POINT,
  O_RANK,
  O_CYCLE,
  O_SAMPLE,
  O_RUNS,
  O_TIME,
  O_MAX_RANKS,
  O_SHRINK_MAX,
  O_STRICT,
};

static const struct option longopts[] = {
    {"ranks", required_argument, NULL, O_RANKS},
    {"backend", required_argument, NULL, O_BACKEND},
    {"device", required_argument, NULL, O_DEVICE},
    {"model", required_argument, NULL, O_MODEL},
    {"scale", required_argument, NULL, O_SCALE},
    {"cycles", required_argument, NULL, O_CYCLES},
    {"set", required_argument, NULL, O_SET},
    {"fault", required_argument, NULL, O_FAULT},
    {"mutant", required_argument, NULL, O_MUTANT},
    {"seed", required_argument, NULL, O_SEED},
    {"schedule", required_argument, NULL, O_SCHEDULE},
    {"schedule-seed", required_argument, NULL, O_SCHEDULE_SEED},
    {"timeout-ms", required_argument, NULL, O_TIMEOUT},
    {"deadline-s", required_argument, NULL, O_DEADLINE},
    {"jobs", required_argument, NULL, 'j'},
    {"json", required_argument, NULL, O_JSON},
    {"junit", required_argument, NULL, O_JUNIT},
    {"artifacts", required_argument, NULL, O_ARTIFACTS},
    {"rendezvous", required_argument, NULL, O_RENDEZVOUS},
    {"spawn", no_argument, NULL, O_SPAWN},
    {"repeat", required_argument, NULL, O_REPEAT},
    {"targeted", no_argument, NULL, O_TARGETED},
    {"point", required_argument, NULL, O_POINT},
    {"rank", required_argument, NULL, O_RANK},
    {"cycle", required_argument, NULL, O_CYCLE},
    {"sample", required_argument, NULL, O_SAMPLE},
    {"runs", required_argument, NULL, O_RUNS},
    {"time-s", required_argument, NULL, O_TIME},
    {"max-ranks", required_argument, NULL, O_MAX_RANKS},
    {"shrink-max", required_argument, NULL, O_SHRINK_MAX},
    {"strict", no_argument, NULL, O_STRICT},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
};

/* The command being parsed: its name, run's options, and its own (NULL
 * for the commands it is not). */
typedef struct parsing {
  const char *cmd;
  bs_opts_run *o;
  bs_opts_mutants *mutants;
  bs_opts_sweep *sweep;
  bs_opts_fuzz *fuzz;
} parsing;

bs_status bs_opts_prefixed(bs_status st, const char *prefix) {
  if (st == BS_OK)
    return st;
  char msg[sizeof bs_err()->message];
  snprintf(msg, sizeof msg, "%s", bs_err()->message);
  bs_err_clear();
  return bs_err_fail(st == BS_ERR_CONFIG ? BS_ERR_INVALID : st, NULL, "%s: %s",
                     prefix, msg);
}

bs_status bs_opts_long(const char *opt, const char *s, long lo, long hi,
                       long *out) {
  if (bs_num_long(s, lo, hi, out))
    return BS_OK;
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "%s: '%s' is not an integer in [%ld, %ld]", opt, s, lo,
                     hi);
}

static bs_status opt_int(const char *opt, const char *s, long lo, long hi,
                         int *out) {
  long v = 0;
  bs_status st = bs_opts_long(opt, s, lo, hi, &v);
  *out = st == BS_OK ? (int)v : *out;
  return st;
}

static bs_status parse_positive(const char *opt, const char *s, double max,
                                double *out) {
  if (bs_num_positive(s, max, out))
    return BS_OK;
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "%s: '%s' is not a number in (0, %g]", opt, s, max);
}

/* Decimal, or hex after 0x; never octal, a sign or a space. */
static bs_status parse_seed(const char *opt, const char *s, uint64_t *out) {
  unsigned long long v;
  if (!bs_num_ull(s, 0, UINT64_MAX, &v) && !bs_num_hex(s, &v))
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "%s: '%s' is not an unsigned 64-bit integer "
                       "(decimal without a leading zero, or 0x hex)",
                       opt, s);
  *out = v;
  return BS_OK;
}

/* "4" or "1,2,4,8". */
static bs_status parse_ranks(const char *s, bs_opts_run *o) {
  bs_status st = BS_OK;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  o->nranks = 0;
  char *save = NULL;
  if (!*s || s[strlen(s) - 1] == ',' || strstr(s, ",,") || *s == ',')
    USAGE("--ranks: '%s' is not N or a list N,M,...", s);
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (o->nranks == sizeof o->ranks / sizeof o->ranks[0])
      USAGE("--ranks: at most %zu world sizes",
            sizeof o->ranks / sizeof o->ranks[0]);
    BS_CHECK(opt_int("--ranks", t, 1, BS_RANKS_MAX, &o->ranks[o->nranks]));
    o->nranks++;
  }
out:
  return st;
}

bs_status bs_opts_choice(const char *opt, const char *v, const char *a,
                         const char *b) {
  if (strcmp(v, a) == 0 || strcmp(v, b) == 0)
    return BS_OK;
  return bs_err_fail(BS_ERR_INVALID, NULL, "%s: '%s' is not %s or %s", opt, v,
                     a, b);
}

/* Room for one more of a repeatable option. */
static bs_status room(size_t n, size_t max, const char *opt) {
  if (n < max)
    return BS_OK;
  return bs_err_fail(BS_ERR_INVALID, NULL, "%s: at most %zu", opt, max);
}

static bs_status add(const char **arr, size_t *n, size_t max, const char *opt,
                     const char *v) {
  bs_status st = room(*n, max, opt);
  if (st == BS_OK)
    arr[(*n)++] = v;
  return st;
}

/* --set KEY=VALUE: parsed into its setting, kept as given for the repro. */
static bs_status add_set(bs_opts_run *o, const char *kv) {
  bs_status st = BS_OK;
  char prefix[160];
  snprintf(prefix, sizeof prefix, "--set %s", kv);
  BS_CHECK(room(o->nsets, BS_OPTS_MAX, "--set"));
  BS_CHECK(bs_opts_prefixed(bs_config_setting_parse(kv, &o->settings[o->nsets]),
                            prefix));
  o->sets[o->nsets++] = kv;
out:
  return st;
}

static bs_status add_fault(bs_opts_run *o, const char *spec) {
  bs_status st = BS_OK;
  BS_CHECK(room(o->nfaults, BS_FAULT_MAX_SPECS, "--fault"));
  bs_run_fault *f = &o->faults[o->nfaults];
  BS_CHECK(bs_opts_prefixed(bs_fault_spec_parse(spec, &f->spec), "--fault"));
  snprintf(f->text, sizeof f->text, "%s", spec);
  o->nfaults++;
out:
  return st;
}

/* " (did you mean 'NAME'?)" for a mistyped mutant, or "". */
static const char *near_mutant(const char *name) {
  const char *names[BS_MUT_COUNT];
  for (int m = 0; m < BS_MUT_COUNT; m++)
    names[m] = bs_mutant_name((bs_mutant)m);
  return bs_near_hint(name, names, BS_MUT_COUNT);
}

static bs_status add_mutant(const parsing *p, const char *name) {
  bs_status st = BS_OK;
  bs_opts_run *o = p->o;
  int m = bs_mutant_parse(name);
  if (p->mutants)
    USAGE("--mutant is not an option of mutants (it runs every mutant)");
  if (m < 0)
    USAGE("--mutant: unknown mutant '%s'%s (see backstop help mutants)", name,
          near_mutant(name));
  for (size_t i = 0; i < o->nmutants; i++)
    if (o->mutants[i] == (bs_mutant)m) /* named twice: on once */
      return BS_OK;
  o->mutants[o->nmutants++] = (bs_mutant)m;
out:
  return st;
}

/* An option of one command only: "--point: an option of backstop sweep". */
static bs_status only(const void *mine, const char *want, const char *opt) {
  if (mine)
    return BS_OK;
  return bs_err_fail(BS_ERR_INVALID, NULL, "%s: an option of backstop %s", opt,
                     want);
}

/* --sample N (reaches per scenario) or P% (of each scenario's reaches, in
 * (0, 100]). */
static bs_status parse_sample(const char *arg, bs_opts_sweep *o) {
  size_t len = strlen(arg);
  long v = 0;
  if (len > 1 && arg[len - 1] == '%') {
    char num[32];
    snprintf(num, sizeof num, "%.*s", (int)(len - 1), arg);
    bs_status st = bs_opts_long("--sample", num, 1, 100, &v);
    o->sample_pct = st == BS_OK ? (int)v : 0;
    return st;
  }
  bs_status st = bs_opts_long("--sample", arg, 1, BS_OPTS_COUNT_MAX, &v);
  o->sample = st == BS_OK ? (size_t)v : 0;
  return st;
}

/* sweep's filters and sample. */
static bs_status sweep_option(int c, const char *arg, bs_opts_sweep *o) {
  bs_status st = BS_OK;
  switch (c) {
  case O_POINT:
    if (!bs_fault_spec_name_valid(arg))
      USAGE("--point: unknown fault point '%s'%s (see backstop faults)", arg,
            bs_fault_spec_near(arg));
    return add(o->points, &o->npoints, BS_OPTS_MAX, "--point", arg);
  case O_RANK:
    return opt_int("--rank", arg, 0, BS_RANKS_MAX - 1, &o->rank);
  case O_CYCLE:
    return opt_int("--cycle", arg, 0, 100000, &o->cycle);
  default: /* O_SAMPLE */
    return parse_sample(arg, o);
  }
out:
  return st;
}

/* fuzz's budget and bounds. */
static bs_status fuzz_option(int c, const char *arg, bs_opts_fuzz *o) {
  switch (c) {
  case O_RUNS:
    return bs_opts_long("--runs", arg, 1, BS_OPTS_COUNT_MAX, &o->runs);
  case O_TIME:
    return parse_positive("--time-s", arg, BS_OPTS_SECONDS_MAX, &o->time_s);
  case O_MAX_RANKS:
    return opt_int("--max-ranks", arg, 1, BS_RANKS_MAX, &o->max_ranks);
  default: /* O_SHRINK_MAX */
    return opt_int("--shrink-max", arg, 1, 100000, &o->shrink_max);
  }
}

static const char *long_name(int c) {
  for (const struct option *l = longopts; l->name; l++)
    if (l->val == c)
      return l->name;
  return "?";
}

/* The options of one command only: mutants', sweep's, fuzz's. */
static bs_status own_option(const parsing *p, int c, const char *arg) {
  bs_status st = BS_OK;
  char opt[32];
  snprintf(opt, sizeof opt, "--%s", long_name(c));
  if (c == O_TARGETED) {
    BS_CHECK(only(p->mutants, "mutants", opt));
    p->mutants->targeted = true;
  } else if (c == O_STRICT) {
    bool *strict = p->sweep  ? &p->sweep->strict
                   : p->fuzz ? &p->fuzz->strict
                             : NULL;
    BS_CHECK(only(strict, "fuzz", opt)); /* sweep's too */
    *strict = true;
  } else if (c >= O_POINT && c <= O_SAMPLE) {
    BS_CHECK(only(p->sweep, "sweep", opt));
    BS_CHECK(sweep_option(c, arg, p->sweep));
  } else {
    BS_CHECK(only(p->fuzz, "fuzz", opt));
    BS_CHECK(fuzz_option(c, arg, p->fuzz));
  }
out:
  return st;
}

/* A folder option's value: not empty. */
static bs_status folder(const char *opt, const char *arg, const char **out) {
  if (!*arg)
    return bs_err_fail(BS_ERR_INVALID, NULL, "%s: an empty folder name", opt);
  *out = arg;
  return BS_OK;
}

/* What the run is: its world, model, settings, faults, mutants, seed. */
static bs_status what_option(const parsing *p, int c, const char *arg) {
  bs_opts_run *o = p->o;
  switch (c) {
  case O_RANKS:
    return parse_ranks(arg, o);
  case O_BACKEND:
    o->backend = arg;
    return bs_opts_choice("--backend", arg, "sim", "nccl");
  case O_DEVICE:
    o->device = arg;
    return bs_opts_choice("--device", arg, "host", "cuda");
  case O_MODEL:
    o->model = arg;
    return BS_OK;
  case O_SCALE:
    return parse_positive("--scale", arg, BS_OPTS_SCALE_MAX, &o->scale);
  case O_CYCLES:
    return opt_int("--cycles", arg, 0, 100000, &o->cycles);
  case O_SET:
    return add_set(o, arg);
  case O_FAULT:
    return add_fault(o, arg);
  case O_MUTANT:
    return add_mutant(p, arg);
  default: /* O_SEED */
    return parse_seed("--seed", arg, &o->seed);
  }
}

/* --schedule SPEC (base/bs_sched_spec.h) and --schedule-seed S. */
static bs_status schedule_option(bs_opts_run *o, int c, const char *arg) {
  if (c == O_SCHEDULE_SEED) {
    o->schedule_seed_given = true;
    return parse_seed("--schedule-seed", arg, &o->schedule.seed);
  }
  o->schedule_given = true;
  return bs_opts_prefixed(bs_sched_spec_parse(arg, &o->schedule), "--schedule");
}

/* How runs are run and reported. */
static bs_status how_option(bs_opts_run *o, int c, const char *arg) {
  switch (c) {
  case O_TIMEOUT:
    return opt_int("--timeout-ms", arg, 1, INT_MAX, &o->timeout_ms);
  case O_DEADLINE:
    return parse_positive("--deadline-s", arg, BS_OPTS_SECONDS_MAX,
                          &o->deadline_s);
  case 'j':
    return opt_int("-j", arg, 1, 256, &o->jobs);
  case O_JSON:
    o->json = arg;
    return BS_OK;
  case O_JUNIT:
    o->junit = arg;
    return BS_OK;
  case O_ARTIFACTS:
    return folder("--artifacts", arg, &o->artifacts);
  case O_RENDEZVOUS:
    return folder("--rendezvous", arg, &o->rendezvous);
  case O_REPEAT:
    return opt_int("--repeat", arg, 1, BS_OPTS_REPEAT_MAX, &o->repeat);
  }
  /* The flags: --spawn, -q, -v. */
  o->spawn |= c == O_SPAWN;
  o->verbosity = c == 'q' ? -1 : c == 'v' ? 1 : o->verbosity;
  return BS_OK;
}

static bs_status option(const parsing *p, int c, const char *arg) {
  if (c >= O_TARGETED)
    return own_option(p, c, arg);
  if (c == O_SCHEDULE || c == O_SCHEDULE_SEED)
    return schedule_option(p->o, c, arg);
  if (c < O_TIMEOUT && c >= O_RANKS)
    return what_option(p, c, arg);
  return how_option(p->o, c, arg);
}

/* Process-per-rank: which process this is, and the job's folder. */
static bs_status check_procs(bs_opts_run *o) {
  bs_status st = BS_OK;
  bs_launcher *p = &o->procs;
  p->nprocs = 1;
  if (o->spawn && o->rendezvous)
    USAGE("--spawn and --rendezvous: backstop starts the processes, or a "
          "launcher does, not both");
  if (!o->rendezvous)
    return BS_OK;
  BS_CHECK(bs_opts_prefixed(bs_launcher_from_env(p), "--rendezvous"));
  snprintf(o->rdv, sizeof o->rdv, "%s/%s", o->rendezvous,
           p->job[0] ? p->job : "job");
  /* Without a job id a later job would read this one's files. */
  if (p->nprocs > 1 && !p->job[0])
    USAGE("--rendezvous: %d processes (%s) but no job id: the launcher set "
          "none of PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid, SLURM_JOB_ID, "
          "TORCHELASTIC_RUN_ID; "
          "set BS_JOB_ID to a value unique to this job",
          p->nprocs, p->from);
  BS_CHECK(bs_opts_prefixed(bs_file_mkdir_p(o->rdv), "--rendezvous"));
out:
  return st;
}

/* A schedule named for ranks that cannot take one (processes, GPUs: real
 * threads on real time) would not be the schedule they ran. */
static bs_status check_schedule(const bs_opts_run *o) {
  bool procs = o->spawn || o->rendezvous || strcmp(o->backend, "sim") != 0;
  if (!procs || o->schedule.policy == BS_SCHED_THREADS ||
      (!o->schedule_given && !o->schedule_seed_given))
    return BS_OK;
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "--schedule%s: %s runs%s ranks on real threads and real "
                     "time, whatever the schedule (--schedule threads)",
                     o->schedule_given ? "" : "-seed",
                     o->spawn        ? "--spawn"
                     : o->rendezvous ? "--rendezvous"
                                     : "--backend nccl",
                     o->spawn || o->rendezvous ? " processes of" : "");
}

/* A report's path ("-": stdout) can be written, a file really made there
 * and removed (as root too, where access() says yes to anything). */
static bs_status check_report(const char *opt, const char *path) {
  if (!path || strcmp(path, "-") == 0)
    return BS_OK;
  if (!*path)
    return bs_err_fail(BS_ERR_INVALID, NULL, "%s: an empty file name", opt);
  return bs_opts_prefixed(bs_file_probe(path), opt);
}

/* Every output the command writes is checked before anything runs, by the
 * lead process that writes them (docs/cli.md "Exit status"). */
static bs_status check_outputs(const bs_opts_run *o) {
  bs_status st = BS_OK;
  if (o->procs.proc != 0)
    return BS_OK;
  BS_CHECK(check_report("--json", o->json));
  BS_CHECK(check_report("--junit", o->junit));
  if (o->artifacts)
    BS_CHECK(bs_opts_prefixed(bs_file_probe_dir(o->artifacts), "--artifacts"));
out:
  return st;
}

/* Every command's defaults (bs_opts.h); the campaigns' are their own. */
static void defaults(const parsing *p) {
  bs_opts_run *o = p->o;
  memset(o, 0, sizeof *o);
  o->backend = "sim";
  o->scale = 1.0;
  o->cycles = -1;
  o->schedule.policy = BS_SCHED_RANDOM;
  o->deadline_s = BS_RUN_DEADLINE_S;
  o->jobs = 2;
  o->repeat = 1;
  o->procs.nprocs = 1;
  o->artifacts = strcmp(p->cmd, "run") == 0 ? "backstop-artifacts" : NULL;
  if (!p->sweep && !p->fuzz)
    return;
  /* Thousands of runs: one that waits for the watchdog (a rank that never
   * joins an init) or hangs costs that much on real threads, so both are
   * short unless given; a repro line names the watchdog it ran with. Their
   * jobs: campaign_jobs, once the schedule is known. */
  o->timeout_ms = 1000;
  o->deadline_s = p->fuzz ? 20 : o->deadline_s;
  o->jobs = 0;
}

/* A campaign's jobs unless -j: a CPU each for scheduled worlds (one rank
 * runs at a time: each run is a CPU's work, with no wait), twice the CPUs
 * on real threads (their runs wait on watchdogs in real time). */
static void campaign_jobs(bs_opts_run *o) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  cpus = cpus < 1 ? 1 : cpus > 32 ? 32 : cpus;
  if (o->jobs == 0)
    o->jobs = (int)(o->schedule.policy == BS_SCHED_THREADS ? 2 * cpus : cpus);
}

static bs_status parse(const parsing *p, int argc, char **argv) {
  bs_status st = BS_OK;
  bs_opts_run *o = p->o;
  optind = 0; /* glibc: a full re-initialisation, so parse can run again */
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":j:qv", longopts, NULL)) != -1) {
    if (c == '?' && optopt)
      USAGE("unknown option '-%c' (see backstop help %s)", optopt, p->cmd);
    if (c == '?')
      USAGE("unknown option '%s' (see backstop help %s)", argv[optind - 1],
            p->cmd);
    if (c == ':')
      USAGE("option '%s' needs a value", argv[optind - 1]);
    BS_CHECK(option(p, c, optarg));
  }
  for (int i = optind; i < argc; i++)
    BS_CHECK(add(o->sel, &o->nsel, BS_OPTS_MAX, "selectors", argv[i]));
  BS_CHECK(bs_nccl_plan_device(o->backend, &o->device));
  BS_CHECK(check_procs(o));
  BS_CHECK(check_schedule(o));
  BS_CHECK(check_outputs(o));
  campaign_jobs(o);
out:
  return st;
}

bs_status bs_opts_parse_run(int argc, char **argv, bs_opts_run *o) {
  parsing p = {.cmd = "run", .o = o};
  defaults(&p);
  return parse(&p, argc, argv);
}

bs_status bs_opts_parse_mutants(int argc, char **argv, bs_opts_mutants *o) {
  parsing p = {.cmd = "mutants", .o = &o->run, .mutants = o};
  defaults(&p);
  o->targeted = false;
  return parse(&p, argc, argv);
}

bs_status bs_opts_parse_sweep(int argc, char **argv, bs_opts_sweep *o) {
  parsing p = {.cmd = "sweep", .o = &o->run, .sweep = o};
  memset(o, 0, sizeof *o);
  defaults(&p);
  o->rank = o->cycle = -1;
  return parse(&p, argc, argv);
}

bs_status bs_opts_parse_fuzz(int argc, char **argv, bs_opts_fuzz *o) {
  parsing p = {.cmd = "fuzz", .o = &o->run, .fuzz = o};
  memset(o, 0, sizeof *o);
  defaults(&p);
  o->max_ranks = 4;
  o->shrink_max = 120;
  return parse(&p, argc, argv);
}
