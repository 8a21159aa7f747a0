/* A cancelled CI job (docs/cli.md): SIGINT, SIGTERM or SIGHUP to backstop end
 * every process it started (the run's child, its engine processes, the
 * ranks' processes of --spawn), the run cut short is reported as
 * interrupted in the table and the JSON, and the exit status is 128 + the
 * signal; a backstop killed by SIGKILL leaves no process behind either.
 * The processes of the tree are found by a marker in their environment,
 * which every descendant inherits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bs_test_cli.h"
#include "bs_test_faults.h"

/* Bounds of the waits (not timings: each ends as soon as it can). */
enum { START_WAIT_MS = 60000, EXIT_WAIT_MS = 20000, GONE_WAIT_MS = 3000 };

static char mark[64];

static int setup(void **state) {
  (void)state;
  (void)backstop; /* these tests start it themselves, to signal it */
  return cli_setup("bs_sig_");
}

static int teardown(void **state) {
  (void)state;
  return cli_teardown();
}

static void nap_ms(int ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Whether /proc/<pid>/<file> holds needle (NUL-separated fields). */
static bool proc_has(const char *pid, const char *file, const char *needle) {
  char path[300], buf[16384];
  snprintf(path, sizeof path, "/proc/%s/%s", pid, file);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  for (ssize_t i = 0; i < n; i++)
    if (buf[i] == '\0')
      buf[i] = '\n';
  buf[n > 0 ? n : 0] = '\0';
  return strstr(buf, needle) != NULL;
}

/* Running processes carrying the marker (a zombie's environment reads
 * empty); engines: those that are engine processes. */
static int marked(int *engines) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  char env[96];
  int n = 0;
  snprintf(env, sizeof env, "BS_TEST_TREE=%s", mark);
  *engines = 0;
  assert_non_null(d);
  while ((e = readdir(d)))
    if (e->d_name[0] >= '1' && e->d_name[0] <= '9' &&
        proc_has(e->d_name, "environ", env)) {
      n++;
      *engines += proc_has(e->d_name, "cmdline", "\nengine\n");
    }
  closedir(d);
  return n;
}

/* backstop CMD steady-normal, stalled: rank 0 sleeps a minute before a
 * collective (the watchdog and the deadline further still), in dir,
 * marked, a progress line for every run that ends (BS_PROGRESS_S=0). On
 * real threads: a scheduled world would sleep its minute out on its
 * virtual clock before any signal could come. */
static pid_t start_stalled_cmd(const char *command, const char *extra) {
  char cmd[1024];
  BS_TEST_NEEDS_FAULTS();
  snprintf(mark, sizeof mark, "%ld-%ld", (long)getpid(), (long)time(NULL));
  snprintf(cmd, sizeof cmd,
           "cd %s && exec env BS_TEST_TREE=%s BS_PROGRESS_S=0 '%s' %s "
           "steady-normal --ranks 2 --schedule threads "
           "--fault name=comm/stall,rank=0,nth=3,failinfo=60000 "
           "--timeout-ms 100000 --deadline-s 100 --json r.json %s "
           ">out.txt 2>err.txt",
           dir, mark, getenv("BACKSTOP_BIN"), command, extra);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  /* Under way once an engine process runs (the run's child made it). */
  int engines = 0;
  for (int ms = 0; ms < START_WAIT_MS && (marked(&engines), engines < 2);
       ms += 10)
    nap_ms(10);
  assert_true(engines >= 2);
  return pid;
}

static pid_t start_stalled(const char *extra) {
  return start_stalled_cmd("run", extra);
}

/* Its wait status, within the bound. */
static int wait_bounded(pid_t pid) {
  int ws = 0;
  for (int ms = 0; ms < EXIT_WAIT_MS; ms += 5) {
    if (waitpid(pid, &ws, WNOHANG) == pid)
      return ws;
    nap_ms(5);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &ws, 0);
  fail_msg("backstop did not exit within %d ms of the signal", EXIT_WAIT_MS);
  return ws;
}

/* No process of the tree left, waiting at most GONE_WAIT_MS for it. */
static void tree_gone(void) {
  int engines, n = marked(&engines);
  for (int ms = 0; n > 0 && ms < GONE_WAIT_MS; ms += 10) {
    nap_ms(10);
    n = marked(&engines);
  }
  if (n)
    fail_msg("%d process(es) of backstop's tree (%d engines) still there "
             "%d ms after it ended",
             n, engines, GONE_WAIT_MS);
}

static void interrupted_by(int sig, const char *extra) {
  pid_t pid = start_stalled(extra);
  assert_int_equal(kill(pid, sig), 0);
  int ws = wait_bounded(pid);
  tree_gone();
  assert_true(WIFEXITED(ws));
  assert_int_equal(WEXITSTATUS(ws), 128 + sig);
  char *out = slurp("out.txt"), *err = slurp("err.txt"),
       *json = slurp("r.json");
  assert_non_null(strstr(out, "INTERRUPTED steady-normal"));
  assert_non_null(strstr(out, "1 interrupted"));
  assert_non_null(strstr(err, "every process it started has ended"));
  assert_non_null(strstr(json, "\"verdict\": \"interrupted\""));
  assert_non_null(strstr(json, "\"interrupted\": 1"));
  free(out);
  free(err);
  free(json);
}

