/* backstop bench on the host device at a tiny size: every figure is there,
 * positive and finite, each ratio is its figure over its ceiling, the byte
 * counts follow the model, the JSON parses, bad options exit 2 naming the
 * option. No timed assertion: only the shape of the report is checked.
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
#include "bs_bench_cli.c"
#include "bs_bench_model.c"
#include "bs_bench_report.c"
#include "bs_buf.c"
#include "bs_dev.h"
#include "bs_json.c"

#define TINY_GB 0.001

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
    {"maincast_restore", "d2d_copy", false},
    {"pause_backup", "pinned_alloc+d2h", false},
    {"resume_backup", "h2d_copy", false},
    {"pause_nobackup", NULL, false},
    {"resume_nobackup", "d2d_copy", false},
};
#define NEXPECTED (sizeof expected / sizeof expected[0])

typedef struct fixture {
  bs_bench_opts o;
  bs_model_spec m;
  bs_bench_report r;
} fixture;

/* One tiny run shared by the report tests. */
static int run_tiny(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (!f)
    return -1;
  f->o = (bs_bench_opts){
      .device = "host", .gb = TINY_GB, .threads = 2, .repeat = 1};
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

static int free_tiny(void **state) {
  fixture *f = *state;
  bs_model_free(&f->m);
  free(f);
  return 0;
}

static void test_every_figure_present(void **state) {
  const bs_bench_report *r = &((fixture *)*state)->r;
  assert_int_equal(r->n, NEXPECTED);
  for (size_t i = 0; i < NEXPECTED; i++) {
    const bs_bench_fig *f = bs_bench_find(r, expected[i].name);
    assert_non_null(f);
    assert_int_equal(f->is_ceiling, expected[i].is_ceiling);
    assert_string_equal(f->ceiling,
                        expected[i].ceiling ? expected[i].ceiling : "");
  }
  assert_null(bs_bench_find(r, "no_such_figure"));
}

static void test_figures_positive_ratios_finite(void **state) {
  const bs_bench_report *r = &((fixture *)*state)->r;
  for (size_t i = 0; i < r->n; i++) {
    const bs_bench_fig *f = &r->fig[i];
    assert_true(f->bytes > 0);
    assert_true(f->seconds > 0 && isfinite(f->seconds));
    assert_true(f->gbps > 0 && isfinite(f->gbps));
    assert_near(f->gbps, f->bytes / f->seconds / 1e9, f->gbps * 1e-9);
    if (!f->ceiling[0]) {
      assert_true(isnan(f->ratio));
      continue;
    }
    const bs_bench_fig *c = bs_bench_find(r, f->ceiling);
    assert_non_null(c);
    assert_true(isfinite(f->ratio) && f->ratio > 0);
    assert_near(f->ratio, f->gbps / c->gbps, f->ratio * 1e-9);
  }
}

/* Byte counts follow the model: the weights are one Normal backup, the
 * device-copy ceiling counts read + write, and the cast 4 + 2 bytes per
 * element (the synthetic model is all bf16, unpadded at one rank). */
static void test_bytes_follow_the_model(void **state) {
  const fixture *f = *state;
  const bs_bench_report *r = &f->r;
  double w = (double)r->weight_bytes;
  assert_true(fabs(w - TINY_GB * 1e9) < 0.1 * TINY_GB * 1e9);
  assert_int_equal(r->tensors, f->m.n);
  assert_int_equal(r->tensors, 3 + 6 * 32);
  assert_string_equal(r->model, "bench");
  assert_string_equal(r->device, "host");
  assert_string_equal(r->backend, "sim"); /* the host default */
  assert_int_equal(r->threads, 2);
  assert_int_equal(r->repeat, 1);
  assert_true(r->scale > 0 && r->scale == f->o.scale);
  assert_near(bs_bench_find(r, "d2d_copy")->bytes, 2 * w, 0);
  assert_near(bs_bench_find(r, "normal_backup")->bytes, w, 0);
  assert_near(bs_bench_find(r, "sha256_verify")->bytes, w, 0);
  assert_near(bs_bench_find(r, "cast")->bytes, 3 * w, 0);
  assert_near(bs_bench_find(r, "maincast_restore")->bytes, 3 * w, 0);
  const bs_bench_fig *a = bs_bench_find(r, "pinned_alloc");
  const bs_bench_fig *c = bs_bench_find(r, "d2h_copy");
  assert_near(bs_bench_find(r, "pinned_alloc+d2h")->seconds,
              a->seconds + c->seconds, 1e-12);
}

static const bs_json *num_member(const bs_json *o, const char *key) {
  const bs_json *v = bs_json_get(o, key);
  assert_non_null(v);
  assert_int_equal(v->type, BS_JNUM);
  return v;
}

static void check_json_fig(const bs_bench_report *r, const bs_json *figs,
                           size_t i) {
  const bs_json *j = bs_json_get(figs, expected[i].name);
  const bs_bench_fig *f = bs_bench_find(r, expected[i].name);
  assert_non_null(j);
  assert_true(num_member(j, "gbps")->num > 0);
  assert_true(num_member(j, "seconds")->num > 0);
  assert_true(num_member(j, "s_per_gb")->num > 0);
  assert_near(num_member(j, "bytes")->num, f->bytes, 0.5);
  assert_string_equal(bs_json_get_str(j, "kind", ""),
                      expected[i].is_ceiling ? "ceiling" : "figure");
  const bs_json *ratio = bs_json_get(j, "ratio");
  assert_non_null(ratio);
  if (!expected[i].ceiling) {
    assert_int_equal(ratio->type, BS_JNULL);
    return;
  }
  assert_int_equal(ratio->type, BS_JNUM);
  assert_true(ratio->num > 0);
  assert_string_equal(bs_json_get_str(j, "ceiling", ""), expected[i].ceiling);
}

static void test_json_well_formed(void **state) {
  const bs_bench_report *r = &((fixture *)*state)->r;
  char *text = bs_bench_json(r);
  bs_json j;
  assert_non_null(text);
  assert_int_equal(bs_json_parse(text, strlen(text), &j), BS_OK);
  assert_int_equal(bs_json_get_num(&j, "schema", 0), 1);
  assert_string_equal(bs_json_get_str(&j, "device", ""), "host");
  assert_string_equal(bs_json_get_str(&j, "backend", ""), "sim");
  assert_string_equal(bs_json_get_str(&j, "command", ""), "bench");
  assert_near(num_member(&j, "weight_bytes")->num, (double)r->weight_bytes,
              0.5);
  assert_near(num_member(&j, "sha256_scale")->num,
              bs_bench_find(r, "sha256_verify")->ratio, 1e-6);
  assert_true(strlen(bs_json_get_str(&j, "date", "")) == 20);
  const bs_json *figs = bs_json_get(&j, "figures");
  assert_non_null(figs);
  assert_int_equal(figs->type, BS_JOBJ);
  assert_int_equal(figs->n, NEXPECTED);
  for (size_t i = 0; i < NEXPECTED; i++)
    check_json_fig(r, figs, i);
  bs_json_free(&j);
  free(text);
}

static void test_table_lists_every_figure(void **state) {
  const bs_bench_report *r = &((fixture *)*state)->r;
  char *t = bs_bench_table(r);
  assert_non_null(t);
  assert_non_null(strstr(t, "device host, backend sim, model bench"));
  for (size_t i = 0; i < NEXPECTED; i++) {
    char row[64];
    snprintf(row, sizeof row, "\n%-20s ", expected[i].name);
    assert_non_null(strstr(t, row));
  }
  free(t);
}

/* ---- options ---- */

static bs_status parse(bs_bench_opts *o, bool *help, int argc,
                       const char *const *argv) {
  bs_err_clear();
  return bs_bench_parse(argc, (char **)argv, o, help);
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
  assert_true(o.scale == 0 && o.gb == 0);

  const char *all[] = {
      "bench",   "--device=cuda", "--backend", "sim", "--model",  "tiny",
      "--scale", "2.5",           "--threads", "3",   "--repeat", "4",
      "--json",  "out.json",      "-h"};
  assert_int_equal(parse(&o, &help, 15, all), BS_OK);
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
  };
  for (size_t i = 0; i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
    bs_bench_opts o;
    bool help = false;
    assert_int_equal(parse(&o, &help, bad_lines[i].argc, bad_lines[i].argv),
                     BS_ERR_INVALID);
    assert_non_null(strstr(bs_err()->message, bad_lines[i].names));
    assert_int_equal(
        bs_bench_main(bad_lines[i].argc, (char **)bad_lines[i].argv), 2);
  }
}

