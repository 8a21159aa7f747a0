#include "bs_opts.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bs_file.h"
#include "bs_mutant.h"
#include "driver/bs_driver.h"
#include "model/bs_config.h"
#include "model/bs_model.h"
#include "run/bs_footprint.h"
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
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
};

/* Digits only, no sign, no space, no leading zero: what strtol would
 * take besides ("+4", " 4", "010" read as octal) is a usage error. */
static bool plain_decimal(const char *s) {
  if (!isdigit((unsigned char)s[0]) || (s[0] == '0' && s[1]))
    return false;
  for (const char *p = s; *p; p++)
    if (!isdigit((unsigned char)*p))
      return false;
  return true;
}

bs_status bs_opts_long(const char *opt, const char *s, long lo, long hi,
                       long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!plain_decimal(s) || *end || errno || v < lo || v > hi)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "%s: '%s' is not an integer in "
                       "[%ld, %ld]",
                       opt, s, lo, hi);
  *out = v;
  return BS_OK;
}

static bs_status parse_int(const char *opt, const char *s, long lo, long hi,
                           int *out) {
  long v = 0;
  bs_status st = bs_opts_long(opt, s, lo, hi, &v);
  *out = st == BS_OK ? (int)v : *out;
  return st;
}

static bs_status parse_positive(const char *opt, const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (!*s || *end || errno || !isfinite(v) || v <= 0)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "%s: '%s' is not a positive number", opt, s);
  *out = v;
  return BS_OK;
}

/* Decimal, or hex after 0x; never octal, a sign or a space. */
static bs_status parse_seed(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  bool digits = hex ? isxdigit((unsigned char)s[2]) : plain_decimal(s);
  unsigned long long v = strtoull(hex ? s + 2 : s, &end, hex ? 16 : 10);
  if (!digits || *end || errno)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "--seed: '%s' is not an unsigned 64-bit integer "
                       "(decimal without a leading zero, or 0x hex)",
                       s);
  *out = v;
  return BS_OK;
}

/* A report path must be writable before anything runs: an existing file,
 * or a new one in an existing folder ("-" is stdout). */
static bs_status check_writable(const char *opt, const char *path) {
  bs_status st = BS_OK;
  struct stat sb;
  char dir[1024];
  if (!*path)
    USAGE("%s: an empty file name", opt);
  if (strcmp(path, "-") == 0)
    return BS_OK;
  if (stat(path, &sb) == 0) {
    if (!S_ISREG(sb.st_mode) || access(path, W_OK) != 0)
      USAGE("%s: cannot write %s (%s)", opt, path,
            S_ISREG(sb.st_mode) ? "not writable" : "not a regular file");
    return BS_OK;
  }
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else
    slash[slash == dir] = '\0'; /* "/x" keeps its "/" */
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || access(dir, W_OK) != 0)
    USAGE("%s: cannot write %s: folder %s %s", opt, path, dir,
          stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) ? "does not exist"
                                                      : "is not writable");
out:
  return st;
}

