/* backstop bench on the host device at a tiny size, at 1, 2 and 4 MainCast
 * ranks (sim backend): every figure is there, positive and finite, each
 * ratio is its figure over its ceiling, the byte counts follow the model
 * (the all-gathers' from the DP shard worked out here), the all-gather
 * figures are bus bandwidth, the JSON parses, bad options exit 2 naming
 * the option. No timed assertion: only the shape of the report is checked.
 *
 * scenarios/ is not part of bs_core, so the bench sources (and the buffer
 * and JSON modules they use) are compiled into this test directly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_bench.c"
#include "bs_bench_campaigns.c"
#include "bs_bench_cli.c"
#include "bs_bench_detect.c"
#include "bs_bench_exec.c"
#include "bs_bench_hangs.c"
#include "bs_bench_maincast.c"
#include "bs_bench_measure.c"
#include "bs_bench_model.c"
#include "bs_bench_pause.c"
#include "bs_bench_replay.c"
#include "bs_bench_report.c"
#include "bs_bench_scale.c"
#include "bs_bench_trace.c"
#include "bs_bench_weights.c"
#include "bs_buf.c"
#include "bs_json.c"
#include "dev/bs_dev.h"

#define TINY_GB 0.0002

/* CMocka 1.1 compares floats only: doubles here, eps 0 for exact. */
#define assert_near(a, b, eps)                                                 \
  assert_true(fabs((double)(a) - (double)(b)) <= (eps))

/* Every figure a report must hold, with the ceiling it is compared with
 * (NULL: a ceiling, or a figure without one). */
static const struct {
  const char *name, *ceiling;
  bool is_ceiling;
} expected[] = {
    {"d2d_copy", NULL, true},
    {"sm_copy", NULL, true},
    {"d2h_copy", NULL, true},
    {"h2d_copy", NULL, true},
    {"pinned_alloc", NULL, true},
    {"sha256_1thread", NULL, true},
    {"pinned_alloc+d2h", NULL, true},
    {"normal_backup_first", "pinned_alloc+d2h", false},
    {"normal_backup", "d2h_copy", false},
    {"normal_restore", "h2d_copy", false},
    {"sha256_verify", "sha256_1thread", false},
    {"cast", "d2d_copy", false},
    {"cast_sm", "sm_copy", false},
    {"maincast_restore", "d2d_copy", false},
    {"pause_backup", "pinned_alloc+d2h", false},
    {"resume_backup", "h2d_copy", false},
    {"pause_nobackup", NULL, false},
    {"resume_nobackup", "d2d_copy", false},
};
#define NEXPECTED (sizeof expected / sizeof expected[0])

/* Above one rank, the all-gathers too (both bus bandwidth). */
static const struct {
  const char *name, *ceiling;
  bool is_ceiling;
} expected_ranks[] = {
    {"all_gather", NULL, true},
    {"maincast_all_gather", "all_gather", false},
};
#define NEXPECTED_RANKS (sizeof expected_ranks / sizeof expected_ranks[0])

typedef struct fixture {
  bs_bench_opts o;
  bs_model_spec m;
  bs_bench_report r;
} fixture;

static size_t figures_expected(int ranks) {
  return NEXPECTED + (ranks > 1 ? NEXPECTED_RANKS : 0);
}

static bool is_busbw(const char *name) {
  for (size_t i = 0; i < NEXPECTED_RANKS; i++)
    if (strcmp(name, expected_ranks[i].name) == 0)
      return true;
  return false;
}

/* One tiny run at `ranks` ranks, shared by the report tests. ranks 0 is
 * left to the default (1). */
