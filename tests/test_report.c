/* Reports: the run object round-trips through its JSON, the JSON report
 * parses and carries docs/cli.md's fields, two runs that differ only in times
 * and paths give the same report once those are blanked, JUnit XML is
 * well-formed, and the trace timeline is trace-event JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_json.h"
#include "catalog/bs_scenario.h"
#include "oracles/bs_judge.h"
#include "plan/bs_plan.h"
#include "report/bs_report.h"
#include "report/bs_trace.h"

static bool expect_ok(const bs_record *r, char *d, size_t n) {
  (void)r;
  snprintf(d, n, "fine");
  return true;
}

static const bs_scenario scn = {.name = "engine-death",
                                .labels = "@smoke",
                                .model = "tiny",
                                .cycles = 3,
                                .default_ranks = 4,
                                .min_ranks = 1,
                                .faults = BS_LIST("name=engine/send,rank="
                                                  "{last},nth=2"),
                                .expect = expect_ok};

static const char *const user_faults[] = {"name=copy/fail,prob=0.5"};
static const char *const user_sets[] = {"offload_target=disk x"};

/* The faults of the run cfg() makes, as its plan parses them. */
static bs_run_fault planned[BS_SCENARIO_FAULTS_MAX + 1];

static bs_run cfg(int ranks) {
  bs_run c = {.scn = &scn,
              .ranks = ranks,
              .backend = "sim",
              .device = "host",
              .model_name = "tiny",
              .scale = 1,
              .cycles = 3,
              .faults = planned,
              .sets = user_sets,
              .nsets = 1,
              .seed = 7,
              .schedule = {.policy = BS_SCHED_PCT, .depth = 3, .seed = 9}};
  assert_int_equal(bs_plan_own_faults(&scn, ranks, planned, &c.nown), BS_OK);
  assert_int_equal(bs_plan_fault(user_faults[0], &planned[c.nown]), BS_OK);
  c.nfaults = c.nown + 1;
  return c;
}

/* The verdict on rec of a 2-rank, 1-cycle run that armed the fault
 * spec. */
static void decide_armed(const char *spec, const bs_record *rec,
                         bs_result *res) {
  static const bs_scenario steady = {
      .name = "steady", .model = "tiny", .cycles = 1};
  bs_run_fault f;
  bs_run c = cfg(2);
  assert_int_equal(bs_plan_fault(spec, &f), BS_OK);
  c.faults = &f;
  c.nfaults = 1;
  c.nown = 0;
  c.scn = &steady;
  assert_int_equal(bs_result_from_run(&c, res), BS_OK);
  assert_int_equal(bs_judge(&c, rec, NULL, res), BS_OK);
}

/* A failed run with every field set; times and paths from `salt`. */
static void sample(bs_result *r, double salt) {
  bs_run c = cfg(4);
  assert_int_equal(bs_result_from_run(&c, r), BS_OK);
  r->verdict = BS_FAIL;
  r->duration_ms = 41.7 + salt;
  r->detect_ms = 3.25 + salt;
  bs_oracle_result o1 = {"agreement", true, "all 4 ranks: \"engine-dead\""};
  bs_oracle_result o2 = {"pause-safety", false, "rank 3 <resident> & more"};
  bs_result_add_oracle(r, &o1);
  bs_result_add_oracle(r, &o2);
  bs_rank_outcome ro = {3, "engine-dead", "update_weights", "line\nbreak",
                        "core/sync/bs_engine.c:324"};
  bs_result_add_outcome(r, &ro);
  r->pinned_max = 4096;
  r->resident_max = 1 << 20;
  char path[64];
  snprintf(path, sizeof path, "/tmp/a%.0f/rank0.flight.json", salt);
  bs_result_add_flight(r, path);
  snprintf(path, sizeof path, "/tmp/a%.0f/trace.json", salt);
  r->trace = strdup(path);
}

