/* backstop: the command-line entry point (docs/cli.md). */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bs_bench.h"
#include "bs_cmd.h"
#include "bs_stop.h"
#include "sync/bs_engine_main.h"

/* Engine processes execute this binary again: its absolute path. */
static const char *self_exe(const char *argv0) {
  static char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0)
    return argv0;
  path[n] = '\0';
  return path;
}

/* Commands that run scenarios: a signal ends what they started, they
 * report what they have, and backstop exits 128 + the signal. */
static bool stoppable(const char *cmd) {
  static const char *const names[] = {"run", "mutants", "sweep", "fuzz",
                                      "replay"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(cmd, names[i]) == 0)
      return true;
  return false;
}

/* "backstop CMD ... --help" is "backstop help CMD" (bench answers its own). */
static bool asks_help(int argc, char **argv) {
  if (strcmp(argv[1], "bench") == 0 || strcmp(argv[1], "engine") == 0)
    return false;
  for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
      return true;
  return false;
}

static int dispatch(int argc, char **argv, const char *exe) {
  const char *cmd = argv[1];
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
  return bs_cmd_help_unknown(cmd);
}

/* `backstop --version`: it takes nothing more (docs/cli.md). */
static int version(int argc, char **argv) {
  if (argc > 2) {
    fprintf(stderr,
            "backstop --version: unexpected argument '%s' (it takes none)\n",
            argv[2]);
    return 2;
  }
  printf("backstop %s\n", BS_VERSION);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    return bs_cmd_help_none();
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "--version") == 0)
    return version(argc, argv);
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 ||
      strcmp(cmd, "-h") == 0)
    return bs_cmd_help(argc - 1, argv + 1);
  if (asks_help(argc, argv)) {
    char *help[] = {"help", argv[1], NULL};
    return bs_cmd_help(2, help);
  }
  if (stoppable(cmd) && bs_stop_catch() != BS_OK) {
    fprintf(stderr, "backstop %s: %s\n", cmd, bs_err()->message);
    return 1;
  }
  int rc = dispatch(argc, argv, self_exe(argv[0]));
  /* After the command has reported what it had (its runs interrupted). */
  if (bs_stop_signal()) {
    fprintf(stderr, "backstop %s: %s: every process it started has ended\n",
            cmd, bs_stop_name());
    return 128 + bs_stop_signal();
  }
  return rc;
}