static int run_tiny_at(void **state, int ranks) {
  fixture *f = calloc(1, sizeof *f);
  if (!f)
    return -1;
  f->o = (bs_bench_opts){.device = "host",
                         .gb = TINY_GB,
                         .threads = 2,
                         .repeat = 1,
                         .ranks = ranks};
  if (bs_bench_model(&f->o, &f->m) != BS_OK ||
      bs_bench_run(&f->o, &f->m, &f->r) != BS_OK) {
    char msg[512];
    bs_err_format(bs_err(), msg, sizeof msg);
    fprintf(stderr, "bench run failed: %s\n", msg);
    bs_model_free(&f->m);
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int run_tiny(void **state) {
  return run_tiny_at(state, 0);
}

static int run_ranks2(void **state) {
  return run_tiny_at(state, 2);
}

static int run_ranks4(void **state) {
  return run_tiny_at(state, 4);
}

static int free_tiny(void **state) {
  fixture *f = *state;
  bs_model_free(&f->m);
  free(f);
  return 0;
}

static void check_present(const bs_bench_report *r, const char *name,
                          const char *ceiling, bool is_ceiling) {
  const bs_bench_fig *f = bs_bench_report_find(r, name);
  assert_non_null(f);
  assert_int_equal(f->is_ceiling, is_ceiling);
  assert_string_equal(f->ceiling, ceiling ? ceiling : "");
  assert_int_equal(f->busbw, is_busbw(name));
}

static void test_every_figure_present(void **state) {
  const bs_bench_report *r = &((fixture *)*state)->r;
  assert_int_equal(r->n, figures_expected(r->ranks));
  for (size_t i = 0; i < NEXPECTED; i++)
    check_present(r, expected[i].name, expected[i].ceiling,
                  expected[i].is_ceiling);
  for (size_t i = 0; r->ranks > 1 && i < NEXPECTED_RANKS; i++)
    check_present(r, expected_ranks[i].name, expected_ranks[i].ceiling,
                  expected_ranks[i].is_ceiling);
  for (size_t i = 0; r->ranks == 1 && i < NEXPECTED_RANKS; i++)
    assert_null(bs_bench_report_find(r, expected_ranks[i].name));
  assert_null(bs_bench_report_find(r, "no_such_figure"));
}

/* What each counted byte is worth in the figure's GB/s: nccl-tests'
 * all-gather bus bandwidth factor for the all-gathers. */
static double bus_factor_of(const bs_bench_report *r, const bs_bench_fig *f) {
  return f->busbw ? (double)(r->ranks - 1) / r->ranks : 1.0;
}

static void test_figures_positive_ratios_finite(void **state) {
  const bs_bench_report *r = &((fixture *)*state)->r;
  for (size_t i = 0; i < r->n; i++) {
    const bs_bench_fig *f = &r->fig[i];
    assert_true(f->bytes > 0);
    assert_true(f->seconds > 0 && isfinite(f->seconds));
    assert_true(f->gbps > 0 && isfinite(f->gbps));
    assert_near(f->gbps, f->bytes / f->seconds / 1e9 * bus_factor_of(r, f),
                f->gbps * 1e-9);
    if (!f->ceiling[0]) {
      assert_true(isnan(f->ratio));
      continue;
    }
    const bs_bench_fig *c = bs_bench_report_find(r, f->ceiling);
    assert_non_null(c);
    assert_true(isfinite(f->ratio) && f->ratio > 0);
    assert_near(f->ratio, f->gbps / c->gbps, f->ratio * 1e-9);
  }
}

/* Rank 0's shard of the param buffers, from the model alone: the synthetic
 * model is all trainable bf16 params, small enough for one DDP bucket
 * (40M elements), which is padded to a multiple of the ranks and split
 * evenly. */
static double shard_elems(const bs_model_spec *m, int ranks) {
  size_t e = 0;
  for (size_t i = 0; i < m->n; i++) {
    assert_true(bs_tensor_in_ddp(&m->t[i]));
    e += m->t[i].numel;
  }
  assert_true(e < 40000000u);
  return (double)((e + (size_t)ranks - 1) / (size_t)ranks);
}

/* Byte counts follow the model: the weights are one Normal backup, the
 * device-copy ceilings count read + write, the cast 4 + 2 bytes per
 * element of rank 0's shard, the all-gathers every rank's bf16 shard. The
 * derived figures are their parts' runs, not timed again. */
static void test_bytes_follow_the_model(void **state) {
  const fixture *f = *state;
  const bs_bench_report *r = &f->r;
  double w = (double)r->weight_bytes;
  double shard = shard_elems(&f->m, r->ranks);
  assert_int_equal(r->ranks, f->o.ranks ? f->o.ranks : 1);
  assert_true(fabs(w - TINY_GB * 1e9) < 0.1 * TINY_GB * 1e9);
  assert_int_equal(r->tensors, f->m.n);
  assert_int_equal(r->tensors, 3 + 6 * 32);
  assert_string_equal(r->model, "bench");
  assert_string_equal(r->device, "host");
  assert_string_equal(r->backend, "sim"); /* the host default */
  assert_int_equal(r->threads, 2);
  assert_int_equal(r->repeat, 1);
  assert_true(r->scale > 0 && r->scale == f->o.scale);
  assert_near(bs_bench_report_find(r, "d2d_copy")->bytes, 2 * w, 0);
  assert_near(bs_bench_report_find(r, "sm_copy")->bytes, 2 * w, 0);
  assert_near(bs_bench_report_find(r, "normal_backup")->bytes, w, 0);
  assert_near(bs_bench_report_find(r, "sha256_verify")->bytes, w, 0);
  assert_near(bs_bench_report_find(r, "cast")->bytes, 6 * shard, 0);
  assert_near(bs_bench_report_find(r, "maincast_restore")->bytes, 6 * shard, 0);
  if (r->ranks == 1)
    assert_near(6 * shard, 3 * w, 0); /* unpadded: the whole model */
  for (size_t i = 0; r->ranks > 1 && i < NEXPECTED_RANKS; i++)
    assert_near(bs_bench_report_find(r, expected_ranks[i].name)->bytes,
                r->ranks * 2 * shard, 0);
  const bs_bench_fig *a = bs_bench_report_find(r, "pinned_alloc");
  const bs_bench_fig *c = bs_bench_report_find(r, "d2h_copy");
  assert_near(bs_bench_report_find(r, "pinned_alloc+d2h")->seconds,
              a->seconds + c->seconds, 1e-12);
  const bs_bench_fig *cast = bs_bench_report_find(r, "cast");
  const bs_bench_fig *cast_sm = bs_bench_report_find(r, "cast_sm");
  assert_near(cast_sm->bytes, cast->bytes, 0);
  assert_near(cast_sm->seconds, cast->seconds, 0);
  assert_near(cast_sm->ratio * bs_bench_report_find(r, "sm_copy")->gbps,
              cast->gbps, cast->gbps * 1e-9);
}

static const bs_json *num_member(const bs_json *o, const char *key) {
  const bs_json *v = bs_json_get(o, key);
  assert_non_null(v);
  assert_int_equal(v->type, BS_JNUM);
  return v;
}

static void check_json_fig(const bs_bench_report *r, const bs_json *figs,
                           const char *name) {
  const bs_json *j = bs_json_get(figs, name);
  const bs_bench_fig *f = bs_bench_report_find(r, name);
  assert_non_null(j);
  assert_non_null(f);
  assert_true(num_member(j, "gbps")->num > 0);
  assert_true(num_member(j, "seconds")->num > 0);
  assert_true(num_member(j, "s_per_gb")->num > 0);
  assert_near(num_member(j, "bytes")->num, f->bytes, 0.5);
  assert_near(num_member(j, "gbps")->num, f->gbps, f->gbps * 1e-9);
  assert_string_equal(bs_json_get_str(j, "kind", ""),
                      f->is_ceiling ? "ceiling" : "figure");
  assert_string_equal(bs_json_get_str(j, "metric", ""),
                      is_busbw(name) ? "busbw" : "throughput");
  const bs_json *ratio = bs_json_get(j, "ratio");
  assert_non_null(ratio);
  if (!f->ceiling[0]) {
    assert_int_equal(ratio->type, BS_JNULL);
    return;
  }
  assert_int_equal(ratio->type, BS_JNUM);
  assert_true(ratio->num > 0);
  assert_string_equal(bs_json_get_str(j, "ceiling", ""), f->ceiling);
}

static void test_json_well_formed(void **state) {
  const bs_bench_report *r = &((fixture *)*state)->r;
  char *text = bs_bench_report_json(r);
  bs_json j;
  assert_non_null(text);
  assert_int_equal(bs_json_parse(text, strlen(text), &j), BS_OK);
  assert_int_equal(bs_json_get_num(&j, "schema", 0), 1);
  assert_string_equal(bs_json_get_str(&j, "device", ""), "host");
  assert_string_equal(bs_json_get_str(&j, "backend", ""), "sim");
  assert_string_equal(bs_json_get_str(&j, "command", ""), "bench");
  assert_near(num_member(&j, "weight_bytes")->num, (double)r->weight_bytes,
              0.5);
  assert_near(num_member(&j, "ranks")->num, r->ranks, 0);
  assert_near(num_member(&j, "sha256_scale")->num,
              bs_bench_report_find(r, "sha256_verify")->ratio, 1e-6);
  assert_true(strlen(bs_json_get_str(&j, "date", "")) == 20);
  const bs_json *figs = bs_json_get(&j, "figures");
  assert_non_null(figs);
  assert_int_equal(figs->type, BS_JOBJ);
  assert_int_equal(figs->n, figures_expected(r->ranks));
  for (size_t i = 0; i < r->n; i++)
    check_json_fig(r, figs, r->fig[i].name);
  bs_json_free(&j);
  free(text);
}

/* The detection figures' JSON is JSON whatever a figure's words hold (a
 * peer's quotes), a figure not measured null. */
static void test_detect_json_escapes(void **state) {
  (void)state;
  bs_bench_opts o = {.ranks = 4, .detect = 3, .peer = "peer.py"};
  detect_fig f[] = {
      {"desync", "rank \"x\"", "m", "torch \"nccl\"\n", 1.25, NAN, 2.0}};
  char *text = json(&o, f, 1);
  bs_json j;
  assert_int_equal(bs_json_parse(text, strlen(text), &j), BS_OK);
  const bs_json *d = bs_json_get(&j, "detect");
  const bs_json *g = &bs_json_get(d, "figures")->items[0];
  assert_string_equal(bs_json_get_str(g, "scenario", ""), "rank \"x\"");
  assert_string_equal(bs_json_get_str(g, "peer", ""), "torch \"nccl\"\n");
  assert_near(bs_json_get_num(g, "median_ms", 0), 1.3, 1e-9);
  assert_int_equal(bs_json_get(g, "max_ms")->type, BS_JNULL);
  bs_json_free(&j);
  free(text);
}

/* The ranks torchfrtrace's words name: each number of a set, a culprit;
 * none past the world, and a number too long for a long is no rank. */
static void test_frt_ranks_read(void **state) {
  (void)state;
  bool pick[8] = {false};
  assert_true(hangs_frt_ranks("missing ranks: {1, 12, 3}\nCulprit rank 5\n"
                              "missed FR dumps from ranks ({7})",
                              pick, 8));
  bool want[8] = {false, true, false, true, false, true, false, true};
  assert_memory_equal(pick, want, sizeof pick);
  bool none[8] = {false};
  assert_false(hangs_frt_ranks("missing ranks: {99999999999999999999999, "
                               "9}\nCulprit rank x",
                               none, 8));
  for (int r = 0; r < 8; r++)
    assert_false(none[r]);
}

static void test_table_lists_every_figure(void **state) {
  const bs_bench_report *r = &((fixture *)*state)->r;
  char *t = bs_bench_report_table(r);
  char head[64];
  assert_non_null(t);
  snprintf(head, sizeof head, "device host, backend sim, ranks %d, model bench",
           r->ranks);
  assert_non_null(strstr(t, head));
  for (size_t i = 0; i < r->n; i++) {
    char row[64];
    snprintf(row, sizeof row, "\n%-20s ", r->fig[i].name);
    const char *at = strstr(t, row);
    assert_non_null(at);
    /* the bus-bandwidth rows, and only they, say so */
    const char *end = strchr(at + 1, '\n');
    assert_non_null(end);
    const char *mark = strstr(at + 1, "  busbw\n");
    assert_int_equal(mark && mark + 7 == end, r->fig[i].busbw);
  }
  assert_int_equal(strstr(t, "\nbusbw: all-gather bus bandwidth") != NULL,
                   r->ranks > 1);
  free(t);
}

/* ---- options ---- */

static bs_status parse(bs_bench_opts *o, bool *help, int argc,
                       const char *const *argv) {
  bs_err_clear();
  return bs_bench_cli_parse(argc, (char **)argv, o, help);
}

static void test_parse_defaults_and_values(void **state) {
  (void)state;
  bs_bench_opts o;
  bool help = true;
  const char *none[] = {"bench"};
  assert_int_equal(parse(&o, &help, 1, none), BS_OK);
  assert_false(help);
  assert_string_equal(o.device, "host");
  assert_null(o.model);
  assert_null(o.backend);
  assert_null(o.json);
  assert_int_equal(o.repeat, 3);
  assert_int_equal(o.threads, 0);
  assert_int_equal(o.ranks, 1);
  assert_true(o.scale == 0 && o.gb == 0);

  const char *all[] = {
      "bench",   "--device=cuda", "--backend", "sim", "--model",  "tiny",
      "--scale", "2.5",           "--threads", "3",   "--repeat", "4",
      "--json",  "out.json",      "--ranks",   "64",  "-h"};
  assert_int_equal(parse(&o, &help, 17, all), BS_OK);
  assert_int_equal(o.ranks, 64);
  assert_true(help);
  assert_string_equal(o.device, "cuda");
  assert_string_equal(o.backend, "sim");
  assert_string_equal(o.model, "tiny");
  assert_string_equal(o.json, "out.json");
  assert_true(o.scale == 2.5);
  assert_int_equal(o.threads, 3);
  assert_int_equal(o.repeat, 4);
}

/* Each bad command line: parse fails naming the option, main exits 2. */
static void test_bad_options_exit_2(void **state) {
  (void)state;
  static const struct {
    const char *argv[5];
    int argc;
    const char *names;
  } bad_lines[] = {
      {{"bench", "--device", "tpu"}, 3, "--device"},
      {{"bench", "--backend", "mpi"}, 3, "--backend"},
      {{"bench", "--repeat", "0"}, 3, "--repeat"},
      {{"bench", "--repeat", "3x"}, 3, "--repeat"},
      {{"bench", "--threads", "0"}, 3, "--threads"},
      {{"bench", "--gb", "-1"}, 3, "--gb"},
      {{"bench", "--gb", "nan"}, 3, "--gb"},
      {{"bench", "--scale", "big"}, 3, "--scale"},
      {{"bench", "--json"}, 2, "--json"},
      {{"bench", "--json="}, 2, "--json"},
      {{"bench", "--frobnicate"}, 2, "--frobnicate"},
      {{"bench", "stray"}, 2, "stray"},
      {{"bench", "--scale", "2", "--gb", "1"}, 5, "--scale and --gb"},
      {{"bench", "--ranks", "0"}, 3, "--ranks"},
      {{"bench", "--ranks", "65"}, 3, "--ranks"},
      {{"bench", "--ranks", "2x"}, 3, "--ranks"},
      {{"bench", "--ranks=two"}, 2, "--ranks"},
      {{"bench", "--ranks"}, 2, "--ranks"},
      {{"bench", "--scale-ranks", "1"}, 3, "--scale-ranks"},
      {{"bench", "--scale-ranks", "16385"}, 3, "--scale-ranks"},
      {{"bench", "--scale-ranks", "1024,"}, 3, "--scale-ranks"},
      {{"bench", "--scale-ranks", ",1024"}, 3, "--scale-ranks"},
      {{"bench", "--scale-ranks", "2,3,4,5,6,7,8,9,10"}, 3, "--scale-ranks"},
      {{"bench", "--scale-ranks"}, 2, "--scale-ranks"},
      {{"bench", "--fuzz-s", "0"}, 3, "--fuzz-s"},
      {{"bench", "--sweep-sample", "3"}, 3, "--sweep-sample"},
      {{"bench", "--sweep-sample", "101%"}, 3, "--sweep-sample"},
      {{"bench", "--sweep-sample", "%"}, 3, "--sweep-sample"},
      {{"bench", "--backend", "nccl", "--device", "host"},
       5,
       "--backend nccl needs --device cuda"},
  };
  for (size_t i = 0; i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
    bs_bench_opts o;
    bool help = false;
    assert_int_equal(parse(&o, &help, bad_lines[i].argc, bad_lines[i].argv),
                     BS_ERR_INVALID);
    assert_non_null(strstr(bs_err()->message, bad_lines[i].names));
    assert_int_equal(
        bs_bench_cli_main(bad_lines[i].argc, (char **)bad_lines[i].argv), 2);
  }
}

/* More nccl ranks than GPUs (explicit, or nccl as the cuda default) is a
 * usage error naming --ranks and both numbers, before any rank starts. */
static void test_nccl_ranks_over_gpus_exit_2(void **state) {
  (void)state;
  int gpus = bs_dev_cuda_count();
  int ranks = gpus + 1 > 2 ? gpus + 1 : 2; /* one rank is never refused */
  char n[16], want_ranks[32], want_gpus[32];
  snprintf(n, sizeof n, "%d", ranks);
  snprintf(want_ranks, sizeof want_ranks, "--ranks %d", ranks);
  snprintf(want_gpus, sizeof want_gpus, "%d visible", gpus);
  const char *lines[][5] = {
      {"bench", "--backend", "nccl", "--ranks", n},
      {"bench", "--device", "cuda", "--ranks", n},
  };
  for (size_t i = 0; i < 2; i++) {
    bs_bench_opts o;
    bool help = false;
    assert_int_equal(parse(&o, &help, 5, lines[i]), BS_ERR_INVALID);
    assert_non_null(strstr(bs_err()->message, want_ranks));
    assert_non_null(strstr(bs_err()->message, want_gpus));
    assert_int_equal(bs_bench_cli_main(5, (char **)lines[i]), 2);
  }
  /* sim places any number of ranks, GPUs or not */
  const char *sim[] = {"bench", "--device", "cuda", "--backend",
                       "sim",   "--ranks",  n};
  bs_bench_opts o;
  bool help = false;
  assert_int_equal(parse(&o, &help, 7, sim), BS_OK);
}

/* The library entry checks what the command line checks. */
static void test_run_rejects_bad_ranks(void **state) {
  (void)state;
  bs_model_spec m = {0};
  bs_bench_report r;
  bs_bench_opts o = {
      .device = "host", .gb = TINY_GB, .threads = 1, .repeat = 1};
  assert_int_equal(bs_bench_model(&o, &m), BS_OK);
  o.ranks = BS_BENCH_MAX_RANKS + 1;
  assert_int_equal(bs_bench_run(&o, &m, &r), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "--ranks"));
  o.ranks = -1;
  assert_int_equal(bs_bench_run(&o, &m, &r), BS_ERR_INVALID);
  bs_model_free(&m);
}

/* A derived figure needs its parts measured: an error, not a made-up row. */
static void test_derived_needs_its_parts(void **state) {
  (void)state;
  bs_bench_report r = {.ranks = 1};
  const bs_bench_op op = {.name = "derived", .is_ceiling = true};
  bs_err_clear();
  assert_int_equal(bs_bench_measure_add_derived(&r, &op, "cast", NULL),
                   BS_ERR_INTERNAL);
  assert_non_null(strstr(bs_err()->message, "cast"));
  const bs_bench_op part = {.name = "cast"};
  assert_int_equal(bs_bench_measure_add_fig(&r, &part, 6, 2), BS_OK);
  bs_err_clear();
  assert_int_equal(bs_bench_measure_add_derived(&r, &op, "cast", "d2h_copy"),
                   BS_ERR_INTERNAL);
  assert_non_null(strstr(bs_err()->message, "d2h_copy"));
  assert_int_equal(r.n, 1);
  assert_int_equal(bs_bench_measure_add_derived(&r, &op, "cast", "cast"),
                   BS_OK);
  assert_int_equal(r.n, 2);
  assert_near(r.fig[1].bytes, 6, 0);
  assert_near(r.fig[1].seconds, 4, 0);
}

static void test_bad_model_exits_2(void **state) {
  (void)state;
  const char *preset[] = {"bench", "--model", "no-such-model"};
  const char *file[] = {"bench", "--model", "/nonexistent/model.txt"};
  assert_int_equal(bs_bench_cli_main(3, (char **)preset), 2);
  assert_int_equal(bs_bench_cli_main(3, (char **)file), 2);
}

static void test_help_exits_0(void **state) {
  (void)state;
  const char *argv[] = {"bench", "--help"};
  assert_int_equal(bs_bench_cli_main(2, (char **)argv), 0);
}

/* ---- the command end to end ---- */

static bs_json read_json(const char *path) {
  FILE *f = fopen(path, "r");
  char buf[1 << 16];
  bs_json j;
  assert_non_null(f);
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  assert_true(n > 0 && n < sizeof buf);
  assert_int_equal(bs_json_parse(buf, n, &j), BS_OK);
  return j;
}

/* A preset with tensors outside the DDP buffers (an fp32 param, an
 * expert_bias buffer) through the command, the JSON written to a file. */
static void test_main_writes_json(void **state) {
  (void)state;
  char path[] = "/tmp/bs_bench_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  const char *argv[] = {"bench", "--model",  "tiny", "--scale",
                        "8",     "--repeat", "1",    "--threads",
                        "2",     "--json",   path};
  assert_int_equal(bs_bench_cli_main(11, (char **)argv), 0);
  bs_json j = read_json(path);
  unlink(path);
  assert_string_equal(bs_json_get_str(&j, "model", ""), "tiny");
  assert_true(bs_json_get_num(&j, "scale", 0) == 8);
  const bs_json *figs = bs_json_get(&j, "figures");
  assert_non_null(figs);
  assert_int_equal(figs->n, NEXPECTED);
  bs_json_free(&j);
}

