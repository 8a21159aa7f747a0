#include "bs_opts.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bs_file.h"
#include "bs_mutant.h"
#include "bs_near.h"
#include "bs_num.h"
#include "model/bs_config.h"
#include "model/bs_model.h"
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
static bs_status parse_seed(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  bool digits = hex ? isxdigit((unsigned char)s[2]) : bs_num_plain(s);
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

static bs_status add(const char **arr, size_t *n, size_t max, const char *opt,
                     const char *v) {
  if (*n == max)
    return bs_err_fail(BS_ERR_INVALID, NULL, "%s: at most %zu", opt, max);
  arr[(*n)++] = v;
  return BS_OK;
}

static bs_status check_set(const char *kv) {
  bs_config cfg;
  char prefix[160];
  bs_config_defaults(&cfg);
  snprintf(prefix, sizeof prefix, "--set %s", kv);
  return bs_plan_prefixed(bs_config_set_kv(&cfg, kv), prefix);
}

static bs_status check_fault(const char *spec) {
  bs_fault_spec f;
  return bs_plan_prefixed(bs_fault_spec_parse(spec, &f), "--fault");
}

static bs_status check_model(const char *model, double scale) {
  bs_model_spec m = {0};
  char prefix[300];
  snprintf(prefix, sizeof prefix, "--model %s", model);
  bs_status st = bs_plan_prefixed(bs_model_load(model, scale, &m), prefix);
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

/* --sample N (reaches per scenario) or P% (of each scenario's reaches, in
 * (0, 100]). */
static bs_status parse_sample(const char *arg, bs_opts *o) {
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

/* sweep's filters and sample, fuzz's budget. */
static bs_status explore_option(const char *cmd, int c, const char *arg,
                                bs_opts *o) {
  bs_status st = BS_OK;
  switch (c) {
  case O_POINT:
    BS_CHECK(only(cmd, "sweep", "--point"));
    if (!bs_fault_spec_name_valid(arg))
      USAGE("--point: unknown fault point '%s'%s (see backstop faults)", arg,
            bs_fault_spec_near(arg));
    return add(o->points, &o->npoints, BS_OPTS_MAX, "--point", arg);
  case O_RANK:
    BS_CHECK(only(cmd, "sweep", "--rank"));
    return opt_int("--rank", arg, 0, BS_RANKS_MAX - 1, &o->sweep_rank);
  case O_CYCLE:
    BS_CHECK(only(cmd, "sweep", "--cycle"));
    return opt_int("--cycle", arg, 0, 100000, &o->sweep_cycle);
  case O_SAMPLE:
    BS_CHECK(only(cmd, "sweep", "--sample"));
    return parse_sample(arg, o);
  case O_RUNS:
    BS_CHECK(only(cmd, "fuzz", "--runs"));
    return bs_opts_long("--runs", arg, 1, BS_OPTS_COUNT_MAX, &o->runs);
  case O_TIME:
    BS_CHECK(only(cmd, "fuzz", "--time-s"));
    return parse_positive("--time-s", arg, BS_OPTS_SECONDS_MAX, &o->time_s);
  case O_MAX_RANKS:
    BS_CHECK(only(cmd, "fuzz", "--max-ranks"));
    return opt_int("--max-ranks", arg, 1, BS_RANKS_MAX, &o->max_ranks);
  case O_SHRINK_MAX:
    BS_CHECK(only(cmd, "fuzz", "--shrink-max"));
    return opt_int("--shrink-max", arg, 1, 100000, &o->shrink_max);
  case O_STRICT:
    if (strcmp(cmd, "sweep") != 0)
      BS_CHECK(only(cmd, "fuzz", "--strict"));
    o->strict = true;
    return BS_OK;
  }
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

static bs_status option(const char *cmd, int c, const char *arg, bs_opts *o) {
  bs_status st = BS_OK;
  if (c >= O_POINT && c <= O_STRICT)
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
    return parse_positive("--scale", arg, BS_OPTS_SCALE_MAX, &o->scale);
  case O_CYCLES:
    return opt_int("--cycles", arg, 0, 100000, &o->cycles);
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
      USAGE("--mutant: unknown mutant '%s'%s (see backstop help mutants)", arg,
            near_mutant(arg));
    return add(o->mutants, &o->nmutants, BS_OPTS_MAX, "--mutant", arg);
  case O_SEED:
    return parse_seed(arg, &o->seed);
  case O_TIMEOUT:
    return opt_int("--timeout-ms", arg, 1, INT_MAX, &o->timeout_ms);
  case O_DEADLINE:
    o->deadline_given = true;
    return parse_positive("--deadline-s", arg, BS_OPTS_SECONDS_MAX,
                          &o->deadline_s);
  case 'j':
    return opt_int("-j", arg, 1, 256, &o->jobs);
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
    return opt_int("--repeat", arg, 1, BS_OPTS_REPEAT_MAX, &o->repeat);
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
  BS_CHECK(bs_plan_prefixed(bs_launcher_from_env(p), "--rendezvous"));
  snprintf(o->rdv, sizeof o->rdv, "%s/%s", o->rendezvous,
           p->job[0] ? p->job : "job");
  /* Without a job id a later job would read this one's files. */
  if (p->nprocs > 1 && !p->job[0])
    USAGE("--rendezvous: %d processes (%s) but no job id: the launcher set "
          "none of PMIX_NAMESPACE, OMPI_MCA_ess_base_jobid, SLURM_JOB_ID, "
          "TORCHELASTIC_RUN_ID; "
          "set BS_JOB_ID to a value unique to this job",
          p->nprocs, p->from);
  BS_CHECK(bs_plan_prefixed(bs_file_mkdir_p(o->rdv), "--rendezvous"));
out:
  return st;
}

bs_status bs_opts_parse(const char *cmd, int argc, char **argv, bs_opts *o) {
  bs_status st = BS_OK;
  bs_plan_defaults(cmd, o);
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
  BS_CHECK(bs_nccl_plan_device(o->backend, &o->device));
  if (o->model)
    BS_CHECK(check_model(o->model, o->scale));
  BS_CHECK(check_procs(o));
out:
  return st;
}
