/* The pickle reader and writer: PyTorch's own dumps read as their JSON
 * conversion says, what the writer writes read back the same, anything
 * outside the dumps' subset refused naming its opcode and offset, and a
 * deterministic mutation run over the real dumps (truncations, flips,
 * insertions, splices) that only ever reads or refuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_file.h"
#include "dumps/bs_dumps.h"
#include "dumps/bs_pickle.h"

static const char *const tuples[] = {"process_group", NULL};

static bool same(const bs_json *a, const bs_json *b) {
  if (a->type != b->type || a->n != b->n)
    return false;
  switch (a->type) {
  case BS_JNULL:
    return true;
  case BS_JBOOL:
    return a->b == b->b;
  case BS_JNUM:
    return a->integral == b->integral &&
           (a->integral ? a->i == b->i : a->num == b->num);
  case BS_JSTR:
    return strcmp(a->str, b->str) == 0;
  default:
    for (size_t i = 0; i < a->n; i++)
      if ((a->keys && strcmp(a->keys[i], b->keys[i]) != 0) ||
          !same(&a->items[i], &b->items[i]))
        return false;
    return true;
  }
}

static char *data_file(const char *name, size_t *n) {
  char path[512], *data = NULL;
  snprintf(path, sizeof path, "%s/fr/%s", BS_TEST_DATA, name);
  assert_int_equal(bs_file_read(path, &data, n), BS_OK);
  return data;
}

/* PyTorch 2.11's pickle holds what its JSON conversion holds. */
static void test_reads_torch_dumps(void **state) {
  (void)state;
  static const char *const files[][2] = {
      {"desync2", "rank_0"}, {"desync4", "rank_0"}, {"desync4", "rank_3"}};
  for (size_t f = 0; f < 3; f++) {
    char name[64], jname[64];
    size_t n, jn;
    snprintf(name, sizeof name, "%s/%s", files[f][0], files[f][1]);
    snprintf(jname, sizeof jname, "%s-json/%s.json", files[f][0], files[f][1]);
    char *pk = data_file(name, &n);
    char *js = data_file(jname, &jn);
    bs_json a, b;
    assert_int_equal(bs_pickle_read(pk, n, &a), BS_OK);
    assert_int_equal(bs_json_parse(js, jn, &b), BS_OK);
    assert_true(same(&a, &b));
    assert_string_equal(bs_json_get_str(&a, "version", ""), "2.10");
    bs_json_free(&a);
    bs_json_free(&b);
    free(pk);
    free(js);
  }
}

/* What the writer writes reads back the same, tuple and all. */
static void test_write_read(void **state) {
  (void)state;
  static const char text[] =
      "{\"version\":\"2.10\",\"n\":[0,255,256,65535,65536,-1,-129,2147483647,"
      "-2147483648,2147483648,1796129696264716495,-9223372036854775807],"
      "\"f\":[0.5,-1e300],\"t\":true,\"x\":false,\"z\":null,\"s\":\"h\\u00e9"
      "\",\"e\":{},\"l\":[],\"process_group\":[\"0\",\"default_pg\"]}";
  bs_json a, b;
  bs_buf out = {0};
  assert_int_equal(bs_json_parse(text, strlen(text), &a), BS_OK);
  bs_pickle_write(&out, &a, tuples);
  assert_false(out.oom);
  /* PROTO 2 first, STOP last, and the pair as TUPLE2. */
  assert_int_equal((unsigned char)out.s[0], 0x80);
  assert_int_equal(out.s[1], 2);
  assert_int_equal(out.s[out.len - 1], '.');
  assert_non_null(memchr(out.s, 0x86, out.len));
  assert_int_equal(bs_pickle_read(out.s, out.len, &b), BS_OK);
  assert_true(same(&a, &b));
  bs_json_free(&a);
  bs_json_free(&b);
  bs_buf_free(&out);
}

