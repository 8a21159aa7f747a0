/* `backstop bench --detect R`: how fast a desync and a rank death are
 * contained (detect_ms: the stall to every rank returned with the error),
 * R runs each of rank-divergence and rank-death through `backstop run`
 * itself, beside the same failures in PyTorch's ProcessGroupNCCL when
 * --peer gives ../shared/peers/torch_nccl_peer.py (run by torchrun in the
 * same bench run): a size-mismatched all-gather under
 * TORCH_DISTRIBUTED_DEBUG=DETAIL (the slowest rank's time to raise) and a
 * rank that exits (the stall to torchrun's end of the job). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bs_bench.h"
#include "bs_bench_exec.h"
#include "bs_buf.h"
#include "bs_file.h"
#include "bs_json.h"
#include "bs_json_write.h"

#define MAX_RUNS 1000
#define PEER_TIMEOUT_S "10"

typedef struct detect_fig {
  const char *failure, *scenario, *peer_mode, *peer_what;
  double median_ms, max_ms, peer_ms; /* NAN when not measured */
} detect_fig;

static double wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* detect_ms of one passing run of the scenario. */
static bs_status one_run(const bs_bench_opts *o, const char *scn, int seed,
                         const char *dir, double *ms) {
  bs_status st = BS_OK;
  char ranks[16], seedv[16], json[4200], *text = NULL;
  size_t len = 0;
  bs_json j = {0};
  snprintf(ranks, sizeof ranks, "%d", o->ranks);
  snprintf(seedv, sizeof seedv, "%d", seed);
  snprintf(json, sizeof json, "%s/run.json", dir);
  char *argv[] = {(char *)bs_bench_exec_self(),
                  "run",
                  (char *)scn,
                  "--ranks",
                  ranks,
                  "--backend",
                  (char *)bs_bench_backend(o),
                  "--device",
                  (char *)o->device,
                  "--seed",
                  seedv,
                  "--json",
                  json,
                  "--artifacts",
                  (char *)dir,
                  "-q",
                  NULL};
  int rc = bs_bench_exec(argv, NULL, NULL, NULL);
  FILE *f = fopen(json, "r");
  if (f) {
    char buf[65536];
    len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    text = strndup(buf, len);
  }
  if (!text || bs_json_parse(text, len, &j) != BS_OK)
    BS_FAIL(BS_ERR_INTERNAL, NULL,
            "bench --detect: %s left no report (exit %d)", scn, rc);
  const bs_json *runs = bs_json_get(&j, "runs");
  const bs_json *run = runs && runs->n ? &runs->items[0] : NULL;
  const char *verdict = bs_json_get_str(run, "verdict", "none");
  if (strcmp(verdict, "pass") != 0)
    BS_FAIL(BS_ERR_INTERNAL, NULL,
            "bench --detect: %s at %d ranks: %s: %.300s (repro: backstop run "
            "%s --ranks %d --backend %s --seed %d)",
            scn, o->ranks, verdict, bs_bench_exec_failed_oracle(run), scn,
            o->ranks, bs_bench_backend(o), seed);
  *ms = bs_json_get_num(run, "detect_ms", NAN);
out:
  bs_json_free(&j);
  free(text);
  return st;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static bs_status measure(const bs_bench_opts *o, detect_fig *f) {
  bs_status st = BS_OK;
  char dir[] = "/tmp/backstop-detect.XXXXXX";
  double *ms = calloc((size_t)o->detect, sizeof *ms);
  if (!ms || !mkdtemp(dir))
    BS_FAIL(BS_ERR_NOMEM, NULL, "bench --detect: no scratch");
  for (int i = 0; i < o->detect; i++)
    BS_CHECK(one_run(o, f->scenario, i, dir, &ms[i]));
  qsort(ms, (size_t)o->detect, sizeof *ms, cmp_double);
  f->median_ms = ms[o->detect / 2];
  f->max_ms = ms[o->detect - 1];
out:
  if (strcmp(dir + strlen(dir) - 6, "XXXXXX") != 0 &&
      bs_file_remove_tree(dir) != BS_OK && st == BS_OK)
    st = bs_err()->code;
  free(ms);
  return st;
}

/* The peer's figure from the lines its ranks print: the slowest rank's
 * seconds_to_error (desync), or the stall to the job's end (death). */
static double peer_figure(const char *mode, const bs_buf *out, double end) {
  double stall = INFINITY, slowest = NAN;
  const char *p = bs_buf_str(out);
  while (p && *p) {
    size_t n = strcspn(p, "\n");
    bs_json j = {0};
    if (p[0] == '{' && bs_json_parse(p, n, &j) == BS_OK) {
      double s = bs_json_get_num(&j, "stall_at", NAN);
      double e = bs_json_get_num(&j, "seconds_to_error", NAN);
      if (isfinite(s) && s < stall)
        stall = s;
      if (isfinite(e) && !(e <= slowest))
        slowest = e;
    }
    bs_json_free(&j);
    p += n + (p[n] == '\n');
  }
  bs_err_clear();
  if (strcmp(mode, "death") == 0)
    return isfinite(stall) ? (end - stall) * 1e3 : NAN;
  return slowest * 1e3;
}

static void run_peer(const bs_bench_opts *o, detect_fig *f) {
  char nproc[16], port[16];
  bs_buf out = {0};
  snprintf(nproc, sizeof nproc, "%d", o->ranks);
  snprintf(port, sizeof port, "%d", 29400 + (int)(getpid() % 500));
  char *argv[] = {"torchrun",
                  "--nproc-per-node",
                  nproc,
                  "--master-port",
                  port,
                  (char *)o->peer,
                  (char *)f->peer_mode,
                  PEER_TIMEOUT_S,
                  NULL};
  /* The peer on the NCCL backstop loads (a shared GPU needs >= 2.30). */
  char preload[600] = "";
  const char *nccl = getenv("BS_NCCL");
  if (nccl && *nccl)
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s%s", nccl,
             strstr(nccl, ".so") ? "" : "/libnccl.so.2");
  char *env[] = {
      strcmp(f->peer_mode, "desync") == 0 ? "TORCH_DISTRIBUTED_DEBUG=DETAIL"
                                          : "TORCH_DISTRIBUTED_DEBUG=OFF",
      "NCCL_MULTI_RANK_GPU_ENABLE=1", preload[0] ? preload : NULL, NULL};
  int rc = bs_bench_exec(argv, env, &out, NULL);
  f->peer_ms = peer_figure(f->peer_mode, &out, wall_s());
  if (!isfinite(f->peer_ms))
    fprintf(stderr, "backstop bench: peer %s %s gave no figure (exit %d)\n",
            o->peer, f->peer_mode, rc);
  bs_buf_free(&out);
}

