/* libFuzzer target for the dump readers (BS_FUZZ=ON, clang):
 *   build/fuzz/tests/fuzz_pickle tests/data/fr/desync4 -max_total_time=60
 * Any input is read or refused (BS_ERR_INVALID, a "pickle: " message);
 * what reads is written back and must read back the same, and goes through
 * the dump reader and analyze's report without harm. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dumps/bs_dumps.h"
#include "dumps/bs_dumps_report.h"
#include "dumps/bs_pickle.h"

static int same(const bs_json *a, const bs_json *b) {
  if (a->type != b->type || a->n != b->n || a->integral != b->integral)
    return 0;
  if (a->type == BS_JSTR)
    return strcmp(a->str, b->str) == 0;
  if (a->type == BS_JNUM)
    return a->integral ? a->i == b->i
                       : memcmp(&a->num, &b->num, sizeof a->num) == 0;
  if (a->type == BS_JBOOL)
    return a->b == b->b;
  for (size_t i = 0; i < a->n; i++)
    if ((a->keys && strcmp(a->keys[i], b->keys[i]) != 0) ||
        !same(&a->items[i], &b->items[i]))
      return 0;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
  bs_json v, w;
  bs_buf b = {0};
  if (bs_pickle_read(data, n, &v) != BS_OK) {
    if (bs_err()->code != BS_ERR_INVALID ||
        strncmp(bs_err()->message, "pickle: ", 8) != 0)
      abort();
    bs_err_clear();
    return 0;
  }
  bs_pickle_write(&b, &v, NULL);
  if (b.oom || bs_pickle_read(b.s, b.len, &w) != BS_OK || !same(&v, &w))
    abort();
  bs_json_free(&w);
  bs_dumps d = {0};
  bs_dumps_verdict r;
  if (bs_dumps_add(&d, &v, "rank_0") == BS_OK &&
      bs_dumps_finish(&d, NULL) == BS_OK && bs_dumps_report(&d, &r) == BS_OK)
    bs_dumps_report_verdict_free(&r);
  bs_err_clear();
  bs_dumps_free(&d);
  bs_json_free(&v);
  bs_buf_free(&b);
  return 0;
}