/* A Backstop dump as PyTorch's pickle: its nccl:comm_init entries, which
 * torchfrtrace refuses, stay out; the rest, tuple and all, goes in. */
static void test_dump_pickle(void **state) {
  (void)state;
  static const char dump[] =
      "{\"version\":\"2.10\",\"entries\":[{\"profiling_name\":"
      "\"nccl:comm_init\",\"collective_seq_id\":1},{\"profiling_name\":"
      "\"nccl:all_reduce\",\"collective_seq_id\":2,\"process_group\":[\"0\","
      "\"default_pg\"]}]}";
  bs_buf b = {0};
  bs_json v;
  assert_int_equal(bs_dumps_pickle(dump, &b), BS_OK);
  assert_int_equal(bs_pickle_read(b.s, b.len, &v), BS_OK);
  const bs_json *es = bs_json_get(&v, "entries");
  assert_int_equal(es->n, 1);
  assert_string_equal(bs_json_get_str(&es->items[0], "profiling_name", ""),
                      "nccl:all_reduce");
  assert_non_null(memchr(b.s, 0x86, b.len)); /* process_group: TUPLE2 */
  bs_json_free(&v);
  bs_buf_free(&b);
  assert_int_equal(bs_dumps_pickle("{", &b), BS_ERR_INVALID);
  bs_err_clear();
  bs_buf_free(&b);
}

/* Python's own opcodes for these values, memo and frames included:
 * pickle.dumps({'a': [1, 'a'], 'b': ('a',)}, protocol=4). */
static void test_reads_python_protocol_4(void **state) {
  (void)state;
  static const unsigned char p4[] = {
      0x80, 0x04, 0x95, 0x19, 0,   0,    0,   0,    0,    0,    0,   '}',
      0x94, '(',  0x8c, 1,    'a', 0x94, ']', 0x94, '(',  'K',  1,   'h',
      1,    'e',  0x8c, 1,    'b', 0x94, 'h', 1,    0x85, 0x94, 'u', '.'};
  bs_json v;
  assert_int_equal(bs_pickle_read(p4, sizeof p4, &v), BS_OK);
  const bs_json *a = bs_json_get(&v, "a"), *b = bs_json_get(&v, "b");
  assert_non_null(a);
  assert_int_equal(a->n, 2);
  assert_int_equal(a->items[0].i, 1);
  assert_string_equal(a->items[1].str, "a");
  assert_non_null(b);
  assert_string_equal(b->items[0].str, "a");
  bs_json_free(&v);
}

static void refused(const void *p, size_t n, const char *what) {
  bs_json v;
  assert_int_equal(bs_pickle_read(p, n, &v), BS_ERR_INVALID);
  if (!strstr(bs_err()->message, what))
    fail_msg("'%s' does not say '%s'", bs_err()->message, what);
  assert_int_equal(v.type, BS_JNULL);
  bs_err_clear();
}

static void test_refuses(void **state) {
  (void)state;
  /* A class: what makes unpickling run code. */
#define REFUSED(lit, what) refused(lit, sizeof lit - 1, what)
  REFUSED("\x80\x02"
          "cos\nsystem\n.",
          "GLOBAL (0x63) at offset 2");
  REFUSED("\x80\x02]q\x00(K\x01"
          "C\x01xe.",
          "SHORT_BINBYTES (0x43) at offset 8");
  REFUSED("\x80\x02]", "no STOP before the end");
  REFUSED("\x80\x02X\x05\x00\x00\x00"
          "ab.",
          "truncated");
  REFUSED("(K\x01l.", "no PROTO first");
  REFUSED("\x80\x01N.", "a protocol other than 2-5");
  REFUSED("\x80\x02N.N", "bytes after it");
  REFUSED("\x80\x02NN.", "exactly one value");
  REFUSED("\x80\x02K\x01"
          "a.",
          "no container under the values");
  REFUSED("\x80\x02}K\x01"
          "a.",
          "not a list");
  REFUSED("\x80\x02h\x00.", "never put");
  REFUSED("\x80\x02Nr\xff\xff\xff\x7f.", "beyond the values read");
  REFUSED("\x80\x02\x8a\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09.",
          "wider than 64 bits");
  REFUSED("\x80\x02X\x01\x00\x00\x00\x00.", "a NUL byte");
  /* A list holding itself: refused, not followed. */
  REFUSED("\x80\x02]q\x00h\x00"
          "a.",
          "or a cycle");
  /* Sharing that doubles at every level. */
  bs_buf b = {0};
  bs_buf_append(&b, "\x80\x02]q\x00", 5);
  for (int i = 0; i < 40; i++) {
    char step[] = {'h', (char)i, (char)0x86, 'q', (char)(i + 1)};
    bs_buf_append(&b, step, sizeof step);
  }
  bs_buf_append(&b, ".", 1);
  refused(b.s, b.len, "counted each time");
  bs_buf_free(&b);
  char deep[200] = "\x80\x02";
  for (int i = 0; i < 70; i++)
    deep[2 + i] = '(';
  refused(deep, 72, "more than 64 nested MARKs");
}

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

