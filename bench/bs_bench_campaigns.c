/* `backstop bench --campaigns`: what the framework's own runs cost on this
 * machine, each a `backstop` command of its own (as a user runs it): the
 * default suite (its wall time, the best of --repeat), fuzz of seed 1 for
 * --fuzz-s seconds (the runs it judged a minute: the JSON's fuzz.runs,
 * its counting runs apart) and the sweep of every reach of every scenario
 * at 4 ranks (--sweep-sample P%: a share of each scenario's reaches; its
 * wall time, runs and vacuous reaches). Each passes when its command
 * exits 0 (the sweep: no failing and no vacuous reach). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_bench.h"
#include "bs_bench_exec.h"
#include "bs_bench_impl.h"
#include "bs_file.h"
#include "bs_json_write.h"

typedef struct camp_fig {
  const char *name;
  double seconds; /* wall time of the command (the suite: the best) */
  double runs;    /* judged runs (fuzz: within its budget) */
  double rate;    /* fuzz: runs a minute; else runs a second */
  int rc;         /* the command's exit status */
  char detail[300];
} camp_fig;

/* The report the command wrote, parsed into *j (false: none). */
static bool read_report(const char *path, bs_json *j) {
  char *text = NULL;
  size_t len = 0;
  bool ok = bs_file_read(path, &text, &len) == BS_OK &&
            bs_json_parse(text, len, j) == BS_OK;
  bs_err_clear();
  free(text);
  return ok;
}

/* Runs `backstop ARGS... --json path -q`; its wall time and exit status. */
static double camp_timed(const char *const *args, const char *path, int *rc) {
  char *argv[24];
  size_t n = 0;
  argv[n++] = (char *)bs_bench_exec_self();
  for (; *args && n < 20; args++)
    argv[n++] = (char *)*args;
  argv[n++] = "--json";
  argv[n++] = (char *)path;
  argv[n++] = "-q";
  argv[n] = NULL;
  double t0 = bs_bench_measure_now_s();
  *rc = bs_bench_exec(argv, NULL, NULL, NULL);
  return bs_bench_measure_now_s() - t0;
}

static void suite_fig(const bs_bench_opts *o, const char *path, camp_fig *f) {
  static const char *const args[] = {"run", NULL};
  bs_json j = {0};
  *f = (camp_fig){.name = "default suite", .seconds = -1};
  for (int i = 0; i < o->repeat; i++) {
    int rc;
    double s = camp_timed(args, path, &rc);
    f->seconds = f->seconds < 0 || s < f->seconds ? s : f->seconds;
    f->rc |= rc;
  }
  if (read_report(path, &j))
    f->runs = bs_json_get_num(bs_json_get(&j, "summary"), "runs", 0);
  f->rate = f->seconds > 0 ? f->runs / f->seconds : 0;
  snprintf(f->detail, sizeof f->detail, "best of %d", o->repeat);
  bs_json_free(&j);
}

static void fuzz_fig(const bs_bench_opts *o, const char *path, camp_fig *f) {
  char budget[32];
  snprintf(budget, sizeof budget, "%g", o->fuzz_s);
  const char *const args[] = {"fuzz", "--seed", "1", "--time-s", budget, NULL};
  bs_json j = {0};
  *f = (camp_fig){.name = "fuzz seed 1"};
  f->seconds = camp_timed(args, path, &f->rc);
  if (read_report(path, &j)) {
    const bs_json *z = bs_json_get(&j, "fuzz");
    f->runs = bs_json_get_num(z, "runs", 0);
    snprintf(f->detail, sizeof f->detail,
             "%.0f runs in %g s, %.0f counting runs apart", f->runs, o->fuzz_s,
             bs_json_get_num(z, "counting_runs", 0));
  }
  f->rate = f->runs / o->fuzz_s * 60;
  bs_json_free(&j);
}