static void test_bad_model_exits_2(void **state) {
  (void)state;
  const char *preset[] = {"bench", "--model", "no-such-model"};
  const char *file[] = {"bench", "--model", "/nonexistent/model.txt"};
  assert_int_equal(bs_bench_main(3, (char **)preset), 2);
  assert_int_equal(bs_bench_main(3, (char **)file), 2);
}

static void test_help_exits_0(void **state) {
  (void)state;
  const char *argv[] = {"bench", "--help"};
  assert_int_equal(bs_bench_main(2, (char **)argv), 0);
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
  assert_int_equal(bs_bench_main(11, (char **)argv), 0);
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
  const char *argv[] = {"bench",    "--gb",   "0.001",
                        "--repeat", "1",      "--threads",
                        "1",        "--json", "/nonexistent/dir/bench.json"};
  assert_int_equal(bs_bench_main(9, (char **)argv), 1);
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
  assert_int_equal(bs_bench_main(7, (char **)argv), have_cuda ? 0 : 1);
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
      cmocka_unit_test(test_bad_model_exits_2),
      cmocka_unit_test(test_help_exits_0),
      cmocka_unit_test(test_main_writes_json),
      cmocka_unit_test(test_unwritable_json_fails),
      cmocka_unit_test(test_cuda_device),
  };
  int failed =
      cmocka_run_group_tests_name("report", report, run_tiny, free_tiny);
  return failed + cmocka_run_group_tests_name("command", command, NULL, NULL);
}