/* "4" or "1,2,4,8". */
static bs_status parse_ranks(const char *s, bs_opts *o) {
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
    BS_CHECK(parse_int("--ranks", t, 1, BS_RANKS_MAX, &o->ranks[o->nranks]));
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

static bs_status add(const char **arr, size_t *n, size_t max, const char *opt,
                     const char *v) {
  if (*n == max)
    return bs_err_fail(BS_ERR_INVALID, NULL, "%s: at most %zu", opt, max);
  arr[(*n)++] = v;
  return BS_OK;
}

/* Re-raises the error of a core check with the option it came from. */
static bs_status prefixed(bs_status st, const char *prefix) {
  if (st == BS_OK)
    return st;
  char msg[sizeof bs_err()->message];
  snprintf(msg, sizeof msg, "%s", bs_err()->message);
  bs_err_clear();
  return bs_err_fail(st == BS_ERR_CONFIG ? BS_ERR_INVALID : st, NULL, "%s: %s",
                     prefix, msg);
}

static bs_status check_set(const char *kv) {
  bs_config cfg;
  char prefix[160];
  bs_config_defaults(&cfg);
  snprintf(prefix, sizeof prefix, "--set %s", kv);
  return prefixed(bs_config_set_kv(&cfg, kv), prefix);
}

static bs_status check_fault(const char *spec) {
  bs_fault_spec f;
  return prefixed(bs_fault_spec_parse(spec, &f), "--fault");
}

static bs_status check_model(const char *model, double scale) {
  bs_model_spec m = {0};
  char prefix[300];
  snprintf(prefix, sizeof prefix, "--model %s", model);
  bs_status st = prefixed(bs_model_load(model, scale, &m), prefix);
  bs_model_free(&m);
  return st;
}

/* Options of one command only: "--point is an option of backstop sweep". */
static bs_status only(const char *cmd, const char *want, const char *opt) {
  if (strcmp(cmd, want) == 0)
    return BS_OK;
  return bs_err_fail(BS_ERR_INVALID, NULL, "%s: an option of backstop %s", opt,
                     want);
}

/* sweep's filters and sample, fuzz's budget. */
static bs_status explore_option(const char *cmd, int c, const char *arg,
                                bs_opts *o) {
  bs_status st = BS_OK;
  long v = 0;
  switch (c) {
  case O_POINT:
    BS_CHECK(only(cmd, "sweep", "--point"));
    if (!bs_fault_spec_name_valid(arg))
      USAGE("--point: unknown fault point '%s' (see backstop faults)", arg);
    return add(o->points, &o->npoints, BS_OPTS_MAX, "--point", arg);
  case O_RANK:
    BS_CHECK(only(cmd, "sweep", "--rank"));
    return parse_int("--rank", arg, 0, BS_RANKS_MAX - 1, &o->sweep_rank);
  case O_CYCLE:
    BS_CHECK(only(cmd, "sweep", "--cycle"));
    return parse_int("--cycle", arg, 0, 100000, &o->sweep_cycle);
  case O_SAMPLE:
    BS_CHECK(only(cmd, "sweep", "--sample"));
    BS_CHECK(bs_opts_long("--sample", arg, 1, LONG_MAX, &v));
    o->sample = (size_t)v;
    return BS_OK;
  case O_RUNS:
    BS_CHECK(only(cmd, "fuzz", "--runs"));
    return bs_opts_long("--runs", arg, 1, LONG_MAX, &o->runs);
  case O_TIME:
    BS_CHECK(only(cmd, "fuzz", "--time-s"));
    return parse_positive("--time-s", arg, &o->time_s);
  case O_MAX_RANKS:
    BS_CHECK(only(cmd, "fuzz", "--max-ranks"));
    return parse_int("--max-ranks", arg, 1, BS_RANKS_MAX, &o->max_ranks);
  case O_SHRINK_MAX:
    BS_CHECK(only(cmd, "fuzz", "--shrink-max"));
    return parse_int("--shrink-max", arg, 1, 100000, &o->shrink_max);
  }
out:
  return st;
}

static bs_status option(const char *cmd, int c, const char *arg, bs_opts *o) {
  bs_status st = BS_OK;
  if (c >= O_POINT && c <= O_SHRINK_MAX)
    return explore_option(cmd, c, arg, o);
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
    return parse_positive("--scale", arg, &o->scale);
  case O_CYCLES:
    return parse_int("--cycles", arg, 0, 100000, &o->cycles);
  case O_SET:
    BS_CHECK(check_set(arg));
    return add(o->sets, &o->nsets, BS_OPTS_MAX, "--set", arg);
  case O_FAULT:
    BS_CHECK(check_fault(arg));
    return add(o->faults, &o->nfaults, BS_FAULT_MAX_SPECS, "--fault", arg);
  case O_MUTANT:
    if (strcmp(cmd, "mutants") == 0)
      USAGE("--mutant is not an option of mutants (it runs every mutant)");
    if (bs_mutant_parse(arg) < 0)
      USAGE("--mutant: unknown mutant '%s' (see backstop help mutants)", arg);
    return add(o->mutants, &o->nmutants, BS_OPTS_MAX, "--mutant", arg);
  case O_SEED:
    return parse_seed(arg, &o->seed);
  case O_TIMEOUT:
    return parse_int("--timeout-ms", arg, 1, INT_MAX, &o->timeout_ms);
  case O_DEADLINE:
    return parse_positive("--deadline-s", arg, &o->deadline_s);
  case 'j':
    return parse_int("-j", arg, 1, 256, &o->jobs);
  case O_JSON:
    o->json = arg;
    return check_writable("--json", arg);
  case O_JUNIT:
    o->junit = arg;
    return check_writable("--junit", arg);
  case O_ARTIFACTS:
    if (!*arg)
      USAGE("--artifacts: an empty folder name");
    o->artifacts = arg;
    return BS_OK;
  case O_RENDEZVOUS:
    if (!*arg)
      USAGE("--rendezvous: an empty folder name");
    o->rendezvous = arg;
    return BS_OK;
  case O_SPAWN:
    o->spawn = true;
    return BS_OK;
  case O_REPEAT:
    return parse_int("--repeat", arg, 1, BS_OPTS_REPEAT_MAX, &o->repeat);
  case O_TARGETED:
    if (strcmp(cmd, "mutants") != 0)
      USAGE("--targeted: an option of backstop mutants");
    o->targeted = true;
    return BS_OK;
  case 'q':
    o->verbosity = -1;
    return BS_OK;
  case 'v':
    o->verbosity = 1;
    return BS_OK;
  }
out:
  return st;
}

