/* backstop: the command-line entry point (cli.md). */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bs_bench.h"
#include "bs_cmd.h"
#include "sync/bs_engine.h"

/* Engine processes execute this binary again: its absolute path. */
static const char *self_exe(const char *argv0) {
  static char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0)
    return argv0;
  path[n] = '\0';
  return path;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "backstop: no command given (one of list, faults, "
                    "explain, run, sweep, fuzz, mutants, bench, help; see "
                    "backstop help)\n");
    return 2;
  }
  const char *cmd = argv[1];
  const char *exe = self_exe(argv[0]);
  if (strcmp(cmd, "--version") == 0) {
    printf("backstop %s\n", BS_VERSION);
    return 0;
  }
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 ||
      strcmp(cmd, "-h") == 0)
    return bs_cmd_help(argc - 1, argv + 1);
  if (strcmp(cmd, "run") == 0)
    return bs_cmd_run(argc - 1, argv + 1, exe);
  if (strcmp(cmd, "mutants") == 0)
    return bs_cmd_mutants(argc - 1, argv + 1, exe);
  if (strcmp(cmd, "sweep") == 0)
    return bs_cmd_sweep(argc - 1, argv + 1, exe);
  if (strcmp(cmd, "fuzz") == 0)
    return bs_cmd_fuzz(argc - 1, argv + 1, exe);
  if (strcmp(cmd, "list") == 0)
    return bs_cmd_list(argc - 1, argv + 1);
  if (strcmp(cmd, "faults") == 0)
    return bs_cmd_faults(argc - 1, argv + 1);
  if (strcmp(cmd, "explain") == 0)
    return bs_cmd_explain(argc - 1, argv + 1);
  if (strcmp(cmd, "analyze") == 0)
    return bs_cmd_analyze(argc - 1, argv + 1);
  if (strcmp(cmd, "replay") == 0)
    return bs_cmd_replay(argc - 1, argv + 1);
  if (strcmp(cmd, "bench") == 0)
    return bs_bench_cli_main(argc - 1, argv + 1);
  /* Hidden: the rollout-engine stand-in that the actors execute. */
  if (strcmp(cmd, "engine") == 0)
    return bs_engine_main(argc - 1, argv + 1);
  fprintf(stderr, "backstop: unknown command '%s' (see backstop help)\n", cmd);
  return 2;
}
