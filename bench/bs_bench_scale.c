/* `backstop bench --scale-ranks N[,N...]`: what a large world costs on this
 * machine. At each size, rank-divergence and steady-maincast each run as a
 * `backstop run` of its own (default settings but a deadline of
 * SCALE_DEADLINE_S, so that the figure is the run's time, not the
 * deadline's): its wall time, its peak memory (wait4's, as /usr/bin/time -v
 * reports it: the largest process of the run), its verdict; then the replay
 * figure (bs_bench_replay.h) at the largest size. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_bench.h"
#include "bs_bench_exec.h"
#include "bs_bench_impl.h"
#include "bs_bench_replay.h"
#include "bs_file.h"
#include "bs_json_write.h"

#define SCALE_DEADLINE_S "600"

typedef struct scale_fig {
  const char *scenario;
  int ranks;
  double seconds;
  size_t peak_bytes;
  char verdict[16];
  char detail[300]; /* the failed oracle, when the run did not pass */
} scale_fig;

static const char *const scale_scenarios[] = {"rank-divergence",
                                              "steady-maincast"};
enum { NSCENARIOS = sizeof scale_scenarios / sizeof *scale_scenarios };

/* The verdict in the run's --json report, and why when not a pass. */
static void scale_verdict(const char *path, int rc, scale_fig *f) {
  char *text = NULL;
  size_t len = 0;
  bs_json j = {0};
  snprintf(f->verdict, sizeof f->verdict, "none");
  if (bs_file_read(path, &text, &len) != BS_OK ||
      bs_json_parse(text, len, &j) != BS_OK) {
    snprintf(f->detail, sizeof f->detail, "no report (exit %d): %s", rc,
             bs_err()->message);
    bs_err_clear();
    goto out;
  }
  const bs_json *runs = bs_json_get(&j, "runs");
  const bs_json *run = runs && runs->n ? &runs->items[0] : NULL;
  snprintf(f->verdict, sizeof f->verdict, "%s",
           bs_json_get_str(run, "verdict", "none"));
  if (strcmp(f->verdict, "pass") != 0)
    snprintf(f->detail, sizeof f->detail, "%s",
             bs_bench_exec_failed_oracle(run));
out:
  bs_json_free(&j);
  free(text);
}

static void scale_run(const char *dir, scale_fig *f) {
  char ranks[16], json[1100], art[1100];
  struct rusage ru = {0};
  snprintf(ranks, sizeof ranks, "%d", f->ranks);
  snprintf(json, sizeof json, "%s/run.json", dir);
  snprintf(art, sizeof art, "%s/artifacts", dir);
  char *argv[] = {(char *)bs_bench_exec_self(),
                  "run",
                  (char *)f->scenario,
                  "--ranks",
                  ranks,
                  "--deadline-s",
                  SCALE_DEADLINE_S,
                  "--json",
                  json,
                  "--artifacts",
                  art,
                  "-q",
                  NULL};
  double t0 = bs_bench_measure_now_s();
  int rc = bs_bench_exec(argv, NULL, NULL, &ru);
  f->seconds = bs_bench_measure_now_s() - t0;
  f->peak_bytes = (size_t)ru.ru_maxrss * 1024;
  scale_verdict(json, rc, f);
  unlink(json);
  if (bs_file_remove_tree(art) != BS_OK)
    bs_err_clear(); /* a leftover does not change the figure */
}

static char *scale_table(const scale_fig *f, size_t n,
                         const bs_bench_replay *rp) {
  bs_buf b = {0};
  bs_buf_printf(&b,
                "large worlds (each a `backstop run` of its own, --deadline-s "
                "%s)\n  %-16s %6s %9s %9s  %s\n",
                SCALE_DEADLINE_S, "scenario", "ranks", "seconds", "peak_MiB",
                "verdict");
  for (size_t i = 0; i < n; i++)
    bs_buf_printf(&b, "  %-16s %6d %9.1f %9.0f  %s%s%.200s\n", f[i].scenario,
                  f[i].ranks, f[i].seconds, (double)f[i].peak_bytes / (1 << 20),
                  f[i].verdict, f[i].detail[0] ? ": " : "", f[i].detail);
  if (rp)
    bs_buf_printf(&b, "  %-16s %6d %9.1f %9.0f  culprit %s (%s the world's)\n",
                  "replay", rp->ranks, rp->seconds,
                  (double)rp->peak_bytes / (1 << 20), rp->replay_culprit,
                  rp->agrees ? "as" : "NOT as");
  return bs_buf_take(&b);
}