static void test_result_round_trip(void **state) {
  (void)state;
  bs_result a, b;
  bs_buf j1 = {0}, j2 = {0};
  sample(&a, 0);
  /* The schedule always, its seed where it is not --seed's. */
  assert_string_equal(a.repro, "backstop run engine-death --ranks 4 --seed 7 "
                               "--schedule pct:3 --schedule-seed 9 --set "
                               "'offload_target=disk x' --fault "
                               "name=copy/fail,prob=0.5");
  assert_string_equal(a.schedule, "pct:3");
  assert_int_equal(a.schedule_seed, 9);
  assert_int_equal(a.nfaults, 2);
  assert_string_equal(a.faults[0], "name=engine/send,rank=3,nth=2");
  /* A run that starts its ranks as processes says so, whether its result
   * comes from those processes or from the parent (a hang). */
  bs_run sc = cfg(4);
  sc.spawn = true;
  bs_result sr;
  assert_int_equal(bs_result_from_run(&sc, &sr), BS_OK);
  assert_non_null(strstr(sr.repro, "name=copy/fail,prob=0.5 --spawn"));
  bs_result_free(&sr);
  bs_buf packed = {0};
  bs_result_pack(&packed, &a);
  assert_int_equal(bs_result_pack_read(packed.s, packed.len, &b), BS_OK);
  bs_buf_free(&packed);
  bs_result_json(&j1, &a, 2);
  bs_result_json(&j2, &b, 2);
  assert_string_equal(j1.s, j2.s);
  assert_int_equal(b.verdict, BS_FAIL);
  assert_string_equal(b.oracles[1].detail, "rank 3 <resident> & more");
  assert_string_equal(b.outcomes[0].message, "line\nbreak");
  assert_string_equal(b.outcomes[0].where, "core/sync/bs_engine.c:324");
  assert_true(b.detect_ms > 3.2 && b.detect_ms < 3.3);
  bs_result_free(&a);
  bs_result_free(&b);
  bs_buf_free(&j1);
  bs_buf_free(&j2);
}

/* A packed result cut short, with bytes past its end, or of another
 * build is refused, saying so. */
static void test_result_pack_rejects(void **state) {
  (void)state;
  bs_result a, r;
  bs_buf b = {0};
  sample(&a, 0);
  bs_result_pack(&b, &a);
  const size_t cuts[] = {0, 4, 60, b.len / 2, b.len - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    bs_err_clear();
    assert_int_equal(bs_result_pack_read(b.s, cuts[i], &r), BS_ERR_INVALID);
    assert_non_null(strstr(bs_err()->message, "run result"));
  }
  bs_buf_append(&b, "x", 1);
  bs_err_clear();
  assert_int_equal(bs_result_pack_read(b.s, b.len, &r), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "past its end"));
  b.s[0] ^= 1;
  bs_err_clear();
  assert_int_equal(bs_result_pack_read(b.s, b.len, &r), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "this build"));
  bs_err_clear();
  bs_buf_free(&b);
  bs_result_free(&a);
}

/* Blanks every value of a key ("duration_ms": 41.7 -> "duration_ms": _). */
static void blank(char *s, const char *key) {
  for (char *p = s; (p = strstr(p, key)); p += strlen(key)) {
    char *v = p + strlen(key) + 2; /* past '": ' */
    while (*v == ' ')
      v++;
    char *end = v;
    int depth = 0;
    bool str = false;
    for (; *end; end++) {
      if (str) {
        str = *end != '"' || end[-1] == '\\';
        continue;
      }
      if (*end == '"')
        str = true;
      else if (*end == '[' || *end == '{')
        depth++;
      else if (*end == ']' || *end == '}') {
        if (depth-- == 0)
          break;
        if (depth == 0) {
          end++;
          break;
        }
      } else if (*end == ',' && depth == 0)
        break;
    }
    memmove(v + 1, end, strlen(end) + 1);
    *v = '_';
  }
}

static void report(bs_buf *b, double salt) {
  bs_result r[2];
  sample(&r[0], salt);
  bs_run c = cfg(2);
  assert_int_equal(bs_result_from_run(&c, &r[1]), BS_OK);
  bs_kill k = {.name = "local-hash-raise", .survived = false};
  char *by = strdup("hash-mismatch");
  k.killed_by = &by;
  k.nkilled = 1;
  bs_report_json(b, r, 2, &k, 1);
  free(by);
  bs_result_free(&r[0]);
  bs_result_free(&r[1]);
}

