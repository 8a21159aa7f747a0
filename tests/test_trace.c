/* Timelines Perfetto keeps whole: no slice on a thread partly overlaps
 * another, over the traces of many failing runs (mutants across the
 * catalogue, a stalled rank, a hang dumped at the deadline), and a
 * collective that ends past its phase on the record's clock is clamped
 * into it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <glob.h>
#include <math.h>

#include "bs_json.h"
#include "bs_test_cli.h"
#include "report/bs_trace.h"

typedef struct slice {
  int64_t t0, t1; /* tenths of a microsecond */
  int tid;
  const char *name;
} slice;

static int by_start(const void *a, const void *b) {
  const slice *x = a, *y = b;
  if (x->tid != y->tid)
    return x->tid - y->tid;
  if (x->t0 != y->t0)
    return x->t0 < y->t0 ? -1 : 1;
  return (x->t1 < y->t1) - (x->t1 > y->t1); /* the longer first */
}

/* The slices of a trace; asserts each time is a whole tenth. */
static size_t slices_of(const bs_json *root, slice *out, size_t max) {
  const bs_json *ev = bs_json_get(root, "traceEvents");
  size_t n = 0;
  assert_non_null(ev);
  for (size_t i = 0; i < ev->n && n < max; i++) {
    const bs_json *e = &ev->items[i];
    if (strcmp(bs_json_get_str(e, "ph", ""), "X") != 0)
      continue;
    double ts = bs_json_get_num(e, "ts", -1),
           dur = bs_json_get_num(e, "dur", -1);
    assert_true(ts >= 0 && dur >= 0);
    out[n] = (slice){.t0 = llround(ts * 10),
                     .tid = (int)bs_json_get_num(e, "tid", -1),
                     .name = bs_json_get_str(e, "name", "?")};
    out[n].t1 = out[n].t0 + llround(dur * 10);
    assert_true(fabs(ts * 10 - (double)out[n].t0) < 1e-3);
    n++;
  }
  return n;
}

/* Slices that partly overlap an enclosing one on their thread. */
static int partial_overlaps(const char *path, slice *s, size_t n) {
  slice *stack[64];
  int depth = 0, bad = 0;
  qsort(s, n, sizeof *s, by_start);
  for (size_t i = 0; i < n; i++) {
    while (depth && (stack[depth - 1]->tid != s[i].tid ||
                     stack[depth - 1]->t1 <= s[i].t0))
      depth--;
    if (depth && s[i].t1 > stack[depth - 1]->t1) {
      fprintf(stderr, "%s: tid %d: %s [%lld, %lld] crosses %s [%lld, %lld]\n",
              path, s[i].tid, s[i].name, (long long)s[i].t0, (long long)s[i].t1,
              stack[depth - 1]->name, (long long)stack[depth - 1]->t0,
              (long long)stack[depth - 1]->t1);
      bad++;
      continue;
    }
    if (depth < 64)
      stack[depth++] = &s[i];
  }
  return bad;
}

static int check_trace(const char *path, size_t *nslices) {
  char *text = slurp(path);
  bs_json root;
  static slice s[1 << 16];
  assert_int_equal(bs_json_parse(text, strlen(text), &root), BS_OK);
  size_t n = slices_of(&root, s, sizeof s / sizeof s[0]);
  int bad = partial_overlaps(path, s, n);
  *nslices += n;
  bs_json_free(&root);
  free(text);
  return bad;
}

static void test_suite_traces_nest(void **state) {
  (void)state;
  /* skip-frozen-backup over the two scenarios it fails: its other runs of
   * '*' pass, and a passing run leaves no artifacts. */
  static const char *const runs[] = {"'*' --mutant same-tag-skip",
                                     "frozen-params tensor-set --mutant "
                                     "skip-frozen-backup"};
  char args[256];
  for (size_t m = 0; m < sizeof runs / sizeof runs[0]; m++) {
    snprintf(args, sizeof args, "run %s --ranks 4 -q -j2 --artifacts art",
             runs[m]);
    assert_int_equal(backstop(args), 1);
  }
#ifdef FIU_ENABLE
  assert_int_equal(backstop("run @fault --ranks 4 -q -j2 --artifacts art "
                            "--fault name=comm/stall,rank=1,failinfo=2 "
                            "--mutant local-hash-raise"),
                   1);
  assert_int_equal(backstop("run steady-normal --ranks 4 -q --artifacts "
                            "art --fault name=comm/stall,rank=3,nth=3,"
                            "failinfo=60000 --timeout-ms 100000 "
                            "--deadline-s 1"),
                   1);
#endif
  char pattern[128];
  glob_t g;
  snprintf(pattern, sizeof pattern, "%s/art/*/trace.json", dir);
  assert_int_equal(glob(pattern, 0, NULL, &g), 0);
  size_t nslices = 0;
  int bad = 0;
  for (size_t i = 0; i < g.gl_pathc; i++)
    bad += check_trace(g.gl_pathv[i], &nslices);
    /* Many failing runs, each with phases and collectives. */
#ifdef FIU_ENABLE
  assert_true(g.gl_pathc >= 15);
#else
  assert_true(g.gl_pathc >= 5); /* the fault scenarios are skipped */
#endif
  assert_true(nslices > 500);
  assert_int_equal(bad, 0);
  globfree(&g);
}

