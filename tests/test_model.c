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

#include "model/bs_model.h"
#include "model/bs_model_parse.h"

typedef struct counts {
  size_t n, frozen, expert, expert_bias, fp32, lora, buffer, integer, in_ddp,
      synced;
} counts;

static counts count(const bs_model_spec *m) {
  counts c = {.n = m->n};
  for (size_t i = 0; i < m->n; i++) {
    const bs_tensor_spec *t = &m->t[i];
    c.frozen += !!(t->flags & BS_TF_FROZEN);
    c.expert += !!(t->flags & BS_TF_EXPERT);
    c.expert_bias += !!(t->flags & BS_TF_EXPERT_BIAS);
    c.fp32 += !!(t->flags & BS_TF_FP32);
    c.lora += !!(t->flags & BS_TF_LORA);
    c.buffer += !!(t->flags & BS_TF_BUFFER);
    c.integer += t->dtype == BS_I32 || t->dtype == BS_I64;
    c.in_ddp += bs_tensor_in_ddp(t);
    c.synced += bs_tensor_is_synced(t);
  }
  return c;
}

static size_t total_numel(const bs_model_spec *m) {
  size_t n = 0;
  for (size_t i = 0; i < m->n; i++)
    n += m->t[i].numel;
  return n;
}

static void test_presets_classify(void **state) {
  (void)state;
  static const struct {
    const char *name;
    counts want;
    size_t min_numel, max_numel;
  } cases[] = {
      /* n frozen expert ebias fp32 lora buffer int in_ddp synced */
      {"tiny", {9, 0, 0, 1, 1, 0, 1, 0, 7, 9}, 1000, 9999},
      {"dense", {15, 0, 0, 0, 0, 0, 0, 0, 15, 15}, 10000, 99999},
      {"moe", {30, 0, 14, 2, 1, 0, 2, 0, 27, 30}, 10000, 99999},
      {"frozen", {31, 4, 14, 1, 0, 0, 1, 1, 26, 31}, 10000, 99999},
      {"lora", {25, 15, 0, 0, 0, 10, 0, 0, 10, 25}, 10000, 99999},
  };
  const char *const *names = bs_model_preset_list();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    assert_non_null(names[i]);
    assert_string_equal(names[i], cases[i].name);
    bs_model_spec m;
    bs_err_clear();
    assert_int_equal(bs_model_preset(cases[i].name, 1.0, &m), BS_OK);
    assert_string_equal(m.name, cases[i].name);
    counts c = count(&m);
    assert_memory_equal(&c, &cases[i].want, sizeof c);
    assert_in_range(total_numel(&m), cases[i].min_numel, cases[i].max_numel);
    assert_non_null(strstr(m.t[1].name, "decoder.layers.0."));
    bs_model_free(&m);
    assert_null(m.t);
  }
  assert_null(names[5]);
}

static void test_preset_details(void **state) {
  (void)state;
  bs_model_spec m;
  assert_int_equal(bs_model_preset("frozen", 1.0, &m), BS_OK);
  bool rel = false, tid = false, router = false;
  for (size_t i = 0; i < m.n; i++) {
    const bs_tensor_spec *t = &m.t[i];
    if (strstr(t->name, "rel_proj"))
      rel = t->dtype == BS_BF16 && (t->flags & BS_TF_FROZEN);
    if (strstr(t->name, "tid2eid"))
      tid = t->dtype == BS_I32 && (t->flags & BS_TF_FROZEN) &&
            bs_tensor_is_synced(t) && !bs_tensor_in_ddp(t);
    if (strcmp(t->name, "decoder.layers.0.mlp.router.weight") == 0)
      router = (t->flags & BS_TF_FROZEN) && !bs_tensor_in_ddp(t);
  }
  assert_true(rel && tid && router);
  bs_model_free(&m);

  assert_int_equal(bs_model_preset("tiny", 1.0, &m), BS_OK);
  const bs_tensor_spec *t = &m.t[0];
  assert_string_equal(t->name, "embedding.word_embeddings.weight");
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[0], 61);
  assert_int_equal(t->shape[1], 13);
  assert_int_equal(bs_tensor_bytes(t), 61 * 13 * 2);
  bs_model_free(&m);
}