/* One mutant of the dump: a truncation, byte flips, an insertion or a
 * spliced copy of another part. */
static size_t mutate(const char *src, size_t n, char *dst, uint64_t *s) {
  memcpy(dst, src, n);
  size_t at = (size_t)(lcg(s) % n), len = n;
  switch (lcg(s) % 4) {
  case 0:
    return at;
  case 1:
    for (int k = 0; k < 1 + (int)(lcg(s) % 4); k++)
      dst[lcg(s) % n] = (char)lcg(s);
    return n;
  case 2:
    memmove(dst + at + 1, dst + at, n - at);
    dst[at] = (char)lcg(s);
    return n + 1;
  default: {
    size_t from = (size_t)(lcg(s) % n), k = (size_t)(lcg(s) % 32);
    k = from + k > n ? n - from : k;
    k = at + k > n ? n - at : k;
    memmove(dst + at, src + from, k);
    return len;
  }
  }
}

/* Every mutant reads or is refused with a pickle: message; and what reads
 * goes through the dump reader without harm, by the path analyze takes
 * (straight into the folder's document, bs_dumps_load.c). */
static void test_mutations(void **state) {
  (void)state;
  static const char *const files[] = {"desync2/rank_0", "desync4/rank_1"};
  uint64_t seed = 15;
  int ok = 0, bad = 0;
  for (size_t f = 0; f < 2; f++) {
    size_t n;
    char *src = data_file(files[f], &n);
    char *dst = malloc(n + 1);
    assert_non_null(dst);
    for (int i = 0; i < 3000; i++) {
      size_t m = mutate(src, n, dst, &seed);
      bs_dumps d = {0};
      bs_dval_doc *doc;
      bs_strpool *pool;
      bs_dval *root;
      assert_int_equal(bs_dumps_doc(&d, &doc, &pool), BS_OK);
      bs_status st = bs_pickle_read_doc(dst, m, pool, doc, &root);
      if (st == BS_OK && bs_dumps_add_doc(&d, root, "rank_1") == BS_OK)
        bs_dumps_finish(&d, NULL);
      bs_dumps_free(&d);
      if (st == BS_OK) {
        bs_err_clear();
        ok++;
        continue;
      }
      assert_int_equal(st, BS_ERR_INVALID);
      assert_memory_equal(bs_err()->message, "pickle: ", 8);
      bs_err_clear();
      bad++;
    }
    free(src);
    free(dst);
  }
  /* Both kinds happen: the run explores, it does not only refuse. */
  assert_true(ok > 100);
  assert_true(bad > 100);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reads_torch_dumps),
      cmocka_unit_test(test_write_read),
      cmocka_unit_test(test_dump_pickle),
      cmocka_unit_test(test_reads_python_protocol_4),
      cmocka_unit_test(test_refuses),
      cmocka_unit_test(test_mutations),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