static void defaults(const char *cmd, bs_opts *o) {
  memset(o, 0, sizeof *o);
  o->backend = "sim";
  o->scale = 1.0;
  o->cycles = -1;
  o->deadline_s = 60;
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

/* Process-per-rank: which process this is, and the job's folder. */
static bs_status check_procs(bs_opts *o) {
  bs_status st = BS_OK;
  bs_launcher *p = &o->procs;
  p->nprocs = 1;
  if (o->spawn && o->rendezvous)
    USAGE("--spawn and --rendezvous: backstop starts the processes, or a "
          "launcher does, not both");
  if (!o->rendezvous)
    return BS_OK;
  BS_CHECK(prefixed(bs_launcher_from_env(p), "--rendezvous"));
  snprintf(o->rdv, sizeof o->rdv, "%s/%s", o->rendezvous,
           p->job[0] ? p->job : "job");
  /* Without a job id a later job would read this one's files. */
  if (p->nprocs > 1 && !p->job[0])
    USAGE("--rendezvous: %d processes (%s) but no job id: the launcher set "
          "none of PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid, SLURM_JOB_ID, "
          "TORCHELASTIC_RUN_ID; "
          "set BS_JOB_ID to a value unique to this job",
          p->nprocs, p->from);
  BS_CHECK(prefixed(bs_file_mkdir_p(o->rdv), "--rendezvous"));
out:
  return st;
}

bs_status bs_opts_parse(const char *cmd, int argc, char **argv, bs_opts *o) {
  bs_status st = BS_OK;
  defaults(cmd, o);
  optind = 0; /* glibc: a full re-initialisation, so parse can run again */
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":j:qv", longopts, NULL)) != -1) {
    if (c == '?' && optopt)
      USAGE("unknown option '-%c' (see backstop help %s)", optopt, cmd);
    if (c == '?')
      USAGE("unknown option '%s' (see backstop help %s)", argv[optind - 1],
            cmd);
    if (c == ':')
      USAGE("option '%s' needs a value", argv[optind - 1]);
    BS_CHECK(option(cmd, c, optarg, o));
  }
  for (int i = optind; i < argc; i++)
    BS_CHECK(add(o->sel, &o->nsel, BS_OPTS_MAX, "selectors", argv[i]));
  BS_CHECK(bs_nccl_device(o->backend, &o->device));
  if (o->model)
    BS_CHECK(check_model(o->model, o->scale));
  BS_CHECK(check_procs(o));
out:
  return st;
}

bool bs_opts_lead(const bs_opts *o) {
  return o->procs.proc == 0;
}

int bs_opts_jobs(const bs_opts *o) {
  return o->rendezvous ? 1 : o->jobs;
}

/* ---- the plan ---- */

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
  return prefixed(st, prefix);
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
  BS_CHECK(prefixed(bs_model_load(model, o->scale, &m), prefix));
  snprintf(prefix, sizeof prefix, "%s at %d ranks", s->name, ranks);
  BS_CHECK(prefixed(bs_driver_lays_out(&m, ranks, cfg), prefix));
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
      .deadline_s = o->deadline_s,
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
  if (!bs_opts_lead(o))
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

bs_status bs_opts_plan(const bs_opts *o, const char *exe, bs_run_cfg **out,
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
      (*n)++;
    }
  }
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
