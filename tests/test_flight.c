/* The flight recorder: the ring, the states, and dumps that parse as JSON
 * and say which collective each rank finished and which one it is stuck in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/bs_comm.h"
#include "comm/front/bs_flight.h"

/* A small recursive-descent JSON checker: returns the end of the value at
 * p, NULL when the text is not JSON. */
static const char *json_value(const char *p, int depth);

static const char *ws(const char *p) {
  while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
    p++;
  return p;
}

static const char *json_string(const char *p) {
  if (*p++ != '"')
    return NULL;
  while (*p && *p != '"') {
    if ((unsigned char)*p < 0x20)
      return NULL;
    if (*p == '\\') {
      p++;
      if (*p == 'u') {
        for (int i = 1; i <= 4; i++)
          if (!isxdigit((unsigned char)p[i]))
            return NULL;
        p += 4;
      } else if (!strchr("\"\\/bfnrt", *p) || !*p) {
        return NULL;
      }
    }
    p++;
  }
  return *p == '"' ? p + 1 : NULL;
}

static const char *json_number(const char *p) {
  const char *s = p;
  if (*p == '-')
    p++;
  if (!isdigit((unsigned char)*p))
    return NULL;
  if (*p == '0' && isdigit((unsigned char)p[1]))
    return NULL;
  while (isdigit((unsigned char)*p))
    p++;
  if (*p == '.') {
    if (!isdigit((unsigned char)*++p))
      return NULL;
    while (isdigit((unsigned char)*p))
      p++;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-')
      p++;
    if (!isdigit((unsigned char)*p))
      return NULL;
    while (isdigit((unsigned char)*p))
      p++;
  }
  return p > s ? p : NULL;
}

/* Members of an object (key: value) or elements of an array. */
static const char *json_items(const char *p, char close, bool keyed,
                              int depth) {
  p = ws(p + 1);
  if (*p == close)
    return p + 1;
  for (;;) {
    if (keyed) {
      if (!(p = json_string(ws(p))) || *(p = ws(p)) != ':')
        return NULL;
      p++;
    }
    if (!(p = json_value(p, depth + 1)))
      return NULL;
    p = ws(p);
    if (*p == close)
      return p + 1;
    if (*p++ != ',')
      return NULL;
  }
}

static const char *json_value(const char *p, int depth) {
  if (depth > 64)
    return NULL;
  p = ws(p);
  switch (*p) {
  case '{':
    return json_items(p, '}', true, depth);
  case '[':
    return json_items(p, ']', false, depth);
  case '"':
    return json_string(p);
  case 't':
    return strncmp(p, "true", 4) == 0 ? p + 4 : NULL;
  case 'f':
    return strncmp(p, "false", 5) == 0 ? p + 5 : NULL;
  case 'n':
    return strncmp(p, "null", 4) == 0 ? p + 4 : NULL;
  default:
    return json_number(p);
  }
}

static bool is_json(const char *text) {
  const char *end = text ? json_value(text, 0) : NULL;
  return end && *ws(end) == '\0';
}

static int occurrences(const char *text, const char *part) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, part)); p += strlen(part))
    n++;
  return n;
}

static void test_validator_rejects(void **state) {
  (void)state;
  assert_true(is_json("{\"a\":[1,-2.5e3,\"x\\n\",true,null,{}]}"));
  assert_false(is_json("{\"a\":1,}"));
  assert_false(is_json("{\"a\" 1}"));
  assert_false(is_json("[1 2]"));
  assert_false(is_json("\"open"));
  assert_false(is_json("{} x"));
  assert_false(is_json("01"));
}

static bs_flight_entry gather_entry(uint64_t seq) {
  return (bs_flight_entry){.collective_seq_id = seq,
                           .profiling_name = "nccl:all_gather",
                           .has_data = true,
                           .input_numel = 4,
                           .output_numel = 16,
                           .input_dtype = BS_BF16,
                           .output_dtype = BS_BF16};
}

static void test_ring_keeps_the_last(void **state) {
  (void)state;
  bs_flight *f = NULL;
  assert_int_equal(bs_flight_create(3, &f), BS_OK);
  for (uint64_t s = 1; s <= 5; s++) {
    bs_flight_entry e = gather_entry(s);
    assert_int_equal(bs_flight_record(f, &e), s - 1);
  }
  assert_int_equal(bs_flight_count(f), 3);
  bs_flight_entry e;
  assert_true(bs_flight_get(f, 0, &e));
  assert_int_equal(e.record_id, 2);
  assert_int_equal(e.collective_seq_id, 3);
  assert_int_equal(e.state, BS_FLIGHT_SCHEDULED);
  assert_true(e.time_created_ns > 0);
  assert_false(bs_flight_get(f, 3, &e));
  bs_flight_advance(f, 0, BS_FLIGHT_COMPLETED); /* overwritten: no effect */
  bs_flight_advance(f, 4, BS_FLIGHT_STARTED);
  assert_true(bs_flight_get(f, 2, &e));
  assert_int_equal(e.record_id, 4);
  assert_int_equal(e.state, BS_FLIGHT_STARTED);
  assert_true(e.time_discovered_started_ns >= e.time_created_ns);
  assert_int_equal(e.time_discovered_completed_ns, 0);
  assert_true(bs_flight_get(f, 0, &e));
  assert_int_equal(e.state, BS_FLIGHT_SCHEDULED);
  bs_flight_destroy(f);
  assert_int_equal(bs_flight_create(0, &f), BS_ERR_INVALID);
  bs_err_clear();
}