static void test_report_json(void **state) {
  (void)state;
  bs_buf b = {0};
  bs_json j;
  report(&b, 0);
  assert_int_equal(bs_json_parse(b.s, b.len, &j), BS_OK);
  assert_int_equal(bs_json_get_num(&j, "schema", 0), 1);
  assert_string_equal(bs_json_get_str(&j, "version", ""), BS_VERSION);
  const bs_json *runs = bs_json_get(&j, "runs");
  assert_int_equal(runs->n, 2);
  static const char *const keys[] = {
      "scenario",    "ranks",     "backend", "device",        "seed",
      "model",       "cycles",    "faults",  "mutants",       "verdict",
      "duration_ms", "detect_ms", "oracles", "rank_outcomes", "memory",
      "artifacts",   "repro"};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    assert_non_null(bs_json_get(&runs->items[0], keys[i]));
  assert_int_equal(bs_json_get(&runs->items[1], "detect_ms")->type, BS_JNULL);
  const bs_json *sum = bs_json_get(&j, "summary");
  assert_int_equal(bs_json_get_num(sum, "runs", 0), 2);
  assert_int_equal(bs_json_get_num(sum, "pass", 0), 1);
  assert_int_equal(bs_json_get_num(sum, "fail", 0), 1);
  const bs_json *m = bs_json_get(&j, "mutants");
  assert_int_equal(m->n, 1);
  assert_false(bs_json_get_bool(&m->items[0], "survived", true));
  bs_json_free(&j);
  bs_buf_free(&b);
}

static void test_report_deterministic(void **state) {
  (void)state;
  bs_buf a = {0}, b = {0};
  report(&a, 0);
  report(&b, 5);
  assert_string_not_equal(a.s, b.s);
  static const char *const volatile_keys[] = {
      "\"duration_ms\"", "\"detect_ms\"", "\"flight_recorder\"", "\"trace\""};
  for (size_t i = 0; i < 4; i++) {
    blank(a.s, volatile_keys[i]);
    blank(b.s, volatile_keys[i]);
  }
  assert_string_equal(a.s, b.s);
  bs_buf_free(&a);
  bs_buf_free(&b);
}

/* Well-formed enough for JUnit readers: balanced elements, quoted
 * attributes, no raw '<' or '&' in text. */
static void check_xml(const char *s) {
  const char *stack[16];
  size_t len[16], depth = 0;
  if (strncmp(s, "<?xml", 5) == 0)
    s = strstr(s, "?>") + 2;
  while (*s) {
    if (*s == '&') {
      assert_true(strncmp(s, "&lt;", 4) == 0 || strncmp(s, "&gt;", 4) == 0 ||
                  strncmp(s, "&amp;", 5) == 0 || strncmp(s, "&quot;", 6) == 0 ||
                  strncmp(s, "&#10;", 5) == 0);
      s++;
      continue;
    }
    if (*s != '<') {
      s++;
      continue;
    }
    bool close = s[1] == '/';
    const char *name = s + 1 + close;
    size_t n = strcspn(name, " />");
    const char *p = name + n;
    bool quoted = false;
    for (; *p && (quoted || *p != '>'); p++) {
      if (*p == '"')
        quoted = !quoted;
      assert_true(*p != '<');
    }
    assert_int_equal(*p, '>');
    bool selfclose = p[-1] == '/';
    if (close) {
      assert_true(depth > 0);
      depth--;
      assert_int_equal(len[depth], n);
      assert_memory_equal(stack[depth], name, n);
    } else if (!selfclose) {
      assert_true(depth < 16);
      stack[depth] = name;
      len[depth++] = n;
    }
    s = p + 1;
  }
  assert_int_equal(depth, 0);
}