static void test_unwritable_json_fails(void **state) {
  (void)state;
  const char *argv[] = {"bench",    "--gb",   "0.0002",
                        "--repeat", "1",      "--threads",
                        "1",        "--json", "/nonexistent/dir/bench.json"};
  assert_int_equal(bs_bench_cli_main(9, (char **)argv), 1);
}

/* Where no GPU is usable the cuda bench fails (exit 1) with a message;
 * where one is, it measures. */
static void test_cuda_device(void **state) {
  (void)state;
  bs_dev *d = NULL;
  bool have_cuda = bs_dev_create("cuda", 0, &d) == BS_OK;
  bs_dev_destroy(d);
  const char *argv[] = {"bench", "--device", "cuda", "--gb",
                        "0.002", "--repeat", "1"};
  assert_int_equal(bs_bench_cli_main(7, (char **)argv), have_cuda ? 0 : 1);
}

/* The replay figure: Backstop's own dumps of 8 ranks replayed, timed, and
 * blaming the rank the world blamed; a world of 1 is refused. */
static void test_replay_figure(void **state) {
  (void)state;
  bs_bench_replay r;
  assert_int_equal(bs_bench_replay_run(8, &r), BS_OK);
  assert_true(r.agrees);
  assert_string_equal(r.world_culprit, "rank 7");
  /* Up to 1024 ranks every collective is replayed (bs_replay_start.c: the
   * order of a rank's ops across its groups reads back whole). */
  assert_int_equal(r.collectives, 8 * (STEPS * 5 + 1));
  assert_true(r.seconds > 0 && r.peak_bytes > 0);
  char *line = bs_bench_replay_text(&r, false),
       *json = bs_bench_replay_text(&r, true);
  assert_non_null(strstr(line, "culprit rank 7 (as the world's report)"));
  bs_json j;
  assert_int_equal(bs_json_parse(json, strlen(json), &j), BS_OK);
  assert_int_equal(bs_json_get_int(bs_json_get(&j, "replay"), "ranks", 0), 8);
  bs_json_free(&j);
  free(line);
  free(json);
  /* Replay's words go into the JSON escaped. */
  snprintf(r.replay_culprit, sizeof r.replay_culprit, "rank \"7\" \\ x");
  json = bs_bench_replay_text(&r, true);
  assert_int_equal(bs_json_parse(json, strlen(json), &j), BS_OK);
  assert_string_equal(bs_json_get_str(bs_json_get(&j, "replay"), "culprit", ""),
                      "rank \"7\" \\ x");
  bs_json_free(&j);
  free(json);
  const char *argv[] = {"bench", "--replay", "1"};
  assert_int_equal(bs_bench_cli_main(3, (char **)argv), 2);
  bs_err_clear();
}

