/* `backstop bench [options]`: option parsing and the command itself.
 * Usage errors exit 2 with one line naming the option (docs/cli.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_bench.h"
#include "bs_bench_hangs.h"
#include "bs_bench_replay.h"
#include "bs_num.h"
#include "comm/bs_comm.h"
#include "run/bs_nccl_plan.h"

#define MAX_GB 4096.0
#define MAX_SCALE 1e9
#define MAX_THREADS 4096
#define MAX_REPEAT 1000

static const char usage[] =
    "usage: backstop bench [--device host|cuda] [--backend sim|nccl]\n"
    "                      [--model PRESET|FILE] [--scale F | --gb G]\n"
    "                      [--ranks N] [--threads T] [--repeat R]\n"
    "                      [--json FILE] [--detect R [--peer SCRIPT]]\n"
    "                      | --replay N | --scale-ranks N[,N...]\n"
    "                      | --hangs N (backstop bench --hangs 1 --help)\n"
    "                      | --campaigns [--fuzz-s T] [--sweep-sample P%]\n"
    "  --device  device memory (default host; cuda with --backend nccl)\n"
    "  --backend communicator of the MainCast all-gather (default nccl on\n"
    "            cuda, sim on host)\n"
    "  --model   model spec (default: a synthetic 32-layer GPT, 'bench')\n"
    "  --scale   multiply every tensor size by F\n"
    "  --gb      size the model to G GB of weights (default 4 on cuda, 0.25 "
    "on host)\n"
    "  --ranks   MainCast world size, 1..64 (default 1); above 1 adds the\n"
    "            all-gather bus bandwidth figures (nccl: one GPU per rank)\n"
    "  --threads hashing threads (default: one per online CPU)\n"
    "  --repeat  timed runs per figure after one warm-up (default 3)\n"
    "  --json    also write the report as JSON to FILE\n"
    "  --detect  instead: how fast a desync and a rank death are contained\n"
    "            (rank-divergence, rank-death: R runs each, median and max\n"
    "            detect_ms) on --backend at --ranks\n"
    "  --peer    with --detect: the same failures in PyTorch's\n"
    "            ProcessGroupNCCL (torch_nccl_peer.py, run by torchrun)\n"
    "  --replay  instead: replay an N-rank world's dumps (2..16384 ranks):\n"
    "            wall time, peak memory, and whether it names the culprit\n"
    "  --scale-ranks instead: rank-divergence and steady-maincast at each\n"
    "            size (2..16384, e.g. 1024,4096,16384), each a run of its "
    "own:\n"
    "            wall time, peak memory, verdict; then the replay at the\n"
    "            largest\n"
    "  --campaigns instead: the default suite's wall time (best of\n"
    "            --repeat), fuzz seed 1's runs judged a minute over --fuzz-s\n"
    "            (default 60) seconds, the sweep of every reach of every\n"
    "            scenario at 4 ranks (--sweep-sample P%: a share): its wall\n"
    "            time; each a backstop command; exit 1 when one fails\n";

static bs_status bad(const char *opt, const char *want, const char *v) {
  return bs_err_fail(BS_ERR_INVALID, NULL, "%s: expected %s, got '%s'", opt,
                     want, v);
}

static bs_status option_real(const char *opt, const char *v, double max,
                             double *out) {
  char want[64];
  if (bs_num_positive(v, max, out))
    return BS_OK;
  snprintf(want, sizeof want, "a number in (0, %g]", max);
  return bad(opt, want, v);
}

static bs_status option_int(const char *opt, const char *v, int min, int max,
                            int *out) {
  char want[64];
  if (bs_num_int(v, min, max, out))
    return BS_OK;
  snprintf(want, sizeof want, "an integer in [%d, %d]", min, max);
  return bad(opt, want, v);
}

static bs_status set_device(bs_bench_opts *o, const char *opt, const char *v) {
  if (strcmp(v, "host") != 0 && strcmp(v, "cuda") != 0)
    return bad(opt, "host or cuda", v);
  o->device = v;
  return BS_OK;
}

static bs_status set_backend(bs_bench_opts *o, const char *opt, const char *v) {
  if (strcmp(v, "sim") != 0 && strcmp(v, "nccl") != 0)
    return bad(opt, "sim or nccl", v);
  o->backend = v;
  return BS_OK;
}

static bs_status set_model(bs_bench_opts *o, const char *opt, const char *v) {
  if (!v[0])
    return bad(opt, "a preset name or a file", v);
  o->model = v;
  return BS_OK;
}

static bs_status set_scale(bs_bench_opts *o, const char *opt, const char *v) {
  return option_real(opt, v, MAX_SCALE, &o->scale);
}

static bs_status set_gb(bs_bench_opts *o, const char *opt, const char *v) {
  return option_real(opt, v, MAX_GB, &o->gb);
}

static bs_status set_threads(bs_bench_opts *o, const char *opt, const char *v) {
  return option_int(opt, v, 1, MAX_THREADS, &o->threads);
}

static bs_status set_ranks(bs_bench_opts *o, const char *opt, const char *v) {
  return option_int(opt, v, 1, BS_BENCH_MAX_RANKS, &o->ranks);
}

static bs_status set_repeat(bs_bench_opts *o, const char *opt, const char *v) {
  return option_int(opt, v, 1, MAX_REPEAT, &o->repeat);
}

static bs_status set_detect(bs_bench_opts *o, const char *opt, const char *v) {
  return option_int(opt, v, 1, MAX_REPEAT, &o->detect);
}

static bs_status set_peer(bs_bench_opts *o, const char *opt, const char *v) {
  if (access(v, R_OK) != 0)
    return bad(opt, "a readable torch_nccl_peer.py", v);
  o->peer = v;
  return BS_OK;
}

static bs_status set_replay(bs_bench_opts *o, const char *opt, const char *v) {
  return option_int(opt, v, 2, BS_WORLD_MAX_RANKS, &o->replay);
}

/* "1024,4096,16384": each a world size of `backstop run`. */
static bs_status set_scale_ranks(bs_bench_opts *o, const char *opt,
                                 const char *v) {
  char item[16];
  o->nscale = 0;
  for (const char *p = v;; p++) {
    size_t len = strcspn(p, ",");
    if (o->nscale == BS_BENCH_MAX_SCALES || len == 0 || len >= sizeof item)
      return bad(opt, "up to 8 world sizes, comma-separated", v);
    snprintf(item, sizeof item, "%.*s", (int)len, p);
    bs_status st = option_int(opt, item, 2, BS_WORLD_MAX_RANKS,
                              &o->scale_ranks[o->nscale++]);
    if (st != BS_OK)
      return st;
    p += len;
    if (!*p)
      return BS_OK;
  }
}