static void test_junit(void **state) {
  (void)state;
  bs_result r[2];
  bs_buf b = {0};
  sample(&r[0], 0);
  bs_run c = cfg(2);
  assert_int_equal(bs_result_from_run(&c, &r[1]), BS_OK);
  r[1].verdict = BS_HANG;
  bs_result_set_note(&r[1], "killed past the 60 s deadline");
  bs_report_junit(&b, r, 2);
  check_xml(b.s);
  /* The failed oracle is a failure; the hang an error. */
  assert_non_null(strstr(b.s, "tests=\"2\" failures=\"1\" errors=\"1\""));
  assert_non_null(strstr(b.s, "<failure type=\"fail\""));
  assert_non_null(strstr(b.s, "<error type=\"hang\""));
  assert_non_null(strstr(b.s, "message=\"failed oracles: pause-safety\""));
  assert_non_null(strstr(b.s, "rank 3 &lt;resident&gt; &amp; more"));
  assert_non_null(strstr(b.s, "hang: killed past the 60 s deadline"));
  bs_result_free(&r[0]);
  bs_result_free(&r[1]);
  bs_buf_free(&b);
}

static void test_table(void **state) {
  (void)state;
  bs_result r;
  sample(&r, 0);
  char *text = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&text, &n);
  bs_report_table_line(f, &r, 0);
  bs_report_table_summary(f, &r, 1);
  fclose(f);
  assert_non_null(strstr(text, "FAIL  engine-death"));
  assert_non_null(strstr(text, "FAIL pause-safety     rank 3"));
  assert_null(strstr(text, "ok   agreement"));
  assert_non_null(strstr(text, "repro: backstop run engine-death"));
  assert_non_null(strstr(text, "1 runs: 0 passed, 1 failed, 0 vacuous"));
  /* the location only with -v */
  assert_null(strstr(text, "bs_engine.c"));
  free(text);
  f = open_memstream(&text, &n);
  bs_report_table_line(f, &r, 1);
  fclose(f);
  assert_non_null(strstr(text, "ok   agreement"));
  assert_non_null(strstr(text, "      rank 3 engine-dead in update_weights "
                               "at core/sync/bs_engine.c:324\n"));
  free(text);
  /* -q: the failed oracle and the repro, nothing of what passed */
  f = open_memstream(&text, &n);
  bs_report_table_line(f, &r, -1);
  fclose(f);
  assert_non_null(strstr(text, "FAIL pause-safety     rank 3"));
  assert_non_null(strstr(text, "repro: backstop run engine-death"));
  assert_null(strstr(text, "ok   agreement"));
  assert_null(strstr(text, "artifacts:"));
  free(text);
  bs_result_free(&r);
}

static void test_trace_and_verdict(void **state) {
  (void)state;
  bs_record rec;
  assert_int_equal(bs_record_init(&rec, 2, 1), BS_OK);
  for (int k = 0; k < 2; k++) {
    rec.rank[k].returned = true;
    bs_record_begin(&rec, k, "init", 0);
    bs_record_end(&rec, k, BS_OK);
    bs_record_begin(&rec, k, "update_weights", 0);
    bs_err_fail(BS_ERR_ENGINE_DEAD, "w", "engine of rank 1 died");
    bs_record_end(&rec, k, BS_ERR_ENGINE_DEAD);
    bs_err_clear();
    rec.rank[k].ev[1].pinned_peak[BS_PIN_BACKUPER] = 100 * (size_t)(k + 1);
    rec.rank[k].flight = strdup(
        "{\"entries\":[{\"collective_seq_id\":1,\"profiling_name\":"
        "\"nccl:all_reduce\",\"state\":\"completed\",\"time_created_ns\":1,"
        "\"time_discovered_completed_ns\":2000000}]}");
  }
  rec.budget = (bs_budget){BS_BUDGET_NORMAL, 1000, 0, 1};
  bs_buf b = {0};
  bs_json j;
  bs_trace_json(&b, &rec, "engine-death");
  assert_int_equal(bs_json_parse(b.s, b.len, &j), BS_OK);
  const bs_json *ev = bs_json_get(&j, "traceEvents");
  assert_non_null(ev);
  size_t tracks = 0, colls = 0;
  for (size_t i = 0; i < ev->n; i++) {
    const char *name = bs_json_get_str(&ev->items[i], "name", "");
    tracks += strcmp(name, "thread_name") == 0;
    colls += strncmp(name, "nccl:all_reduce #1", 18) == 0;
  }
  assert_int_equal(tracks, 2);
  assert_int_equal(colls, 2);
  bs_json_free(&j);
  bs_buf_free(&b);

  bs_result res;
  bs_run c = cfg(2);
  assert_int_equal(bs_result_from_run(&c, &res), BS_OK);
  assert_int_equal(bs_judge(&c, &rec, expect_ok, &res), BS_OK);
  /* engine-dead with no fired fault: "explained" fails the run */
  assert_int_equal(res.verdict, BS_FAIL);
  char failed[256];
  bs_result_failed_oracles(&res, failed, sizeof failed);
  assert_string_equal(failed, "explained");
  assert_int_equal(res.noutcomes, 2);
  assert_string_equal(res.outcomes[1].status, "engine-dead");
  assert_string_equal(res.outcomes[1].phase, "update_weights");
  assert_non_null(strstr(res.outcomes[1].message, "engine of rank 1 died"));
  assert_non_null(strstr(res.outcomes[1].where, "tests/test_report.c:"));
  assert_string_equal(res.outcomes[0].where, res.outcomes[1].where);
  assert_int_equal(res.pinned_max, 200);
  bs_result_free(&res);
  bs_record_free(&rec);
}