static void sweep_fig(const bs_bench_opts *o, const char *path, camp_fig *f) {
  const char *const full[] = {"sweep", "*", "--ranks", "4", NULL};
  const char *const part[] = {"sweep",         "*", "--ranks", "4", "--sample",
                              o->sweep_sample, NULL};
  bs_json j = {0};
  *f = (camp_fig){.name = o->sweep_sample ? "sweep sample" : "full sweep"};
  f->seconds = camp_timed(o->sweep_sample ? part : full, path, &f->rc);
  if (read_report(path, &j)) {
    const bs_json *s = bs_json_get(&j, "summary");
    f->runs = bs_json_get_num(s, "runs", 0);
    snprintf(f->detail, sizeof f->detail,
             "every scenario at 4 ranks%s%s: %.0f vacuous, %.0f fail",
             o->sweep_sample ? ", --sample " : "",
             o->sweep_sample ? o->sweep_sample : "",
             bs_json_get_num(s, "vacuous", 0), bs_json_get_num(s, "fail", 0));
  }
  f->rate = f->seconds > 0 ? f->runs / f->seconds : 0;
  bs_json_free(&j);
}

static char *camp_table(const camp_fig *f, size_t n) {
  bs_buf b = {0};
  bs_buf_printf(&b,
                "campaigns (each a backstop command of its own)\n"
                "  %-14s %9s %8s %12s  %s\n",
                "figure", "seconds", "runs", "rate", "exit, what");
  for (size_t i = 0; i < n; i++)
    bs_buf_printf(&b, "  %-14s %9.2f %8.0f %8.0f/%s  %d, %s\n", f[i].name,
                  f[i].seconds, f[i].runs, f[i].rate, i == 1 ? "min" : "s  ",
                  f[i].rc, f[i].detail);
  return bs_buf_take(&b);
}

static char *camp_json(const camp_fig *f, size_t n) {
  bs_buf b = {0};
  bs_buf_printf(&b, "{\"campaigns\": [");
  for (size_t i = 0; i < n; i++) {
    bs_json_write_field_str(&b, i ? ",\n  {" : "\n  {", "figure", f[i].name);
    bs_buf_printf(&b,
                  ", \"seconds\": %.3f, \"runs\": %.0f, \"%s\": %.1f, "
                  "\"exit\": %d",
                  f[i].seconds, f[i].runs,
                  i == 1 ? "runs_a_minute" : "runs_a_second", f[i].rate,
                  f[i].rc);
    bs_json_write_field_str(&b, ", ", "detail", f[i].detail);
    bs_buf_printf(&b, "}");
  }
  bs_buf_printf(&b, "]}\n");
  return bs_buf_take(&b);
}

bs_status bs_bench_campaigns(const bs_bench_opts *o, char **text, char **js,
                             bool *passed) {
  bs_status st = BS_OK;
  char dir[64] = "", path[128];
  camp_fig f[3];
  *text = *js = NULL;
  BS_CHECK(bs_file_scratch("backstop-campaigns", dir, sizeof dir));
  snprintf(path, sizeof path, "%s/report.json", dir);
  suite_fig(o, path, &f[0]);
  fprintf(stderr, "backstop bench: default suite: %.2f s\n", f[0].seconds);
  fuzz_fig(o, path, &f[1]);
  fprintf(stderr, "backstop bench: fuzz: %.0f runs a minute\n", f[1].rate);
  sweep_fig(o, path, &f[2]);
  fprintf(stderr, "backstop bench: %s: %.1f s\n", f[2].name, f[2].seconds);
  *passed = !f[0].rc && !f[1].rc && !f[2].rc;
  *text = camp_table(f, 3);
  *js = camp_json(f, 3);
  if (!*text || !*js)
    BS_FAIL(BS_ERR_NOMEM, NULL, "bench --campaigns: report");
out:
  if (dir[0] && bs_file_remove_tree(dir) != BS_OK)
    bs_err_clear();
  return st;
}