/* --campaigns: its options, and its figures in the table and the JSON
 * (each a command's wall time, runs and rate: fuzz's a minute). */
static void test_campaign_figures(void **state) {
  (void)state;
  bs_bench_opts o;
  bool help = false;
  const char *argv[] = {"bench", "--campaigns",    "--fuzz-s",
                        "5",     "--sweep-sample", "3%"};
  assert_int_equal(parse(&o, &help, 6, argv), BS_OK);
  assert_true(o.campaigns && !help);
  assert_true(o.fuzz_s == 5);
  assert_string_equal(o.sweep_sample, "3%");
  camp_fig f[3] = {
      {.name = "default suite", .seconds = 0.1, .runs = 22, .rate = 220},
      {.name = "fuzz seed 1", .seconds = 6, .runs = 600, .rate = 7200},
      {.name = "full sweep",
       .seconds = 300,
       .runs = 69000,
       .rate = 230,
       .rc = 1,
       .detail = "2 vacuous"}};
  char *table = camp_table(f, 3), *json = camp_json(f, 3);
  assert_non_null(strstr(table, "7200/min"));
  assert_non_null(strstr(table, "1, 2 vacuous"));
  assert_non_null(strstr(json, "\"runs_a_minute\": 7200.0"));
  assert_non_null(strstr(json, "\"figure\": \"full sweep\", \"seconds\": "
                               "300.000, \"runs\": 69000"));
  free(table);
  free(json);
}