/* A clean record of two ranks, one phase each. */
static void clean_record(bs_record *rec) {
  assert_int_equal(bs_record_init(rec, 2, 1), BS_OK);
  for (int k = 0; k < 2; k++) {
    rec->rank[k].returned = true;
    bs_record_begin(rec, k, "init", 0);
    bs_record_end(rec, k, BS_OK);
  }
}

/* Every invariant holds but an armed fault never fired: vacuous, saying
 * how often its point was reached there; once it fires, a pass listing
 * the firing. */
static void test_vacuous_verdict(void **state) {
  (void)state;
  static const char *const one[] = {"name=engine/send,rank=1,cycle=0,nth=3"};
  bs_record rec;
  clean_record(&rec);
  bs_fault_reach reach = {BS_FP_ENGINE_SEND, 1, 0, 2};
  rec.reaches = malloc(sizeof reach);
  rec.reaches[0] = reach;
  rec.nreaches = 1;
  bs_result res;
  decide_armed(one[0], &rec, &res);
  assert_int_equal(res.verdict, BS_VACUOUS);
  assert_string_equal(res.note, "name=engine/send,rank=1,cycle=0,nth=3 never "
                                "fired: its point was reached 2 times on rank "
                                "1 in cycle 0");
  assert_int_equal(res.narmed, 1);
  assert_int_equal(res.armed[0].reached, 2);
  bs_summary sum = bs_report_summarize(&res, 1);
  assert_int_equal(sum.vacuous, 1);
  assert_int_equal(sum.pass + sum.fail, 0);
  bs_result_free(&res);

  rec.fired = calloc(2, sizeof *rec.fired);
  rec.fired[0] = (bs_fault_fired){BS_FP_ENGINE_SEND, 1, 0, 3, 0, 0};
  rec.nfired = 1;
  decide_armed(one[0], &rec, &res);
  assert_int_equal(res.verdict, BS_PASS);
  assert_null(res.note);
  assert_int_equal(res.armed[0].nfired, 1);
  assert_int_equal(res.armed[0].fired[0].nth, 3);
  /* What goes through the pipe comes back whole. */
  bs_buf j1 = {0}, j2 = {0};
  bs_result back;
  bs_buf packed = {0};
  bs_result_pack(&packed, &res);
  assert_int_equal(bs_result_pack_read(packed.s, packed.len, &back), BS_OK);
  bs_buf_free(&packed);
  bs_result_json(&j1, &res, 0);
  bs_result_json(&j2, &back, 0);
  assert_string_equal(j1.s, j2.s);
  assert_non_null(strstr(j1.s, "\"armed\": [{\"spec\": \"name=engine/send,"
                               "rank=1,cycle=0,nth=3\", \"external\": false, "
                               "\"fired\": [{\"point\": \"engine/send\", "
                               "\"rank\": 1, \"cycle\": 0, \"nth\": 3}], "
                               "\"fired_total\": 1, \"reached\": 2}]"));
  bs_buf_free(&j1);
  bs_buf_free(&j2);
  bs_result_free(&back);
  bs_result_free(&res);
  bs_record_free(&rec);
}