/* A ring larger than its first allocation grows as entries come: every
 * entry keeps its place and state across the growth, and once full it
 * wraps as one allocated whole would. */
static void test_ring_grows_then_wraps(void **state) {
  (void)state;
  enum { SLOTS = 100, N = 250 };
  bs_flight *f = NULL;
  assert_int_equal(bs_flight_create(SLOTS, &f), BS_OK);
  for (uint64_t s = 1; s <= N; s++) {
    bs_flight_entry e = gather_entry(s);
    assert_int_equal(bs_flight_record(f, &e), s - 1);
    bs_flight_advance(f, s - 1, BS_FLIGHT_STARTED);
    if (s == 40) { /* past the first allocation, not yet full */
      assert_int_equal(bs_flight_count(f), 40);
      assert_true(bs_flight_get(f, 0, &e));
      assert_int_equal(e.record_id, 0);
      assert_int_equal(e.state, BS_FLIGHT_STARTED);
    }
  }
  assert_int_equal(bs_flight_count(f), SLOTS);
  for (size_t i = 0; i < SLOTS; i++) {
    bs_flight_entry e;
    assert_true(bs_flight_get(f, i, &e));
    assert_int_equal(e.record_id, N - SLOTS + i);
    assert_int_equal(e.collective_seq_id, N - SLOTS + i + 1);
    assert_int_equal(e.state, BS_FLIGHT_STARTED);
  }
  bs_flight_destroy(f);
}

/* Each entry keeps the phase it was recorded in and its stand-in name
 * (held interned): a later phase is the later entries' only, and a phase
 * longer than an entry's room is cut there, as it always was. */
static void test_phase_and_name_kept(void **state) {
  (void)state;
  bs_flight *f = NULL;
  char longer[64];
  memset(longer, 'p', sizeof longer - 1);
  longer[sizeof longer - 1] = '\0';
  assert_int_equal(bs_flight_create(8, &f), BS_OK);
  bs_flight_entry e = gather_entry(1);
  snprintf(e.name, sizeof e.name, "%s", "my_gather");
  bs_err_set_phase("update_weights");
  bs_flight_record(f, &e);
  bs_flight_record(f, &e);
  bs_err_set_phase("wake_up");
  e.name[0] = '\0';
  bs_flight_record(f, &e);
  bs_err_set_phase(longer);
  bs_flight_record(f, &e);
  const char *phase[] = {"update_weights", "update_weights", "wake_up"};
  const char *name[] = {"my_gather", "my_gather", ""};
  for (size_t i = 0; i < 3; i++) {
    assert_true(bs_flight_get(f, i, &e));
    assert_string_equal(e.phase, phase[i]);
    assert_string_equal(e.name, name[i]);
  }
  assert_true(bs_flight_get(f, 3, &e));
  assert_int_equal(strlen(e.phase), sizeof e.phase - 1);
  assert_int_equal(strncmp(e.phase, longer, sizeof e.phase - 1), 0);
  bs_err_set_phase("init");
  bs_flight_destroy(f);
}

static void test_json_fields(void **state) {
  (void)state;
  bs_flight *f = NULL;
  assert_int_equal(bs_flight_create(8, &f), BS_OK);
  bs_flight_entry e = gather_entry(1);
  bs_flight_advance(f, bs_flight_record(f, &e), BS_FLIGHT_COMPLETED);
  e = (bs_flight_entry){.collective_seq_id = 2,
                        .profiling_name = "nccl:barrier",
                        .label = "odd \"label\"\n"};
  bs_flight_advance(f, bs_flight_record(f, &e), BS_FLIGHT_STARTED);
  bs_flight_meta m = {.rank = 3, .size = 4, .backend = "sim", .timeout_ms = 9};
  char *j = bs_flight_json(f, &m);
  assert_true(is_json(j));
  assert_non_null(strstr(j, "\"rank\":3,\"comm_size\":4"));
  assert_non_null(strstr(j, "\"profiling_name\":\"nccl:all_gather\""));
  assert_non_null(strstr(j, "\"input_sizes\":[[4]],\"input_dtypes\":"
                            "[\"BFloat16\"],\"output_sizes\":[[16]]"));
  assert_non_null(strstr(j, "\"state\":\"completed\""));
  assert_non_null(strstr(j, "\"state\":\"started\""));
  assert_non_null(strstr(j, "\"time_discovered_completed_ns\":null"));
  assert_non_null(strstr(j, "\"collective_seq_id\":2"));
  assert_non_null(strstr(j, "\"timeout_ms\":9"));
  free(j);
  bs_flight_destroy(f);
}

