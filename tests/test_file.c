/* base's files: whole-file publishing and the bounded waits for files
 * other processes publish. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bs_err.h"
#include "bs_file.h"

static char dir[] = "/tmp/bs_test_file_XXXXXX";

static void path_in(const char *name, char *out, size_t n) {
  snprintf(out, n, "%s/%s", dir, name);
}

static void test_publish_and_read(void **state) {
  (void)state;
  char path[128], *data = NULL;
  size_t n = 0;
  path_in("a", path, sizeof path);
  assert_int_equal(bs_file_publish(path, "hello", 5), BS_OK);
  assert_int_equal(bs_file_read(path, &data, &n), BS_OK);
  assert_int_equal(n, 5);
  assert_string_equal(data, "hello");
  free(data);
  assert_int_equal(bs_file_publish("/nonexistent/dir/x", "", 0),
                   BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "cannot write /nonexistent/dir/x"));
  bs_err_clear();
}

/* Every path there: at once. One missing: the bound, naming it. */
static void test_wait_all(void **state) {
  (void)state;
  char a[128], b[128];
  path_in("w.0", a, sizeof a);
  path_in("w.1", b, sizeof b);
  const char *both[] = {a, b};
  assert_int_equal(bs_file_publish(a, "", 0), BS_OK);
  assert_int_equal(bs_file_wait_all(both, 2, 20), BS_ERR_TIMEOUT);
  assert_non_null(strstr(bs_err()->message, "w.1 after 20 ms"));
  bs_err_clear();
  assert_int_equal(bs_file_publish(b, "", 0), BS_OK);
  assert_int_equal(bs_file_wait_all(both, 2, 0), BS_OK);
  assert_int_equal(bs_file_wait_all(both, 0, 0), BS_OK); /* none: at once */
}

static bool always(const void *arg) {
  (void)arg;
  return true;
}

/* A waiter whose peers failed stops at once, saying what it waited for. */
static void test_wait_stopped(void **state) {
  (void)state;
  char path[128], *data = NULL;
  size_t n = 0;
  path_in("never", path, sizeof path);
  assert_int_equal(bs_file_wait_or(path, 60000, always, NULL, &data, &n),
                   BS_ERR_ABORTED);
  assert_non_null(strstr(bs_err()->message, "stopped waiting for"));
  assert_null(data);
  bs_err_clear();
}

static int setup(void **state) {
  (void)state;
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return bs_file_remove_tree(dir) == BS_OK ? 0 : -1;
}

/* The job's folder is in memory where /dev/shm is (else /tmp), fresh each
 * time; a prefix too long for the room is refused, not cut. */
static void test_scratch(void **state) {
  (void)state;
  char a[64], b[64], tiny[16];
  struct stat sb;
  const char *base =
      access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm/" : "/tmp/";
  assert_int_equal(bs_file_scratch("bs-test", a, sizeof a), BS_OK);
  assert_int_equal(bs_file_scratch("bs-test", b, sizeof b), BS_OK);
  assert_int_equal(strncmp(a, base, strlen(base)), 0);
  assert_string_not_equal(a, b);
  assert_int_equal(stat(a, &sb), 0);
  assert_true(S_ISDIR(sb.st_mode));
  assert_int_equal(bs_file_remove_tree(a), BS_OK);
  assert_int_equal(bs_file_remove_tree(b), BS_OK);
  assert_int_equal(bs_file_scratch("bs-test", tiny, sizeof tiny),
                   BS_ERR_INTERNAL);
  bs_err_clear();
}

/* path's folder dated two hours back. */
static void age(const char *path) {
  struct timespec t[2];
  clock_gettime(CLOCK_REALTIME, &t[0]);
  t[0].tv_sec -= 7200;
  t[1] = t[0];
  assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* A scratch folder made by a forked process that ends without removing
 * it (as a SIGKILL leaves it): its path. */
static void orphan(char *out, size_t n) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    char p[64] = "";
    if (bs_file_scratch("bs-reap", p, sizeof p) == BS_OK)
      (void)!write(fds[1], p, sizeof p);
    _exit(0);
  }
  assert_true(pid > 0);
  assert_int_equal(read(fds[0], out, n), (ssize_t)n);
  waitpid(pid, NULL, 0);
  close(fds[0]);
  close(fds[1]);
}

/* The folder a killed process left, an hour untouched, goes when the next
 * of its prefix is made; one a live process holds stays however old, and
 * so does a fresh one nobody holds. */
static void test_scratch_reaps_orphans(void **state) {
  (void)state;
  char dead[64], live[64], fresh[64], next[64];
  struct stat sb;
  orphan(dead, sizeof dead);
  assert_int_equal(stat(dead, &sb), 0);
  age(dead);
  assert_int_equal(bs_file_scratch("bs-reap", live, sizeof live), BS_OK);
  age(live);
  snprintf(fresh, sizeof fresh, "%.*s.XXXXXX", (int)(strrchr(live, '.') - live),
           live);
  assert_non_null(mkdtemp(fresh));
  assert_int_equal(bs_file_scratch("bs-reap", next, sizeof next), BS_OK);
  assert_int_equal(stat(dead, &sb), -1);
  assert_int_equal(stat(live, &sb), 0);
  assert_int_equal(stat(fresh, &sb), 0);
  assert_int_equal(bs_file_remove_tree(live), BS_OK);
  assert_int_equal(bs_file_remove_tree(next), BS_OK);
  assert_int_equal(rmdir(fresh), 0);
}

/* A folder is writable though a killed process left a probe there under
 * this process's name (a pid comes round again); the probe leaves none. */
static void test_probe_dir_stale_probe(void **state) {
  (void)state;
  char stale[128], sub[128], cmd[300];
  snprintf(stale, sizeof stale, "%s/probes/.backstop-probe.%ld", dir,
           (long)getpid());
  path_in("probes", sub, sizeof sub);
  assert_int_equal(mkdir(sub, 0755), 0);
  assert_int_equal(mkdir(stale, 0755), 0);
  assert_int_equal(bs_file_probe_dir(sub), BS_OK);
  snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 1", sub);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(rmdir(stale), 0);
  assert_int_equal(rmdir(sub), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_publish_and_read),
      cmocka_unit_test(test_wait_all),
      cmocka_unit_test(test_wait_stopped),
      cmocka_unit_test(test_scratch),
      cmocka_unit_test(test_scratch_reaps_orphans),
      cmocka_unit_test(test_probe_dir_stale_probe),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