/* --scale-ranks: the sizes in order; a run's verdict and its failed
 * oracle read from its report; the table and the JSON hold every figure
 * and the replay. */
static void test_scale_figures(void **state) {
  (void)state;
  bs_bench_opts o;
  bool help = false;
  const char *argv[] = {"bench", "--scale-ranks", "1024,4096,16384"};
  assert_int_equal(parse(&o, &help, 3, argv), BS_OK);
  assert_int_equal(o.nscale, 3);
  assert_int_equal(o.scale_ranks[0], 1024);
  assert_int_equal(o.scale_ranks[2], 16384);
  char path[] = "/tmp/bs_test_scale_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  static const char report[] =
      "{\"runs\": [{\"verdict\": \"fail\", \"oracles\": [{\"name\": "
      "\"liveness\", \"ok\": true}, {\"name\": \"expectation\", \"ok\": "
      "false, \"detail\": \"too slow\"}]}]}";
  assert_int_equal(write(fd, report, sizeof report - 1),
                   (ssize_t)(sizeof report - 1));
  close(fd);
  scale_fig f[2] = {{.scenario = "rank-divergence", .ranks = 1024},
                    {.scenario = "steady-maincast", .ranks = 1024}};
  scale_verdict(path, 1, &f[0]);
  unlink(path);
  assert_string_equal(f[0].verdict, "fail");
  assert_string_equal(f[0].detail, "expectation: too slow");
  scale_verdict(path, 4, &f[1]); /* gone: no report */
  assert_string_equal(f[1].verdict, "none");
  assert_non_null(strstr(f[1].detail, "exit 4"));
  f[0].seconds = 2.5;
  f[0].peak_bytes = 200u << 20;
  bs_bench_replay rp = {.ranks = 1024, .seconds = 1, .agrees = true};
  snprintf(rp.replay_culprit, sizeof rp.replay_culprit, "rank 1023");
  char *text = scale_table(f, 2, &rp), *js = scale_json(f, 2, &rp);
  assert_non_null(strstr(text, "rank-divergence    1024       2.5       200  "
                               "fail: expectation: too slow"));
  assert_non_null(strstr(text, "culprit rank 1023 (as the world's)"));
  bs_json j = {0};
  assert_int_equal(bs_json_parse(js, strlen(js), &j), BS_OK);
  const bs_json *sc = bs_json_get(&j, "scale");
  const bs_json *figs = bs_json_get(sc, "figures");
  assert_int_equal(figs->n, 2);
  assert_int_equal(bs_json_get_int(&figs->items[0], "peak_bytes", 0),
                   200 << 20);
  assert_string_equal(bs_json_get_str(&figs->items[1], "verdict", ""), "none");
  assert_string_equal(bs_json_get_str(bs_json_get(sc, "replay"), "culprit", ""),
                      "rank 1023");
  bs_json_free(&j);
  free(text);
  free(js);
}