static char *scale_json(const scale_fig *f, size_t n,
                        const bs_bench_replay *rp) {
  bs_buf b = {0};
  char *replay = rp ? bs_bench_replay_text(rp, true) : NULL;
  bs_buf_printf(&b, "{\"scale\": {\"deadline_s\": %s, \"figures\": [",
                SCALE_DEADLINE_S);
  for (size_t i = 0; i < n; i++) {
    bs_buf_printf(
        &b,
        "%s\n  {\"scenario\": \"%s\", \"ranks\": %d, \"seconds\": "
        "%.3f, \"peak_bytes\": %zu, \"verdict\": \"%s\", \"detail\": ",
        i ? "," : "", f[i].scenario, f[i].ranks, f[i].seconds, f[i].peak_bytes,
        f[i].verdict);
    bs_json_write_str(&b, f[i].detail);
    bs_buf_printf(&b, "}");
  }
  /* bs_bench_replay_text's object is {"replay": {...}}\n: its member. */
  if (replay && strlen(replay) > 3)
    bs_buf_printf(&b, "],\n %.*s}}\n", (int)(strlen(replay) - 3), replay + 1);
  else
    bs_buf_printf(&b, "]}}\n");
  free(replay);
  return bs_buf_take(&b);
}

bs_status bs_bench_scale(const bs_bench_opts *o, char **text, char **js,
                         bool *passed) {
  bs_status st = BS_OK;
  char dir[64] = "";
  size_t n = (size_t)o->nscale * NSCENARIOS;
  scale_fig *f = calloc(n ? n : 1, sizeof *f);
  bs_bench_replay rp;
  int largest = 0;
  *text = *js = NULL;
  *passed = false;
  if (!f)
    BS_FAIL(BS_ERR_NOMEM, NULL, "bench --scale-ranks: figures");
  BS_CHECK(bs_file_scratch("backstop-scale", dir, sizeof dir));
  for (int i = 0; i < o->nscale; i++) {
    largest = o->scale_ranks[i] > largest ? o->scale_ranks[i] : largest;
    for (int s = 0; s < NSCENARIOS; s++) {
      scale_fig *g = &f[(size_t)i * NSCENARIOS + (size_t)s];
      *g = (scale_fig){.scenario = scale_scenarios[s],
                       .ranks = o->scale_ranks[i]};
      scale_run(dir, g);
      fprintf(stderr, "backstop bench: %s at %d ranks: %.1f s, %s\n",
              g->scenario, g->ranks, g->seconds, g->verdict);
    }
  }
  /* The replay is one figure more: its failure leaves the others. */
  const bs_bench_replay *with = &rp;
  if (bs_bench_replay_run(largest, &rp) != BS_OK) {
    fprintf(stderr, "backstop bench: replay at %d ranks: %s\n", largest,
            bs_err()->message);
    bs_err_clear();
    with = NULL;
  }
  *passed = with && rp.agrees;
  for (size_t i = 0; i < n; i++)
    *passed = *passed && strcmp(f[i].verdict, "pass") == 0;
  *text = scale_table(f, n, with);
  *js = scale_json(f, n, with);
  if (!*text || !*js)
    BS_FAIL(BS_ERR_NOMEM, NULL, "bench --scale-ranks: report");
out:
  if (dir[0] && bs_file_remove_tree(dir) != BS_OK)
    bs_err_clear();
  free(f);
  return st;
}
