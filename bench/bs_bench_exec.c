#include "bs_bench_exec.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int bs_bench_exec(char *const argv[], char *const env[], bs_buf *out,
                  struct rusage *ru) {
  int fds[2] = {-1, -1};
  if (out && pipe(fds) != 0)
    return -1;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int to = out ? fds[1] : open("/dev/null", O_WRONLY);
    dup2(to, STDOUT_FILENO);
    if (out)
      close(fds[0]);
    for (size_t i = 0; env && env[i]; i++)
      putenv(env[i]);
    execvp(argv[0], argv);
    _exit(127);
  }
  if (out) {
    close(fds[1]);
    char chunk[4096];
    ssize_t n;
    while (pid > 0 && (n = read(fds[0], chunk, sizeof chunk)) > 0)
      bs_buf_append(out, chunk, (size_t)n);
    close(fds[0]);
  }
  int ws = 0;
  struct rusage own;
  if (pid < 0 || wait4(pid, &ws, 0, ru ? ru : &own) != pid)
    return -1;
  return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

const char *bs_bench_exec_self(void) {
  static char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0)
    return "backstop";
  path[n] = '\0';
  return path;
}

const char *bs_bench_exec_failed_oracle(const bs_json *run) {
  static char why[400];
  const bs_json *os = bs_json_get(run, "oracles");
  snprintf(why, sizeof why, "%s", bs_json_get_str(run, "note", "no detail"));
  for (size_t i = 0; os && i < os->n; i++)
    if (!bs_json_get_bool(&os->items[i], "ok", true)) {
      snprintf(why, sizeof why, "%s: %s",
               bs_json_get_str(&os->items[i], "name", "?"),
               bs_json_get_str(&os->items[i], "detail", ""));
      break;
    }
  return why;
}