static void test_scale(void **state) {
  (void)state;
  bs_model_spec a, b, c;
  assert_int_equal(bs_model_preset("dense", 1.0, &a), BS_OK);
  assert_int_equal(bs_model_preset("dense", 3.0, &b), BS_OK);
  assert_int_equal(bs_model_preset("dense", 0.001, &c), BS_OK);
  assert_int_equal(a.n, b.n);
  for (size_t i = 0; i < a.n; i++) {
    assert_int_equal(b.t[i].shape[0], 3 * a.t[i].shape[0]);
    assert_int_equal(c.t[i].shape[0], 1);
    for (int d = 1; d < a.t[i].ndim; d++) {
      assert_int_equal(b.t[i].shape[d], a.t[i].shape[d]);
      assert_int_equal(c.t[i].shape[d], a.t[i].shape[d]);
    }
    assert_int_equal(b.t[i].numel, 3 * a.t[i].numel);
    assert_int_equal(c.t[i].numel * (size_t)a.t[i].shape[0], a.t[i].numel);
  }
  bs_model_free(&a);
  bs_model_free(&b);
  bs_model_free(&c);

  const double bad[] = {0.0, -1.0, NAN, INFINITY};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    bs_err_clear();
    assert_int_equal(bs_model_preset("tiny", bad[i], &a), BS_ERR_INVALID);
    assert_non_null(strstr(bs_err()->message, "expected a finite scale > 0"));
  }
  bs_err_clear();
  assert_int_equal(bs_model_preset("tiny", 1e12, &a), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "at most 2^40 elements"));
}

/* Each malformed spec: the line the error must name, what it must say was
 * expected, and the offending token. */
static const struct {
  const char *text;
  int line;
  const char *expected;
  const char *got;
} bad_specs[] = {
    {"model m\nw bf16 4x4\nw bf16 2\n", 3, "a tensor name not used before",
     "w"},
    {"model m\nw half 4\n", 2, "a dtype (bf16, fp32, int32, int64)", "half"},
    {"model m\nw uint8 4\n", 2, "a dtype", "uint8"},
    {"model m\nw bf16 0x4\n", 2, "a shape of 1 to 4 positive dims", "0x4"},
    {"model m\nw bf16 -4\n", 2, "a shape", "-4"},
    {"model m\nw bf16 4xa\n", 2, "a shape", "4xa"},
    {"model m\nw bf16 4x\n", 2, "a shape", "4x"},
    {"model m\nw bf16 1x2x3x4x5\n", 2, "a shape", "1x2x3x4x5"},
    {"model m\nw bf16 99999999999\n", 2, "a shape", "99999999999"},
    {"model m\nw bf16 4194304x4194304\n", 2, "at most 2^40 elements",
     "4194304x4194304"},
    {"model m\nw bf16 4 shiny\n", 2, "a flag (frozen, expert", "shiny"},
    {"model m\nw bf16 4 frozen frozen\n", 2, "each flag at most once",
     "frozen"},
    {"model m\nw bf16\n", 2, "a shape after the dtype", "end of line"},
    {"model m\nw\n", 2, "a dtype after the name", "end of line"},
    {"model m\nb fp32 4 expert_bias\n", 2, "'buffer' with 'expert_bias'",
     "expert_bias"},
    {"model m\nb fp32 4 buffer expert\n", 2, "no 'expert' on a buffer",
     "expert"},
    {"model m\nb bf16 4 buffer lora\n", 2, "no 'lora' on a buffer", "lora"},
    {"model m\nb bf16 4 buffer frozen\n", 2, "no 'frozen' on a buffer",
     "frozen"},
    {"model m\nb fp32 4 buffer fp32\n", 2, "no 'fp32' flag on a buffer",
     "fp32"},
    {"model m\nw bf16 4 fp32\n", 2, "dtype fp32 with flag 'fp32'", "bf16"},
    {"model m\nw int32 4 fp32\n", 2, "dtype fp32 with flag 'fp32'", "int32"},
    {"model m\nw int32 4\n", 2, "flag 'frozen' on an integer param", "int32"},
    {"model m\nw bf16 4 lora frozen\n", 2, "no 'frozen' on a lora adapter",
     "frozen"},
    {"model m\nw fp32 4 lora\n", 2, "dtype bf16 for a lora adapter", "fp32"},
    {"model m\nw$ bf16 4\n", 2, "a tensor name of letters", "w$"},
    {"model m\n# only a comment\n", 3, "at least one tensor", "end of file"},
    {"", 1, "'model NAME'", "end of file"},
    {"w bf16 4\n", 1, "'model NAME' before the first tensor", "w"},
    {"model m\nmodel n\n", 2, "one 'model' line", "model"},
    {"model a b\n", 1, "end of line after the model name", "b"},
    {"model\n", 1, "a model name after 'model'", "end of line"},
    {"# c\n\nmodel m\n\n  w bf16 4 # trailing\nw bf16 5\n", 6,
     "a tensor name not used before", "w"},
    {"model m\nw bf16 1 a b c d e f g h i j k\n", 2,
     "end of line (too many fields)", "j"},
};