static void test_sigint_ends_the_tree(void **state) {
  (void)state;
  interrupted_by(SIGINT, "");
}

static void test_sigterm_ends_spawned_ranks(void **state) {
  (void)state;
  interrupted_by(SIGTERM, "--spawn");
}

/* The rank pool's workers (BS_RANK_POOL=1, bs_pool.h) are backstop's
 * children, not the run's: they end too. */
static void test_sigterm_ends_the_pool(void **state) {
  (void)state;
  setenv("BS_RANK_POOL", "1", 1);
  interrupted_by(SIGTERM, "--spawn -j 1");
  unsetenv("BS_RANK_POOL");
  char *err = slurp("err.txt");
  assert_non_null(strstr(err, "backstop: rank pool: 2 worker processes"));
  free(err);
}

static void test_sighup_ends_the_tree(void **state) {
  (void)state;
  interrupted_by(SIGHUP, "-j 1");
}

/* backstop CMD ARGS in dir, marked, signalled once a run of phase `after`
 * ended (its progress line, every run: BS_PROGRESS_S=0). */
static void campaign_interrupted(const char *cmd_args, const char *after) {
  char cmd[1024];
  BS_TEST_NEEDS_FAULTS();
  snprintf(mark, sizeof mark, "%ld-%ld", (long)getpid(), (long)time(NULL));
  snprintf(cmd, sizeof cmd,
           "cd %s && exec env BS_TEST_TREE=%s BS_PROGRESS_S=0 '%s' %s "
           "-j 1 --json r.json --junit r.xml >out.txt 2>err.txt",
           dir, mark, getenv("BACKSTOP_BIN"), cmd_args);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  char *err = NULL;
  for (int ms = 0; ms < START_WAIT_MS; ms += 10) {
    free(err);
    err = slurp("err.txt");
    if (strstr(err, after))
      break;
    nap_ms(10);
  }
  assert_non_null(strstr(err, after));
  free(err);
  assert_int_equal(kill(pid, SIGINT), 0);
  int ws = wait_bounded(pid);
  tree_gone();
  assert_true(WIFEXITED(ws));
  assert_int_equal(WEXITSTATUS(ws), 130);
}

/* Every run stalled 300 ms before a collective (the counting pass too,
 * which ends). */
/* A stall of 300 ms in real time (real threads: a scheduled world's would
 * cost none), so that the signal finds the campaign under way. */
#define STALLED                                                                \
  " --fault name=comm/stall,rank=0,nth=3,failinfo=300 --timeout-ms 100000 "    \
  "--deadline-s 100 --schedule threads"

/* The number after key in text; -1 when key is not there. */
static long count_after(const char *text, const char *key) {
  const char *at = strstr(text, key);
  return at ? strtol(at + strlen(key), NULL, 10) : -1;
}

/* A sweep cut short: its summary, its JSON and its JUnit count the runs
 * cut short alike, as interrupted (not as vacuous). */
static void test_sweep_counts_interrupted(void **state) {
  (void)state;
  campaign_interrupted(
      "sweep steady-normal --ranks 2 --point engine/send" STALLED, "sweep: 1/");
  char *out = slurp("out.txt"), *json = slurp("r.json"), *xml = slurp("r.xml");
  long n = count_after(out, "0 fail, ");
  assert_true(n >= 1);
  assert_non_null(strstr(out, " interrupted\n"));
  assert_int_equal(count_after(json, "\"interrupted\": "), n);
  assert_int_equal(count_after(xml, "errors=\""), n);
  assert_int_equal(count_after(out, "0 known, "), 0);
  free(out);
  free(json);
  free(xml);
}

/* A sweep cut short in its counting pass: the JSON lists that pass as the
 * run the summary counts interrupted, and no progress line counts it done.
 */
static void test_sweep_counting_interrupted(void **state) {
  (void)state;
  pid_t pid = start_stalled_cmd("sweep", "--point engine/send -j 1");
  assert_int_equal(kill(pid, SIGINT), 0);
  int ws = wait_bounded(pid);
  tree_gone();
  assert_true(WIFEXITED(ws));
  assert_int_equal(WEXITSTATUS(ws), 130);
  char *out = slurp("out.txt"), *err = slurp("err.txt"),
       *json = slurp("r.json");
  assert_non_null(strstr(out, "1 interrupted"));
  assert_non_null(strstr(json, "\"verdict\": \"interrupted\""));
  assert_non_null(strstr(json, "\"summary\": {\"runs\": 1, "));
  assert_int_equal(count_after(json, "\"interrupted\": "), 1);
  assert_non_null(strstr(err, "sweep: counting: 0/1 runs"));
  assert_null(strstr(err, "sweep: counting: 1/1 runs"));
  free(out);
  free(err);
  free(json);
}