static bs_status set_fuzz_s(bs_bench_opts *o, const char *opt, const char *v) {
  return option_real(opt, v, 86400, &o->fuzz_s);
}

/* "P%", P in 1..100. */
static bs_status set_sweep_sample(bs_bench_opts *o, const char *opt,
                                  const char *v) {
  int pct = 0;
  size_t len = strlen(v);
  char num[16];
  snprintf(num, sizeof num, "%.*s", len ? (int)len - 1 : 0, v);
  if (len < 2 || v[len - 1] != '%' || !bs_num_int(num, 1, 100, &pct))
    return bad(opt, "a share P% of each scenario's reaches, P in 1..100", v);
  o->sweep_sample = v;
  return BS_OK;
}

static bs_status set_json(bs_bench_opts *o, const char *opt, const char *v) {
  if (!v[0])
    return bad(opt, "a file name", v);
  o->json = v;
  return BS_OK;
}

typedef bs_status (*opt_setter)(bs_bench_opts *o, const char *opt,
                                const char *v);

static const struct {
  const char *name;
  opt_setter set;
} options[] = {
    {"--device", set_device},
    {"--backend", set_backend},
    {"--model", set_model},
    {"--scale", set_scale},
    {"--gb", set_gb},
    {"--threads", set_threads},
    {"--repeat", set_repeat},
    {"--json", set_json},
    {"--ranks", set_ranks},
    {"--detect", set_detect},
    {"--peer", set_peer},
    {"--replay", set_replay},
    {"--scale-ranks", set_scale_ranks},
    {"--fuzz-s", set_fuzz_s},
    {"--sweep-sample", set_sweep_sample},
};

/* "--name value" or "--name=value"; *used: how many argv slots it took. */
static bs_status parse_one(bs_bench_opts *o, int argc, char **argv, int i,
                           int *used) {
  const char *arg = argv[i];
  const char *eq = strchr(arg, '=');
  size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
  for (size_t k = 0; k < sizeof options / sizeof options[0]; k++) {
    if (strlen(options[k].name) != len || strncmp(arg, options[k].name, len))
      continue;
    if (!eq && i + 1 >= argc)
      return bs_err_fail(BS_ERR_INVALID, NULL, "%s: expected a value",
                         options[k].name);
    *used = eq ? 1 : 2;
    return options[k].set(o, options[k].name, eq ? eq + 1 : argv[i + 1]);
  }
  if (arg[0] == '-')
    return bs_err_fail(BS_ERR_INVALID, NULL, "unknown option '%s'", arg);
  return bs_err_fail(BS_ERR_INVALID, NULL, "unexpected argument '%s'", arg);
}

bs_status bs_bench_cli_parse(int argc, char **argv, bs_bench_opts *o,
                             bool *help) {
  bs_status st = BS_OK;
  if (!o || !help || argc < 0 || (argc > 0 && !argv))
    BS_FAIL(BS_ERR_INVALID, NULL, "bench: NULL argument");
  *o = (bs_bench_opts){.repeat = 3, .ranks = 1, .fuzz_s = 60};
  *help = false;
  for (int i = 1, used = 1; i < argc; i += used) {
    bool flag = !strcmp(argv[i], "--campaigns");
    if (flag || !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      o->campaigns |= flag;
      *help |= !flag;
      used = 1;
      continue;
    }
    BS_CHECK(parse_one(o, argc, argv, i, &used));
  }
  BS_CHECK(bs_nccl_plan_device(o->backend, &o->device));
  if (o->peer && !o->detect)
    BS_FAIL(BS_ERR_INVALID, NULL, "--peer: only with --detect");
  if (o->scale > 0 && o->gb > 0)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "--scale and --gb: give one (both size the model)");
  /* --detect runs through `backstop run`, which places the ranks. */
  if (!o->detect)
    BS_CHECK(bs_bench_check_ranks(o));