static void test_malformed(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad_specs / sizeof bad_specs[0]; i++) {
    bs_model_spec m = {0};
    char want[160];
    bs_err_clear();
    bs_status st = bs_model_parse(bad_specs[i].text, "t.spec", 1.0, &m);
    if (st != BS_ERR_INVALID)
      fail_msg("spec %zu accepted: %s", i, bad_specs[i].text);
    assert_null(m.t);
    snprintf(want, sizeof want, "t.spec:%d: expected %s", bad_specs[i].line,
             bad_specs[i].expected);
    if (strncmp(bs_err()->message, want, strlen(want)) != 0)
      fail_msg("spec %zu: message '%s', want prefix '%s'", i, bs_err()->message,
               want);
    snprintf(want, sizeof want, ", got '%s'", bad_specs[i].got);
    if (!strstr(bs_err()->message, want))
      fail_msg("spec %zu: message '%s' lacks '%s'", i, bs_err()->message, want);
  }
  /* A name too long for the record. */
  char text[256] = "model m\n";
  memset(text + 8, 'a', 120);
  strcpy(text + 128, " bf16 4\n");
  bs_model_spec m;
  bs_err_clear();
  assert_int_equal(bs_model_parse(text, "t.spec", 1.0, &m), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "t.spec:2: expected a tensor"));
}

static void test_good_spec(void **state) {
  (void)state;
  const char *text = "# header\nmodel good\n"
                     "a bf16 3x5x7x2\n"
                     "\tb fp32 9\t# an fp32 param without the flag\n"
                     "c int64 4 frozen\n"
                     "d fp32 2 buffer\n"
                     "e bf16 6 expert frozen\n";
  bs_model_spec m;
  bs_err_clear();
  assert_int_equal(bs_model_parse(text, "g.spec", 1.0, &m), BS_OK);
  assert_string_equal(m.name, "good");
  assert_int_equal(m.n, 5);
  assert_int_equal(m.t[0].ndim, 4);
  assert_int_equal(m.t[0].numel, 210);
  assert_true(m.t[1].flags & BS_TF_FP32); /* implied by dtype */
  assert_false(bs_tensor_in_ddp(&m.t[1]));
  assert_int_equal(bs_tensor_bytes(&m.t[2]), 32);
  assert_false(bs_tensor_is_param(&m.t[3]));
  assert_false(bs_tensor_is_synced(&m.t[3])); /* a plain buffer */
  assert_true(bs_tensor_is_synced(&m.t[4]));
  assert_false(bs_tensor_in_ddp(&m.t[4]));
  bs_model_free(&m);
}

static void test_load(void **state) {
  (void)state;
  char path[] = "/tmp/bs_test_model_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  const char text[] = "model file_model\nw bf16 10x3\nx bf16 4 expert\n";
  assert_int_equal(write(fd, text, sizeof text - 1), sizeof text - 1);
  close(fd);
  bs_model_spec m;
  bs_err_clear();
  assert_int_equal(bs_model_load(path, 2.0, &m), BS_OK);
  assert_string_equal(m.name, "file_model");
  assert_int_equal(m.n, 2);
  assert_int_equal(m.t[0].numel, 60);
  bs_model_free(&m);

  /* The file name is the one errors name. */
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("model f\nw bf16 4\nw bf16 4\n", f);
  fclose(f);
  bs_err_clear();
  assert_int_equal(bs_model_load(path, 1.0, &m), BS_ERR_INVALID);
  char want[128];
  snprintf(want, sizeof want, "%s:3: expected", path);
  assert_non_null(strstr(bs_err()->message, want));
  unlink(path);

  bs_err_clear();
  assert_int_equal(bs_model_load(path, 1.0, &m), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, path));
  assert_non_null(strstr(bs_err()->message, "readable model file"));

  bs_err_clear();
  assert_int_equal(bs_model_load("/tmp", 1.0, &m), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "/tmp"));

  bs_err_clear();
  assert_int_equal(bs_model_load("moe", 1.0, &m), BS_OK);
  assert_string_equal(m.name, "moe");
  bs_model_free(&m);

  bs_err_clear();
  assert_int_equal(bs_model_preset("huge", 1.0, &m), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "got 'huge'"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_presets_classify),
      cmocka_unit_test(test_preset_details),
      cmocka_unit_test(test_scale),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_good_spec),
      cmocka_unit_test(test_load),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