/* A mutant whose runs were cut short is neither killed nor survived. */
static void test_mutants_count_interrupted(void **state) {
  (void)state;
  campaign_interrupted("mutants steady-normal --ranks 2" STALLED,
                       "mutants: 1/");
  char *out = slurp("out.txt"), *json = slurp("r.json"), *xml = slurp("r.xml");
  assert_null(strstr(out, "SURVIVED"));
  assert_non_null(strstr(out, "INTERRUPTED (a signal cut its runs short)"));
  assert_non_null(strstr(json, "\"interrupted\": true"));
  assert_non_null(strstr(xml, "<error type=\"interrupted\""));
  free(out);
  free(json);
  free(xml);
}

/* A fuzz campaign cut short: its summary and its JSON count the runs cut
 * short as interrupted, and none of them as drawn-and-not-fired. */
static void test_fuzz_counts_interrupted(void **state) {
  (void)state;
  campaign_interrupted("fuzz steady-normal --seed 3 --runs 300 --max-ranks 1 "
                       "--schedule threads",
                       "fuzz: 1/");
  char *out = slurp("out.txt"), *json = slurp("r.json");
  const char *fuzz = strstr(json, "\"fuzz\": ");
  long n = count_after(out, " crash, ");
  assert_true(n >= 1);
  assert_non_null(fuzz);
  assert_int_equal(count_after(fuzz, "\"interrupted\": "), n);
  free(out);
  free(json);
}

/* Threads of the running processes carrying the marker. */
static int marked_threads(void) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  char env[96], path[300], buf[4096];
  int n = 0;
  snprintf(env, sizeof env, "BS_TEST_TREE=%s", mark);
  assert_non_null(d);
  while ((e = readdir(d))) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9' ||
        !proc_has(e->d_name, "environ", env))
      continue;
    snprintf(path, sizeof path, "/proc/%s/status", e->d_name);
    FILE *f = fopen(path, "r");
    while (f && fgets(buf, sizeof buf, f))
      if (strncmp(buf, "Threads:", 8) == 0)
        n += atoi(buf + 8);
    if (f)
      fclose(f);
  }
  closedir(d);
  return n;
}

/* backstop replay of a real hang (tests/data/fr/nccl/skip: rank 3 skips
 * its all_reduce) under a watchdog of 100 s, signalled once its ranks
 * run: it ends at once, and every process it started with it. On real
 * threads (BS_SCHEDULE=threads): a scheduled world waits its 100 s out on
 * a virtual clock before any signal could come. */
static void replay_interrupted(int sig, const char *extra) {
  char cmd[1024];
  snprintf(mark, sizeof mark, "%ld-%ld", (long)getpid(), (long)time(NULL));
  snprintf(cmd, sizeof cmd,
           "cd %s && exec env BS_TEST_TREE=%s BS_SCHEDULE=threads '%s' "
           "replay %s/fr/nccl/skip "
           "--timeout-ms 100000 %s >out.txt 2>err.txt",
           dir, mark, getenv("BACKSTOP_BIN"), BS_TEST_DATA, extra);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
    _exit(127);
  }
  /* Under way once its 4 ranks' threads (or processes) are. */
  int threads = 0;
  for (int ms = 0; ms < START_WAIT_MS && (threads = marked_threads()) < 6;
       ms += 10)
    nap_ms(10);
  assert_true(threads >= 6);
  assert_int_equal(kill(pid, sig), 0);
  int ws = wait_bounded(pid);
  tree_gone();
  assert_true(WIFEXITED(ws));
  assert_int_equal(WEXITSTATUS(ws), 128 + sig);
  char *err = slurp("err.txt");
  assert_non_null(strstr(err, "every process it started has ended"));
  free(err);
}

static void test_sigterm_ends_replay(void **state) {
  (void)state;
  replay_interrupted(SIGTERM, "");
}

static void test_sigint_ends_spawned_replay(void **state) {
  (void)state;
  replay_interrupted(SIGINT, "--spawn");
}

/* SIGKILL cannot be caught: the children see their parent die. */
static void test_sigkill_leaves_no_orphan(void **state) {
  (void)state;
  pid_t pid = start_stalled("--spawn");
  assert_int_equal(kill(pid, SIGKILL), 0);
  int ws = wait_bounded(pid);
  assert_true(WIFSIGNALED(ws));
  tree_gone();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sigint_ends_the_tree),
      cmocka_unit_test(test_sigterm_ends_spawned_ranks),
      cmocka_unit_test(test_sigterm_ends_the_pool),
      cmocka_unit_test(test_sighup_ends_the_tree),
      cmocka_unit_test(test_sigkill_leaves_no_orphan),
      cmocka_unit_test(test_sigterm_ends_replay),
      cmocka_unit_test(test_sigint_ends_spawned_replay),
      cmocka_unit_test(test_sweep_counts_interrupted),
      cmocka_unit_test(test_sweep_counting_interrupted),
      cmocka_unit_test(test_mutants_count_interrupted),
      cmocka_unit_test(test_fuzz_counts_interrupted),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
