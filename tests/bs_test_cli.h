/* Runs the backstop binary (BACKSTOP_BIN, set by ctest) from a CMocka test
 * in a temp dir of its own: the exit status, stdout and stderr of each run.
 * Header-only test support; include after cmocka.h. */
#ifndef BS_TEST_CLI_H
#define BS_TEST_CLI_H

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wordexp.h>

static char dir[64];
static char *out_text, *err_text;

/* A file's text ("" when missing); a relative path is inside dir. */
static char *slurp(const char *path) {
  char full[256];
  snprintf(full, sizeof full, "%s%s%s", path[0] == '/' ? "" : dir,
           path[0] == '/' ? "" : "/", path);
  FILE *f = fopen(full, "r");
  if (!f)
    return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = calloc((size_t)n + 1, 1);
  assert_non_null(s);
  assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  return s;
}

/* "backstop ARGS" in dir, its output in out.txt and err.txt there: the
 * wait status. ARGS split into words by wordexp(3), as sh splits them
 * (quotes, variables); -1 where sh must run them: a command substitution,
 * a character wordexp refuses (redirection, ;, |), a comment, or a glob,
 * which sh expands in dir. Without sh where it can: a start of sh is
 * about 1 ms, as much as backstop's own. */
static int cli_exec(const char *args) {
  wordexp_t we;
  char *argv[128];
  if (strpbrk(args, "*?[#") || wordexp(args, &we, WRDE_NOCMD) != 0)
    return -1;
  bool fits = we.we_wordc < sizeof argv / sizeof argv[0] - 1;
  argv[0] = getenv("BACKSTOP_BIN");
  for (size_t i = 0; fits && i <= we.we_wordc; i++)
    argv[i + 1] = we.we_wordv[i];
  fflush(NULL);
  pid_t pid = fits ? fork() : -1;
  if (pid == 0) {
    char out[128], err[128];
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(err, sizeof err, "%s/err.txt", dir);
    if (chdir(dir) != 0 || !freopen(out, "w", stdout) ||
        !freopen(err, "w", stderr))
      _exit(127);
    execv(argv[0], argv);
    _exit(127);
  }
  int ws = -1;
  while (pid > 0 && waitpid(pid, &ws, 0) < 0)
    assert_true(errno == EINTR);
  wordfree(&we);
  return ws;
}

/* Runs "backstop ARGS" in dir after the shell commands pre ("ulimit -n
 * 40 && ", or ""); returns its exit status. */
static int backstop_after(const char *pre, const char *args) {
  char cmd[1024];
  int ws = pre[0] ? -1 : cli_exec(args);
  if (ws == -1) {
    snprintf(cmd, sizeof cmd, "cd %s && %s'%s' %s >out.txt 2>err.txt", dir, pre,
             getenv("BACKSTOP_BIN"), args);
    ws = system(cmd);
  }
  free(out_text);
  free(err_text);
  out_text = slurp("out.txt");
  err_text = slurp("err.txt");
  assert_true(WIFEXITED(ws));
  return WEXITSTATUS(ws);
}

/* Runs "backstop ARGS" in dir; returns its exit status. */
static inline int backstop(const char *args) {
  return backstop_after("", args);
}

/* backstop() on real threads (--schedule threads, after args: the last
 * one given wins): what the parent's real-time deadline does to a run
 * whose ranks wait in real time. */
static inline int backstop_threads(const char *args) {
  char with[900];
  snprintf(with, sizeof with, "%s --schedule threads", args);
  return backstop(with);
}

/* The binary must exist; dir becomes a fresh /tmp/<prefix>XXXXXX. */
static int cli_setup(const char *prefix) {
  const char *bin = getenv("BACKSTOP_BIN");
  if (!bin || access(bin, X_OK) != 0) {
    fprintf(stderr, "BACKSTOP_BIN unset or not executable\n");
    return -1;
  }
  snprintf(dir, sizeof dir, "/tmp/%sXXXXXX", prefix);
  return mkdtemp(dir) ? 0 : -1;
}

/* A run's artifacts folder in art (inside dir) whose name starts with
 * prefix (a run with options gets a mark after its name: bs_artifacts.h),
 * as "art/<name>" in out; "" when there is none. */
static inline void run_folder_in(const char *art, const char *prefix, char *out,
                                 size_t n) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, art);
  DIR *d = opendir(path);
  struct dirent *e;
  out[0] = '\0';
  while (d && (e = readdir(d)))
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
      snprintf(out, n, "%s/%.200s", art, e->d_name);
  if (d)
    closedir(d);
}

/* Blanks the value of every "..._ms" field of a JSON report (the only ones
 * that may differ between two runs of one seed). */
static inline void blank_times(char *s) {
  for (char *p = s; (p = strstr(p, "_ms\": ")); p += 6) {
    char *v = p + 6;
    size_t len = strcspn(v, ",}");
    memmove(v + 1, v + len, strlen(v + len) + 1);
    *v = '_';
  }
}

static int cli_teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  free(out_text);
  free(err_text);
  return system(cmd) == 0 ? 0 : -1;
}

#endif
