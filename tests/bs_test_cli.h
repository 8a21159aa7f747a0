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

/* args split into words into argv (at most max - 1, NULL after them) as
 * sh would split them where it has nothing to do but split: blanks part
 * words, '...' and "..." quote. false where sh would do more (expand,
 * redirect, glob, escape): sh must run those. buf holds the words. */
static bool cli_words(const char *args, char *buf, char **argv, int max) {
  int n = 0;
  for (const char *p = args; *p;) {
    if (*p == ' ') {
      p++;
      continue;
    }
    if (n == max - 1)
      return false;
    argv[n++] = buf;
    for (; *p && *p != ' '; p++) {
      char q = *p == '\'' || *p == '"' ? *p : 0;
      if (!q && strchr("$`\\*?[;&|<>(){}~#\t\n", *p))
        return false;
      if (!q) {
        *buf++ = *p;
        continue;
      }
      const char *end = strchr(p + 1, q);
      if (!end || (q == '"' && strcspn(p + 1, "$`\\") < (size_t)(end - p - 1)))
        return false;
      memcpy(buf, p + 1, (size_t)(end - p - 1));
      buf += end - p - 1;
      p = end;
    }
    *buf++ = '\0';
  }
  argv[n] = NULL;
  return true;
}

/* "backstop ARGS" in dir, its output in out.txt and err.txt there: the
 * wait status; -1 where sh must run args (cli_words). Without sh where it
 * can: a start of sh is about 1 ms, as much as backstop's own. */
static int cli_exec(const char *args) {
  char buf[1024], *argv[128];
  if (strlen(args) >= sizeof buf || !cli_words(args, buf, argv + 1, 127))
    return -1;
  argv[0] = getenv("BACKSTOP_BIN");
  fflush(NULL);
  pid_t pid = fork();
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
  int ws = 0;
  assert_true(pid > 0);
  while (waitpid(pid, &ws, 0) < 0)
    assert_true(errno == EINTR);
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