out:
  return st;
}

/* opt: prefixed when the message does not name the option itself. */
static int usage_error(const char *opt) {
  fprintf(stderr, "backstop bench: %s%s%s\n", opt ? opt : "", opt ? ": " : "",
          bs_err()->message);
  return 2;
}

static int failure(void) {
  const bs_error *e = bs_err();
  fprintf(stderr, "backstop bench: %s: %s\n", bs_status_name(e->code),
          e->message);
  return 1;
}

static bs_status write_file(const char *path, const char *text) {
  bs_status st = BS_OK;
  FILE *f = fopen(path, "w");
  if (!f)
    BS_FAIL(BS_ERR_INVALID, NULL, "--json %s: %s", path, strerror(errno));
  bool ok = fputs(text, f) >= 0;
  ok = fclose(f) == 0 && ok;
  if (!ok)
    BS_FAIL(BS_ERR_INVALID, NULL, "--json %s: write failed: %s", path,
            strerror(errno));
out:
  return st;
}

/* The table on stdout; the JSON file when asked for. */
static bs_status emit(const bs_bench_opts *o, const bs_bench_report *r) {
  bs_status st = BS_OK;
  char *table = bs_bench_report_table(r), *json = NULL;
  if (!table)
    BS_FAIL(BS_ERR_NOMEM, NULL, "bench: report table: out of memory");
  fputs(table, stdout);
  fflush(stdout);
  if (!o->json)
    goto out;
  if (!(json = bs_bench_report_json(r)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "bench: JSON report: out of memory");
  BS_CHECK(write_file(o->json, json));
out:
  free(table);
  free(json);
  return st;
}

static int detect(const bs_bench_opts *o) {
  char *table = NULL, *json = NULL;
  int rc = 0;
  if (bs_bench_detect(o, &table, &json) != BS_OK)
    rc = failure();
  else if (fputs(table, stdout), o->json && write_file(o->json, json) != BS_OK)
    rc = usage_error(NULL);
  free(table);
  free(json);
  return rc;
}

/* --scale-ranks, --campaigns (fn): the table on stdout, the JSON file; 1
 * when a run did not pass (the figures are all there still). */
static int commands(const bs_bench_opts *o,
                    bs_status (*fn)(const bs_bench_opts *, char **, char **,
                                    bool *)) {
  char *table = NULL, *json = NULL;
  int rc = 0;
  bool passed = false;
  if (fn(o, &table, &json, &passed) != BS_OK)
    rc = failure();
  else if (fputs(table, stdout), o->json && write_file(o->json, json) != BS_OK)
    rc = usage_error(NULL);
  else if (!passed)
    rc = 1;
  free(table);
  free(json);
  return rc;
}

/* --replay: the one figure, on stdout and in the JSON file. */
static int replay_main(const bs_bench_opts *o) {
  bs_bench_replay r;
  char *line = NULL, *json = NULL;
  int rc = 0;
  if (bs_bench_replay_run(o->replay, &r) != BS_OK)
    return failure();
  if (!(line = bs_bench_replay_text(&r, false)) ||
      !(json = bs_bench_replay_text(&r, true))) {
    rc = failure();
    goto out;
  }
  fputs(line, stdout);
  if (o->json && write_file(o->json, json) != BS_OK)
    rc = failure();
  rc = rc ? rc : r.agrees ? 0 : 1;
out:
  free(line);
  free(json);
  return rc;
}

int bs_bench_cli_main(int argc, char **argv) {
  bs_bench_opts o;
  bs_bench_report r;
  bs_model_spec m = {0};
  bool help = false;
  int rc = 0;
  bs_err_clear();
  for (int i = 1; i < argc; i++) /* the corpus: options of its own */
    if (!strcmp(argv[i], "--hangs") || !strncmp(argv[i], "--hangs=", 8))
      return bs_bench_hangs_main(argc, argv);
  if (bs_bench_cli_parse(argc, argv, &o, &help) != BS_OK)
    return usage_error(NULL);
  if (help) {
    fputs(usage, stdout);
    return 0;
  }
  if (o.detect)
    return detect(&o);
  if (o.nscale)
    return commands(&o, bs_bench_scale);
  if (o.campaigns)
    return commands(&o, bs_bench_campaigns);
  if (o.replay)
    return replay_main(&o);
  bs_status st = bs_bench_model(&o, &m);
  if (st != BS_OK) {
    rc = st == BS_ERR_INVALID ? usage_error("--model") : failure();
    goto out;
  }
  if (bs_bench_run(&o, &m, &r) != BS_OK || emit(&o, &r) != BS_OK)
    rc = failure();
out:
  bs_model_free(&m);
  return rc;
}
