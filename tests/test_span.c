/* Where a run's time goes (bs_span.h): totals per kind, written only when
 * BS_SPANS names a folder, one "name count total_ns" line per kind used;
 * a forked child measures its start from its parent's mark; a run's spans
 * come from every process of its tree (a run with --spawn over the sim). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bs_file.h"
#include "bs_span.h"

static char *read_spans(const char *dir, pid_t pid) {
  char path[256], *data = NULL;
  size_t n = 0;
  snprintf(path, sizeof path, "%s/spans.%d", dir, (int)pid);
  return bs_file_read(path, &data, &n) == BS_OK ? data : NULL;
}

static void test_totals_written_where_asked(void **state) {
  (void)state;
  char dir[] = "/tmp/bs_span.XXXXXX";
  assert_non_null(mkdtemp(dir));
  assert_int_equal(bs_span_named("wake_up"), BS_SPAN_PH_WAKE);
  assert_int_equal(bs_span_named("no such phase"), BS_SPAN_COUNT);
  bs_span_mark_fork();
  pid_t pid = fork();
  if (pid == 0) {
    bs_span_forked();
    bs_span_add(BS_SPAN_COMM_WAKE, 100, 350);
    bs_span_add(BS_SPAN_COMM_WAKE, 1000, 1050);
    bs_span_add(BS_SPAN_COUNT, 0, 5); /* ignored */
    setenv("BS_SPANS", dir, 1);
    bs_span_flush();
    _exit(0);
  }
  int ws = 0;
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  char *text = read_spans(dir, pid);
  assert_non_null(text);
  assert_non_null(strstr(text, "comm_wake 2 300\n"));
  assert_non_null(strstr(text, "proc_start 1 "));
  assert_null(strstr(text, "cuda_ctx"));
  free(text);
  /* Without BS_SPANS nothing is written. */
  unsetenv("BS_SPANS");
  bs_span_flush();
  assert_null(read_spans(dir, getpid()));
  assert_int_equal(bs_file_remove_tree(dir), BS_OK);
}

/* BS_SPANS=<a fresh folder> backstop ARGS (env before it; it must exit 0
 * when must_pass), then `count` over the folder's spans.* files: the
 * number it prints. */
static int spans_counted(const char *env, const char *args, bool must_pass,
                         const char *count) {
  char dir[] = "/tmp/bs_span.XXXXXX", cmd[1024], line[256];
  const char *bin = getenv("BACKSTOP_BIN");
  assert_non_null(bin);
  assert_non_null(mkdtemp(dir));
  snprintf(cmd, sizeof cmd,
           "%s BS_SPANS=%s %s %s -q >/dev/null 2>&1 %s cat %s/spans.* | %s",
           env, dir, bin, args, must_pass ? "&&" : ";", dir, count);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  assert_non_null(fgets(line, sizeof line, p));
  assert_int_equal(pclose(p), 0);
  assert_int_equal(bs_file_remove_tree(dir), BS_OK);
  return atoi(line);
}

/* Every process of a run's tree writes its own: with --spawn over the sim,
 * each rank's process has its lifecycle and its phases. */
static void test_every_process_of_a_run(void **state) {
  (void)state;
  assert_int_equal(spans_counted("",
                                 "run steady-normal --spawn --ranks 2 "
                                 "--cycles 1",
                                 true, "grep -c '^lifecycle 1 '"),
                   2);
}

/* A pool worker the parent replaces after a failed run (killed as soon
 * as it has said so) keeps the spans of its runs: a mutant's run fails
 * twice, four worker processes are replaced, and the four lifecycles are
 * in the folder. */
static void test_replaced_workers_keep_spans(void **state) {
  (void)state;
  assert_int_equal(
      spans_counted(
          "BS_RANK_POOL=1",
          "run steady-maincast --spawn -j 1 --ranks 2 --cycles 1 "
          "--mutant same-tag-skip --repeat 2",
          false, "awk '$1 == \"lifecycle\" { s += $2 } END { print s + 0 }'"),
      4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_totals_written_where_asked),
      cmocka_unit_test(test_every_process_of_a_run),
      cmocka_unit_test(test_replaced_workers_keep_spans),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
