/* Runs the backstop binary (BACKSTOP_BIN, set by ctest) from a CMocka test
 * in a temp dir of its own: the exit status, stdout and stderr of each run.
 * Header-only test support; include after cmocka.h. */
#ifndef BS_TEST_CLI_H
#define BS_TEST_CLI_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* Runs "backstop ARGS" in dir after the shell commands pre ("ulimit -n
 * 40 && ", or ""); returns its exit status. */
static int backstop_after(const char *pre, const char *args) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cd %s && %s'%s' %s >out.txt 2>err.txt", dir, pre,
           getenv("BACKSTOP_BIN"), args);
  int ws = system(cmd);
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