/* Many firings: the ones listed are the first by (cycle, rank, point, nth)
 * whatever order the ranks logged them in; fired_total counts them all. */
static void test_armed_firings_in_order(void **state) {
  (void)state;
  enum { N = 40 };
  static const char *const one[] = {"name=comm/stall,persistent"};
  bs_record rec;
  clean_record(&rec);
  rec.fired = calloc(N, sizeof *rec.fired);
  for (int i = 0; i < N; i++) {
    int k = (i * 17) % N; /* a shuffle of 0..N-1 */
    rec.fired[i] =
        (bs_fault_fired){BS_FP_COMM_STALL, k % 2, k / 20, k % 20 + 1, 0, 0};
  }
  rec.nfired = N;
  bs_result res;
  decide_armed(one[0], &rec, &res);
  const bs_armed *a = &res.armed[0];
  assert_int_equal(a->fired_total, N);
  assert_int_equal(a->nfired, BS_ARMED_FIRED_MAX);
  for (size_t i = 0; i < a->nfired; i++) {
    assert_int_equal(a->fired[i].cycle, 0);
    assert_int_equal(a->fired[i].rank, (int)(i / 10));
    assert_int_equal(a->fired[i].nth, (long)(2 * (i % 10) + 1 + i / 10));
  }
  bs_result_free(&res);
  bs_record_free(&rec);
}

static void test_json_reader(void **state) {
  (void)state;
  static const char *const good[] = {"0", "-1.5e3", "\"\\u00e9\\ud83d\\ude00\"",
                                     "[1, [2, {}], {\"a\": null}]", " true "};
  static const char *const bad[] = {"01",
                                    "[1,]",
                                    "{\"a\" 1}",
                                    "\"\\x\"",
                                    "tru",
                                    "[1] 2",
                                    "\"a\nb\"",
                                    "1.",
                                    "{\"a\":1,}",
                                    "{\"a\":1,\"b\":}",
                                    "{\"a\":{\"c\":[}}"};
  bs_json j;
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    assert_int_equal(bs_json_parse(good[i], strlen(good[i]), &j), BS_OK);
    bs_json_free(&j);
  }
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    bs_err_clear();
    assert_int_equal(bs_json_parse(bad[i], strlen(bad[i]), &j), BS_ERR_INVALID);
    assert_non_null(strstr(bs_err()->message, "json: line 1"));
  }
  /* An object's keys, however written, each found by its decoded name. */
  static const char obj[] = "{\"a\": 1, \"\": 2, \"b\\\"c\": {\"a\": 3, "
                            "\"d\\u00e9\": [4]}, \"e\": {}}";
  assert_int_equal(bs_json_parse(obj, strlen(obj), &j), BS_OK);
  assert_int_equal(bs_json_get_int(&j, "a", -1), 1);
  assert_int_equal(bs_json_get_int(&j, "", -1), 2);
  const bs_json *bc = bs_json_get(&j, "b\"c");
  assert_non_null(bc);
  assert_int_equal(bs_json_get_int(bc, "a", -1), 3);
  assert_non_null(bs_json_get(bc, "d\u00e9"));
  assert_int_equal(bs_json_get(&j, "e")->n, 0);
  assert_null(bs_json_get(&j, "f"));
  bs_json_free(&j);
  char deep[200];
  memset(deep, '[', sizeof deep);
  bs_err_clear();
  assert_int_equal(bs_json_parse(deep, sizeof deep, &j), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "nesting"));
  bs_err_clear();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_result_round_trip),
      cmocka_unit_test(test_result_pack_rejects),
      cmocka_unit_test(test_report_json),
      cmocka_unit_test(test_report_deterministic),
      cmocka_unit_test(test_junit),
      cmocka_unit_test(test_table),
      cmocka_unit_test(test_trace_and_verdict),
      cmocka_unit_test(test_vacuous_verdict),
      cmocka_unit_test(test_armed_firings_in_order),
      cmocka_unit_test(test_json_reader),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