int main(void) {
  const struct CMUnitTest report[] = {
      cmocka_unit_test(test_every_figure_present),
      cmocka_unit_test(test_figures_positive_ratios_finite),
      cmocka_unit_test(test_bytes_follow_the_model),
      cmocka_unit_test(test_json_well_formed),
      cmocka_unit_test(test_table_lists_every_figure),
  };
  const struct CMUnitTest command[] = {
      cmocka_unit_test(test_parse_defaults_and_values),
      cmocka_unit_test(test_bad_options_exit_2),
      cmocka_unit_test(test_nccl_ranks_over_gpus_exit_2),
      cmocka_unit_test(test_run_rejects_bad_ranks),
      cmocka_unit_test(test_derived_needs_its_parts),
      cmocka_unit_test(test_bad_model_exits_2),
      cmocka_unit_test(test_help_exits_0),
      cmocka_unit_test(test_main_writes_json),
      cmocka_unit_test(test_unwritable_json_fails),
      cmocka_unit_test(test_cuda_device),
      cmocka_unit_test(test_replay_figure),
      cmocka_unit_test(test_scale_figures),
      cmocka_unit_test(test_campaign_figures),
      cmocka_unit_test(test_detect_json_escapes),
      cmocka_unit_test(test_frt_ranks_read),
  };
  int failed =
      cmocka_run_group_tests_name("report", report, run_tiny, free_tiny);
  failed += cmocka_run_group_tests_name("report, 2 ranks", report, run_ranks2,
                                        free_tiny);
  failed += cmocka_run_group_tests_name("report, 4 ranks", report, run_ranks4,
                                        free_tiny);
  return failed + cmocka_run_group_tests_name("command", command, NULL, NULL);
}
