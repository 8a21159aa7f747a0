/* What a world needs (plan/bs_footprint.h), held to what worlds take: a
 * host world's estimate less its engines' bounds the largest resident set
 * of its processes (the world's, its ranks' fibers), and by less than 1.5
 * times, so that a world that fits is not refused (it once said 3.3 times
 * what 16,384 ranks of steady-maincast take). Not under a sanitizer: its
 * shadow memory is no world's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sys/resource.h>

#include "bs_test_cli.h"
#include "bs_test_faults.h"
#include "bs_test_sanitized.h"
#include "catalog/bs_scenario.h"
#include "model/bs_model.h"
#include "model/bs_model_parse.h"
#include "plan/bs_footprint.h"
#include "plan/bs_plan.h"

static int setup(void **state) {
  (void)state;
  return cli_setup("bs_footprint_");
}

static int teardown(void **state) {
  (void)state;
  return cli_teardown();
}

/* The largest resident set (KiB) of the processes of "backstop ARGS",
 * read in a process of its own: RUSAGE_CHILDREN keeps the largest of every
 * child its process ever waited for. -1 where the run failed. */
static long peak_kib(const char *args) {
  int fd[2];
  long kib = -1;
  assert_int_equal(pipe(fd), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct rusage ru;
    long v = backstop(args) == 0 && getrusage(RUSAGE_CHILDREN, &ru) == 0
                 ? ru.ru_maxrss
                 : -1;
    _exit(write(fd[1], &v, sizeof v) == sizeof v ? 0 : 1);
  }
  close(fd[1]);
  assert_int_equal(read(fd[0], &kib, sizeof kib), sizeof kib);
  close(fd[0]);
  assert_int_equal(waitpid(pid, NULL, 0), pid);
  return kib;
}

/* The plan's estimate of a scheduled world of the scenario, less what its
 * engine processes hold. */
static double estimate(const char *name, int ranks) {
  const bs_scenario *s = bs_scenario_find(name);
  bs_config cfg;
  bs_model_spec m = {0};
  bs_footprint fp;
  assert_non_null(s);
  assert_int_equal(bs_plan_config(s, NULL, 0, (bs_mutants){0}, &cfg), BS_OK);
  assert_int_equal(
      bs_model_preset(s->model ? s->model : BS_SCENARIO_MODEL, 1.0, &m), BS_OK);
  assert_int_equal(
      bs_footprint_of(&m, &cfg, ranks, BS_FOOTPRINT_SCHEDULED, &fp), BS_OK);
  bs_model_free(&m);
  return fp.bytes - fp.engines;
}

static void bounds(const char *name, int ranks) {
  char args[128];
  if (BS_TEST_SANITIZED) {
    fprintf(stderr, "skipped: a sanitizer's shadow memory is no world's\n");
    skip();
  }
  snprintf(args, sizeof args, "run %s --ranks %d -q", name, ranks);
  double need = estimate(name, ranks);
  double took = 1024.0 * (double)peak_kib(args);
  fprintf(stderr, "%s at %d ranks: estimated %.1f MiB, took %.1f MiB\n", name,
          ranks, need / (1 << 20), took / (1 << 20));
  if (took <= 0)
    fail_msg("%s at %d ranks: the run failed", name, ranks);
  if (need < took || need > 1.5 * took)
    fail_msg("%s at %d ranks: estimated %.1f MiB, took %.1f MiB", name, ranks,
             need / (1 << 20), took / (1 << 20));
}

/* The tiny model under the Normal backuper, past the hasher's 1,024 (its
 * ranks diverge by a fault). */
static void test_tiny_normal(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  bounds("rank-divergence", 1024);
}

/* The moe model under MainCast (its extras' copy only). */
static void test_moe_maincast(void **state) {
  (void)state;
  bounds("steady-maincast", 512);
}

/* The dense model under the Normal backuper (a copy of every tensor). */
static void test_dense_normal(void **state) {
  (void)state;
  bounds("steady-normal", 512);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tiny_normal),
      cmocka_unit_test(test_moe_maincast),
      cmocka_unit_test(test_dense_normal),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