/* A collective that outlasts its phase by a hair on the record's clock
 * (its end rounded up, say) ends with the phase in the trace. */
static void test_collective_clamped(void **state) {
  (void)state;
  bs_record rec;
  bs_buf b = {0};
  char flight[512];
  assert_int_equal(bs_record_init(&rec, 1, 1), BS_OK);
  bs_event *e = bs_record_begin(&rec, 0, "init", 0);
  assert_non_null(e);
  e->t0_ms = 1.0;
  e->t1_ms = 2.0;
  rec.duration_ms = 3.0;
  unsigned long long t0 = (unsigned long long)(rec.start_real_ms * 1e6);
  snprintf(flight, sizeof flight,
           "{\"entries\":[{\"collective_seq_id\":1,\"profiling_name\":"
           "\"nccl:barrier\",\"state\":\"completed\",\"time_created_ns\":%llu,"
           "\"time_discovered_started_ns\":%llu,"
           "\"time_discovered_completed_ns\":%llu}]}",
           t0 + 1500000, t0 + 1600000, t0 + 2000900);
  rec.rank[0].flight = strdup(flight);
  bs_trace_json(&b, &rec, "t");
  static slice s[8];
  bs_json root;
  assert_int_equal(bs_json_parse(b.s, b.len, &root), BS_OK);
  size_t n = slices_of(&root, s, 8);
  assert_int_equal(n, 2);
  assert_int_equal(s[0].t1, 20000); /* the phase: 2 ms */
  assert_int_equal(s[1].t1, 20000); /* the collective, clamped */
  assert_int_equal(partial_overlaps("synthetic", s, n), 0);
  bs_json_free(&root);
  bs_buf_free(&b);
  bs_record_free(&rec);
}

/* A run killed as a hang sent no phase events: its phase comes from the
 * collectives' frames, and the collective it waits in stays open, like
 * the phase, until the dump (the record's end), not a slice of no time. */
static void test_hang_open(void **state) {
  (void)state;
  bs_record rec;
  bs_buf b = {0};
  char flight[1024];
  assert_int_equal(bs_record_init(&rec, 1, 1), BS_OK);
  rec.duration_ms = 2000.0;
  unsigned long long t0 = (unsigned long long)(rec.start_real_ms * 1e6);
  snprintf(flight, sizeof flight,
           "{\"entries\":[{\"collective_seq_id\":1,\"profiling_name\":"
           "\"nccl:barrier\",\"state\":\"completed\",\"frames\":[{"
           "\"name\":\"agree\"},{\"name\":\"init\"}],"
           "\"time_created_ns\":%llu,\"time_discovered_completed_ns\":%llu},"
           "{\"collective_seq_id\":2,\"profiling_name\":\"nccl:barrier\","
           "\"state\":\"scheduled\",\"frames\":[{\"name\":\"init\"}],"
           "\"time_created_ns\":%llu}]}",
           t0 + 1000000, t0 + 2000000, t0 + 3000000);
  rec.rank[0].flight = strdup(flight);
  bs_trace_json(&b, &rec, "t");
  static slice s[8];
  bs_json root;
  assert_int_equal(bs_json_parse(b.s, b.len, &root), BS_OK);
  size_t n = slices_of(&root, s, 8);
  assert_int_equal(n, 3);
  /* The flight's times are ns on the wall clock, the record's start ms on
   * a double: a tick or two off. */
  assert_true(llabs(s[0].t0 - 10000) <= 2);    /* the phase, from the first */
  assert_true(llabs(s[0].t1 - 20000000) <= 2); /* to the dump: 2000 ms */
  assert_true(llabs(s[2].t0 - 30000) <= 2);
  assert_true(llabs(s[2].t1 - 20000000) <= 2); /* the wait, until the dump */
  assert_non_null(strstr(b.s, "\"name\": \"init\", \"cat\": \"phase\""));
  assert_non_null(strstr(b.s, "\"status\": \"open at the dump\""));
  assert_int_equal(partial_overlaps("hang", s, n), 0);
  bs_json_free(&root);
  bs_buf_free(&b);
  bs_record_free(&rec);
}

static int setup(void **state) {
  (void)state;
  return cli_setup("bs_trace_");
}

static int teardown(void **state) {
  (void)state;
  return cli_teardown();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_collective_clamped),
      cmocka_unit_test(test_hang_open),
      cmocka_unit_test(test_suite_traces_nest),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
