/* backstop replay DIR [options]: a job's dumps replayed on a world of as
 * many simulated ranks (bs_replay.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_cmd.h"
#include "bs_sched_spec.h"
#include "catalog/bs_launcher.h"
#include "dumps/bs_dumps.h"
#include "dumps/bs_dumps_report.h"
#include "dumps/bs_replay.h"
#include "plan/bs_footprint.h"
#include "plan/bs_opts.h"
#include "run/bs_nccl_plan.h"

typedef struct replay_args {
  const char *dir, *pg, *json;
  bs_replay_opts o;
} replay_args;

/* One option and its value, checked as every command's are (bs_opts.h). */
static bs_status option(replay_args *a, const char *opt, const char *v,
                        bool *known) {
  bs_status st = BS_OK;
  *known = true;
  long n = 0;
  if (strcmp(opt, "--pg") == 0) {
    a->pg = v;
  } else if (strcmp(opt, "--backend") == 0) {
    BS_CHECK(bs_opts_choice(opt, v, "sim", "nccl"));
    a->o.backend = v;
  } else if (strcmp(opt, "--device") == 0) {
    BS_CHECK(bs_opts_choice(opt, v, "host", "cuda"));
    a->o.device = v;
  } else if (strcmp(opt, "--timeout-ms") == 0) {
    BS_CHECK(bs_opts_long(opt, v, 1, INT_MAX, &n));
    a->o.timeout_ms = (int)n;
  } else if (strcmp(opt, "--max-mib") == 0) {
    BS_CHECK(bs_opts_long(opt, v, 1, 1 << 20, &n));
    a->o.max_bytes = (size_t)n << 20;
  } else if (strcmp(opt, "--settle-ms") == 0) {
    BS_CHECK(bs_opts_long(opt, v, 1, INT_MAX, &n));
    a->o.settle_ms = (int)n;
  } else if (strcmp(opt, "--schedule") == 0) {
    bs_sched_spec spec;
    BS_CHECK(bs_sched_spec_parse(v, &spec));
    a->o.schedule = v;
  } else if (strcmp(opt, "--json") == 0 && v[0]) {
    a->json = v;
  } else {
    *known = false;
  }
out:
  return st;
}

/* Half of what the machine has now may hold the buffers of replaced
 * counts (the rest is the ranks' own: stacks, flight recorders). */
static size_t room_bytes(void) {
  bs_room room;
  bs_footprint_room(&room);
  return (size_t)(room.bytes / 2);
}

static bool parse(int argc, char **argv, replay_args *a) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--spawn") == 0) {
      a->o.procs = true;
    } else if (argv[i][0] == '-' && i + 1 < argc) {
      bool known;
      if (option(a, argv[i], argv[i + 1], &known) != BS_OK) {
        bs_cmd_usage_error("replay"); /* names the option and why */
        return false;
      }
      if (!known) {
        bs_cmd_bad_arg("replay", argv[i]);
        return false;
      }
      i++;
    } else if (argv[i][0] != '-' && !a->dir) {
      a->dir = argv[i];
    } else {
      bs_cmd_bad_arg("replay", argv[i]);
      return false;
    }
  }
  if (!a->dir)
    fprintf(stderr, "backstop replay: expected the folder of the dumps "
                    "(see backstop help replay)\n");
  /* As run's: the ranks one at a time on virtual time, so a replay is the
   * same every time and waits out no timeout (the corpus scores this). */
  if (!a->o.schedule && !getenv("BS_SCHEDULE"))
    a->o.schedule = "random";
  return a->dir != NULL;
}

/* NCCL ranks that would share a GPU get a process each (threads sharing
 * one deadlock in CUDA, docs/multi-gpu.md), given an NCCL that allows it.
 * The probe runs in a child: CUDA must not start in this process, which
 * forks the ranks' processes. */
static bool place(replay_args *a, int ranks) {
  bs_nccl_info in;
  bool nccl = a->o.backend && strcmp(a->o.backend, "nccl") == 0;
  if (!nccl && strcmp(a->o.device, "cuda") != 0)
    return true;
  if (bs_nccl_plan_require(nccl ? "nccl" : "sim", a->o.device, &in) != BS_OK ||
      (nccl && bs_nccl_plan_shared_gpu(ranks, &in) != BS_OK)) {
    fprintf(stderr, "backstop replay: %s\n", bs_err()->message);
    return false;
  }
  a->o.procs = a->o.procs || (nccl && ranks > 1 && ranks > in.gpus);
  return true;
}

/* As many processes as a launcher may start, at most. */
static bool procs_fit(const replay_args *a, int ranks) {
  if (!a->o.procs || ranks <= BS_LAUNCHER_MAX)
    return true;
  fprintf(stderr,
          "backstop replay: %d ranks would take a process each, more than "
          "the %d allowed (the sim replays them as threads: leave out "
          "--spawn and --backend nccl)\n",
          ranks, BS_LAUNCHER_MAX);
  return false;
}

int bs_cmd_replay(int argc, char **argv) {
  replay_args a = {0};
  bs_dumps d;
  bs_replay_result res;
  if (!parse(argc, argv, &a))
    return 2;
  if (!a.o.max_bytes) /* --max-mib bounds every buffer */
    a.o.room_bytes = room_bytes();
  if (bs_nccl_plan_device(a.o.backend, &a.o.device) != BS_OK ||
      bs_dumps_load(a.dir, a.pg, &d) != BS_OK)
    return bs_cmd_usage_error("replay");
  if (!place(&a, d.ranks) || !procs_fit(&a, d.ranks)) {
    bs_dumps_free(&d);
    return 2;
  }
  bs_status st = bs_replay_run(&d, &a.o, &res);
  bs_dumps_free(&d);
  if (st != BS_OK)
    return bs_cmd_usage_error("replay");
  fputs(res.text, stdout);
  int rc = res.status == BS_OK ? 0 : 1;
  if (a.json && bs_dumps_report_publish("--json", a.json, res.json) != BS_OK)
    rc = bs_cmd_usage_error("replay") ? 1 : 1;
  bs_replay_result_free(&res);
  return rc;
}