/* Two collectives, then rank 3 leaves and the others issue a third. */
static bs_status third_alone(bs_comm *c, void *arg) {
  (void)arg;
  float v[4] = {0}, all[16];
  bs_status st = bs_comm_all_gather(c, v, all, 1, BS_F32);
  if (st == BS_OK)
    st = bs_comm_all_reduce(c, v, v, 4, BS_F32, BS_SUM);
  if (st != BS_OK || bs_comm_rank(c) == 3)
    return st;
  return bs_comm_reduce_scatter(c, all, v, 4, BS_F32, BS_SUM);
}

static bs_world *stuck_world(bool fingerprint, const char *dir) {
  bs_world_opts o = {.size = 4, .fingerprint = fingerprint, .flight_dir = dir};
  bs_world *w = NULL;
  assert_int_equal(bs_world_create(&o, &w), BS_OK);
  assert_int_equal(bs_world_run(w, NULL, third_alone, NULL), BS_ERR_RANK_DEAD);
  bs_err_clear();
  return w;
}

static void test_dump_states(void **state) {
  (void)state;
  bs_world *w = stuck_world(false, NULL);
  for (int r = 0; r < 4; r++) {
    char *j = bs_world_flight_json(w, r);
    assert_true(is_json(j));
    assert_int_equal(occurrences(j, "\"state\":\"completed\""), 2);
    assert_int_equal(occurrences(j, "\"state\":\"started\""), r < 3 ? 1 : 0);
    assert_int_equal(occurrences(j, "nccl:reduce_scatter"), r < 3 ? 1 : 0);
    free(j);
  }
  assert_null(bs_world_flight_json(w, 4));
  bs_world_destroy(w);
  /* With fingerprints the stuck one never got past them: scheduled. */
  w = stuck_world(true, NULL);
  char *j = bs_world_flight_json(w, 0);
  assert_true(is_json(j));
  assert_int_equal(occurrences(j, "\"state\":\"scheduled\""), 1);
  assert_int_equal(occurrences(j, "\"state\":\"completed\""), 2);
  free(j);
  bs_world_destroy(w);
}

/* A dump held in memory marks the default group's members instead of
 * listing every rank; expanded, it is the dump byte for byte. One that is
 * not marked is copied. */
static void test_marked_dump_expands(void **state) {
  (void)state;
  bs_world *w = stuck_world(false, NULL);
  for (int r = 0; r < 4; r++) {
    char *whole = bs_world_flight_json(w, r);
    char *marked = bs_world_flight_json_marked(w, r);
    char *back = bs_world_flight_expand(marked),
         *copy = bs_world_flight_expand(whole);
    assert_true(is_json(marked));
    assert_non_null(
        strstr(whole, "\"desc\":\"default_pg\",\"ranks\":\"[0, 1, 2, 3]\""));
    assert_null(strstr(marked, "[0, 1, 2, 3]"));
    assert_non_null(strstr(marked, "\"ranks\":\"[world]\""));
    assert_string_equal(back, whole);
    assert_string_equal(copy, whole);
    free(whole);
    free(marked);
    free(back);
    free(copy);
  }
  assert_null(bs_world_flight_expand(NULL));
  bs_world_destroy(w);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = calloc(1, 1 << 16);
  size_t n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
  (void)n;
  fclose(f);
  return buf;
}

static void test_dump_files_on_failure(void **state) {
  (void)state;
  char dir[] = "/tmp/bs_flight_XXXXXX";
  assert_non_null(mkdtemp(dir));
  bs_world *w = stuck_world(false, dir);
  for (int r = 0; r < 4; r++) {
    char path[128];
    snprintf(path, sizeof path, "%s/flight_rank%d.json", dir, r);
    char *text = slurp(path);
    assert_true(is_json(text));
    assert_non_null(strstr(text, "\"entries\":[{"));
    free(text);
    unlink(path);
  }
  rmdir(dir);
  bs_world_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_validator_rejects),
      cmocka_unit_test(test_ring_keeps_the_last),
      cmocka_unit_test(test_ring_grows_then_wraps),
      cmocka_unit_test(test_phase_and_name_kept),
      cmocka_unit_test(test_json_fields),
      cmocka_unit_test(test_dump_states),
      cmocka_unit_test(test_marked_dump_expands),
      cmocka_unit_test(test_dump_files_on_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