/* A figure in ms, to a tenth (null: not measured). */
static void field_ms(bs_buf *b, const char *key, double v) {
  bs_json_write_field_num(b, ", ", key, isfinite(v) ? round(v * 10) / 10 : v);
}

static char *table(const bs_bench_opts *o, const detect_fig *f, size_t n) {
  bs_buf b = {0};
  bs_buf_printf(&b,
                "detection over %s, %d ranks, %d runs each (median, max)\n"
                "  %-11s %-16s %10s %10s   %-30s %10s %8s\n",
                bs_bench_backend(o), o->ranks, o->detect, "failure", "scenario",
                "median_ms", "max_ms", "peer", "peer_ms", "peer/us");
  for (size_t i = 0; i < n; i++)
    bs_buf_printf(&b, "  %-11s %-16s %10.1f %10.1f   %-30s %10.1f %8.1f\n",
                  f[i].failure, f[i].scenario, f[i].median_ms, f[i].max_ms,
                  o->peer ? f[i].peer_what : "(no --peer)", f[i].peer_ms,
                  f[i].peer_ms / f[i].median_ms);
  return bs_buf_take(&b);
}

static char *json(const bs_bench_opts *o, const detect_fig *f, size_t n) {
  bs_buf b = {0};
  bs_buf_printf(&b, "{\"detect\": {");
  bs_json_write_field_str(&b, "", "backend", bs_bench_backend(o));
  bs_json_write_field_num(&b, ", ", "ranks", o->ranks);
  bs_json_write_field_num(&b, ", ", "runs", o->detect);
  bs_json_write_key(&b, ", ", "figures");
  bs_buf_printf(&b, "[");
  for (size_t i = 0; i < n; i++) {
    bs_buf_printf(&b, "%s\n  {", i ? "," : "");
    bs_json_write_field_str(&b, "", "failure", f[i].failure);
    bs_json_write_field_str(&b, ", ", "scenario", f[i].scenario);
    field_ms(&b, "median_ms", f[i].median_ms);
    field_ms(&b, "max_ms", f[i].max_ms);
    bs_json_write_field_str(&b, ", ", "peer", o->peer ? f[i].peer_what : "");
    field_ms(&b, "peer_ms", f[i].peer_ms);
    bs_buf_printf(&b, "}");
  }
  bs_buf_printf(&b, "]}}\n");
  return bs_buf_take(&b);
}

bs_status bs_bench_detect(const bs_bench_opts *o, char **text, char **js) {
  bs_status st = BS_OK;
  detect_fig f[] = {
      {"desync", "rank-divergence", "desync",
       "torch DETAIL: slowest rank raise", NAN, NAN, NAN},
      {"rank death", "rank-death", "death", "torchrun: stall to job end", NAN,
       NAN, NAN},
  };
  size_t n = sizeof f / sizeof f[0];
  *text = *js = NULL;
  if (o->detect < 1 || o->detect > MAX_RUNS)
    BS_FAIL(BS_ERR_INVALID, NULL, "--detect: 1..%d runs", MAX_RUNS);
  for (size_t i = 0; i < n; i++) {
    BS_CHECK(measure(o, &f[i]));
    if (o->peer)
      run_peer(o, &f[i]);
  }
  *text = table(o, f, n);
  *js = json(o, f, n);
  if (!*text || !*js)
    BS_FAIL(BS_ERR_NOMEM, NULL, "bench --detect: report");
out:
  return st;
}
