/* The string pool read into from several threads (bs_strpool_view), and
 * a folder of real dumps read by several readers at once: every view
 * hands out the shared pool's one copy of a string, and the model is the
 * same on every read however the readers ran (they hand their dumps over
 * in file order). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_strpool.h"
#include "dumps/bs_dumps.h"
#include "dumps/bs_dumps_report.h"

#define THREADS 4
#define STRINGS 3000

typedef struct interner {
  bs_strpool *view;
  int seed;
  const char *got[STRINGS];
} interner;

/* Every string, in an order of the thread's own (a stride prime to
 * STRINGS), so that threads meet each new string at different times. */
static void *intern_all(void *arg) {
  static const int stride[THREADS] = {7, 11, 13, 17};
  interner *t = arg;
  char s[32];
  for (int k = 0; k < STRINGS; k++) {
    int i = (k * stride[t->seed] + t->seed) % STRINGS;
    snprintf(s, sizeof s, "op_%d", i);
    t->got[i] = bs_strpool_get(t->view, s);
  }
  return NULL;
}

static void test_views_share_one_copy(void **state) {
  (void)state;
  bs_strpool *shared = bs_strpool_create();
  interner t[THREADS];
  pthread_t th[THREADS];
  assert_non_null(shared);
  for (int k = 0; k < THREADS; k++) {
    t[k] = (interner){.view = bs_strpool_view(shared), .seed = k};
    assert_non_null(t[k].view);
    assert_int_equal(pthread_create(&th[k], NULL, intern_all, &t[k]), 0);
  }
  for (int k = 0; k < THREADS; k++)
    pthread_join(th[k], NULL);
  for (int i = 0; i < STRINGS; i++) {
    char s[32];
    snprintf(s, sizeof s, "op_%d", i);
    const char *own = bs_strpool_get(shared, s);
    assert_string_equal(own, s);
    for (int k = 0; k < THREADS; k++)
      assert_ptr_equal(t[k].got[i], own);
  }
  for (int k = 0; k < THREADS; k++)
    bs_strpool_destroy(t[k].view);
  bs_strpool_destroy(shared);
}

/* The verdict of a folder of PyTorch's own dumps (several groups), read
 * as analyze reads it. */
static char *verdict_of(const char *dir) {
  bs_dumps d;
  bs_dumps_verdict v = {0};
  assert_int_equal(bs_dumps_load(dir, NULL, &d), BS_OK);
  assert_int_equal(bs_dumps_report(&d, &v), BS_OK);
  char *text = strdup(v.text);
  bs_dumps_report_verdict_free(&v);
  bs_dumps_free(&d);
  return text;
}

static void test_folder_reads_alike(void **state) {
  (void)state;
  static const char *const dirs[] = {"nccl/groups", "torch-groups",
                                     "torch-pipeline", "nccl/p2p"};
  for (size_t f = 0; f < sizeof dirs / sizeof dirs[0]; f++) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/fr/%s", BS_TEST_DATA, dirs[f]);
    char *first = verdict_of(dir);
    assert_non_null(strstr(first, "culprit"));
    for (int i = 0; i < 20; i++) {
      char *again = verdict_of(dir);
      assert_string_equal(again, first);
      free(again);
    }
    free(first);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_views_share_one_copy),
      cmocka_unit_test(test_folder_reads_alike),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
