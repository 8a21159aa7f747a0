/* `backstop help [COMMAND]`: usage of each command (docs/cli.md). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "bs_cmd.h"
#include "bs_mutant.h"
#include "bs_near.h"
#include "model/bs_config.h"
#include "plan/bs_plan.h"

static const char run_help[] =
    "usage: backstop run [SELECTOR...] [options]\n"
    "  SELECTOR: a scenario name, an @label or a glob (none: " BS_DEFAULT_SUITE
    ")\n"
    "  --ranks N|N,M,...   world size, or a matrix of sizes\n"
    "  --backend sim|nccl  communicator (default sim)\n"
    "  --device host|cuda  device memory (default host with sim, cuda with "
    "nccl)\n"
    "  --model PRESET|FILE model spec (tiny, dense, moe, frozen, lora)\n"
    "  --scale F           multiply every tensor size\n"
    "  --cycles N          training cycles per scenario\n"
    "  --set KEY=VALUE     configuration override (repeatable)\n"
    "  --fault SPEC        arm a fault (repeatable; see backstop faults):\n"
    "                      name=POINT[,rank=R][,cycle=C][,nth=K][,times=T]\n"
    "                      [,persistent][,prob=P][,failinfo=I][,onetime];\n"
    "                      one that never fires makes the run vacuous\n"
    "  --mutant NAME       run against a known-bug replica (repeatable)\n"
    "  --seed S            seeds values, gradients, random faults (default 0)\n"
    "  --schedule P        how a simulated world's ranks take turns: random\n"
    "                      (the default) or pct:D[:K] (one rank at a time\n"
    "                      on virtual time, chosen from a seed: one seed,\n"
    "                      one history), or threads (real threads, real\n"
    "                      time; --spawn, --rendezvous and nccl run so)\n"
    "  --schedule-seed S   the schedule's seed (default: --seed)\n"
    "  --timeout-ms T      collective watchdog timeout\n"
    "  --deadline-s S      hard limit of one run (default 60): on the\n"
    "                      virtual clock of a scheduled world, in real\n"
    "                      time on real threads\n"
    "  -j N                runs in parallel (default 2)\n"
    "  --json FILE         machine-readable report\n"
    "  --junit FILE        JUnit XML\n"
    "  --artifacts DIR     failure artifacts (default backstop-artifacts)\n"
    "  -q, -v              less, more output (-q: a failed run's failed\n"
    "                      oracles and repro: line; -v: every oracle)\n"
    "  --rendezvous DIR    process-per-rank: under mpirun (or srun, or\n"
    "                      BS_PROC_RANK/BS_PROC_SIZE) each process drives\n"
    "                      its share of the ranks (nccl, or sim on one\n"
    "                      host), one run at a time; they meet in\n"
    "                      DIR/<job id> (BS_JOB_ID if the launcher sets\n"
    "                      none), refused if an earlier job used it;\n"
    "                      process 0 reports\n"
    "  --spawn             one process per rank, started by backstop itself\n"
    "                      (sim or nccl; nccl ranks that would share a GPU\n"
    "                      get it without asking: threads sharing a GPU\n"
    "                      deadlock in CUDA)\n"
    "  --repeat N          every run N times over, each under its own\n"
    "                      schedule (seeds S..S+N-1); threads: the same\n"
    "                      run N times (races by chance)\n"
    "  -h, --help          this help\n"
    "exit status: 0 all pass, 1 any fail/vacuous/hang/crash, 2 usage error,\n"
    "  130/143/129 interrupted by SIGINT/SIGTERM/SIGHUP (every process it\n"
    "  started ended; the runs cut short reported as interrupted)\n";

/* The --set keys, from the configuration's key table: name, accepted
 * values, what it is. */
static void set_keys_help(void) {
  char accepts[96];
  printf("--set keys (KEY=VALUE; sim: a knob of the simulation, not a miles "
         "argument):\n");
  for (const bs_config_key *k = bs_config_keys(); k->name; k++) {
    bs_config_key_accepts(k, accepts, sizeof accepts);
    printf("  %-32s %s\n      %s\n", k->name, accepts, k->help);
  }
}

static const char analyze_help[] =
    "usage: backstop analyze DIR [--pg NAME] [--json FILE] [--graph FILE]\n"
    "                            [--trace FILE]\n"
    "  the hang report of a job's Flight Recorder dumps in DIR: PyTorch's\n"
    "  pickles (<prefix><rank>, as TORCH_FR_DUMP_TEMP_FILE writes them),\n"
    "  their JSON, or Backstop's own (an artifacts folder of a run); a DIR\n"
    "  with no dump of its own is read with its sub-folders (a folder per\n"
    "  node: the world a whole number of nodes), one job's dumps in all;\n"
    "  files skipped and sub-folders left unread are said on stderr. A\n"
    "  wait-for graph over every rank and group: its headline names every\n"
    "  root (a rank that stalled before an op, skipped one and went on,\n"
    "  left no dump, or issued another op than its peers) with its group\n"
    "  and op, or an order deadlock's cycle; each held group as a chain of\n"
    "  waits back to its roots; a desync at its first mismatched\n"
    "  collective and what differs (op, dtype, shape, size), its culprits\n"
    "  by majority (an even split: the side without the lowest rank); what\n"
    "  the dumps cannot tell\n"
    "  --pg NAME     the group taken as the default one (name or desc)\n"
    "  --json FILE   the verdict as JSON (schema backstop-hang-report/1:\n"
    "                docs/hang-report.md), written whole\n"
    "  --graph FILE  the wait-for graph as Graphviz DOT\n"
    "  --trace FILE  the dumps as a Chrome/Perfetto trace (a process per\n"
    "                rank, a thread per group, a stuck op open to the end)\n"
    "exit status: 0 no hang and no desync in the dumps, 1 one found, 2 bad "
    "input\n";

static const char replay_help[] =
    "usage: backstop replay DIR [options]\n"
    "  each rank's ops from the dumps in DIR (as analyze reads them)\n"
    "  replayed on as many simulated ranks, with the recorded ops, counts\n"
    "  and dtypes and real bytes, through the fingerprint check and the\n"
    "  watchdog: every process group as a sub-communicator of its members,\n"
    "  p2p ops with their peers (a batch as one call; isend and irecv in a\n"
    "  row issued together, each completing on its own, as a ring's do),\n"
    "  coalesced ops tensor by tensor; prints the world's report (same\n"
    "  group, op and culprit as analyze, the same every time). A rank\n"
    "  without a dump replays what the others show completed with it,\n"
    "  then stays out of every op. An op the communicator lacks\n"
    "  (all_to_all, gather, scatter, reduce, ...) runs as a stand-in that\n"
    "  every member must join, recorded and compared under its own name;\n"
    "  a dtype it lacks (Double, Half, ...) as one of the same size (both\n"
    "  listed)\n"
    "  --pg NAME           the group taken as the default one (every group\n"
    "                      is replayed)\n"
    "  --backend sim|nccl  communicator (default sim)\n"
    "  --device host|cuda  buffers (default host with sim, cuda with nccl)\n"
    "  --timeout-ms T      watchdog timeout (default 1000)\n"
    "  --max-mib M         buffers of every rank at once (default 1024);\n"
    "                      above it counts are replaced by distinct smaller\n"
    "                      ones (listed); without it those may take half\n"
    "                      the memory available (thousands of ranks'\n"
    "                      all_gathers), a replay needing more is refused\n"
    "  --spawn             one process per rank (nccl does so itself when\n"
    "                      ranks share a GPU, with NCCL 2.30 or later);\n"
    "                      prints each rank's verdict, then the replayed\n"
    "                      flight recorders as analyze reads them\n"
    "  --settle-ms T       end once every rank is through its ops or in its\n"
    "                      last, none of those can complete, and none moved\n"
    "                      for T ms (threads; else the watchdog ends a hang;\n"
    "                      a scheduled world knows that moment: no wait)\n"
    "  --schedule S        random or pct:D (the ranks one at a time on\n"
    "                      virtual time: the same replay every time, no\n"
    "                      timeout waited out), or threads (real threads,\n"
    "                      real time) (default: BS_SCHEDULE's, else\n"
    "                      random; --spawn and nccl: real threads)\n"
    "  --json FILE         the verdict as JSON (analyze --json's schema, and\n"
    "                      \"reproduced\"), written whole\n"
    "  The verdict: the replayed flight recorders' (read as analyze reads\n"
    "  them) where they name the roots the dumps do, else the dumps' own\n"
    "exit status: 0 every replayed op completed and the dumps show every op\n"
    "  done, 1 a hang or desync (reproduced or not: the dumps show one), 2\n"
    "  bad input\n";

static const char mutants_head[] =
    "usage: backstop mutants [SELECTOR...] [--targeted] [--json FILE] [run "
    "options]\n"
    "  runs the selected scenarios (default @mutant-target) against the "
    "fixed\n  core and against each mutant; exit 1 if a mutant survives or "
    "the fixed\n  core fails anything. --targeted: each mutant only against "
    "the\n  scenarios that target it (a quick kill check where runs are "
    "slow).\n  The mutants:\n";

static void mutants_help(void) {
  fputs(mutants_head, stdout);
  for (int m = 0; m < BS_MUT_COUNT; m++)
    printf("  %-22s %s: %s\n", bs_mutant_name((bs_mutant)m),
           bs_mutant_origin((bs_mutant)m), bs_mutant_effect((bs_mutant)m));
}

static const char sweep_help[] =
    "usage: backstop sweep SCENARIO... [--point P...] [--rank R] [--cycle C]\n"
    "                      [--sample N|P%] [--strict] [run options]\n"
    "  a counting pass of each scenario's run finds every reach of every\n"
    "  fault point (point x rank x cycle x nth); then one run per reach,\n"
    "  transient (nth=K) and persistent (every reach from K on in that\n"
    "  cycle), each `backstop run SCENARIO --fault SPEC`, judged on the\n"
    "  invariants. Prints the matrix of points x outcomes\n"
    "  (contained-and-agreed: it fired, a phase failed, every invariant\n"
    "  held; recovered: it fired and no phase failed; vacuous: it never\n"
    "  fired; known: failed as the configuration allows, such as a\n"
    "  corruption with the restore check off, the classifier fuzz uses;\n"
    "  fail: an invariant broke, or a hang or crash) and a repro: line for\n"
    "  every failing reach.\n"
    "  --point P    only these points (repeatable; PREFIX* matches)\n"
    "  --rank R     only reaches on rank R;  --cycle C  only in cycle C\n"
    "  --sample N   at most N reaches per scenario, shared evenly between\n"
    "               the points and spread over each point's reaches (the\n"
    "               same ones every time); says how many it skipped;\n"
    "               P%: that share of each scenario's reaches\n"
    "  --strict     a known reach fails too\n"
    "  --timeout-ms defaults to 1000 here (a rank that never joins an init\n"
    "               costs one watchdog timeout); -j to the CPUs (twice\n"
    "               them with --schedule threads: real waits)\n"
    "exit status: 1 if any reach fails (or a counting pass does), 2 usage "
    "error\n  (a selection or filters that keep nothing to run)\n";

static const char fuzz_help[] =
    "usage: backstop fuzz [SELECTOR...] [--seed S] [--runs N | --time-s T]\n"
    "                     [--max-ranks N] [--mutant NAME...] [options]\n"
    "  swarm testing: from one seed, draws whole runs (scenario, ranks,\n"
    "  cycles, model, settings, then 1-3 faults at points that a counting\n"
    "  run of the configuration reaches), judges each on the\n"
    "  invariants, and shrinks every failure (fewer faults and settings,\n"
    "  the scenario's model, fewer ranks and cycles, a lower nth) to a\n"
    "  minimal repro while it fails the same oracle. The same seed draws\n"
    "  the same runs. A failure is known (a corruption the core's SHA256\n"
    "  check does not cover: it says which settings make the core catch\n"
    "  it) or unexplained (a core bug or an oracle's false alarm).\n"
    "  SELECTOR     draw from these scenarios only (default: all)\n"
    "  --runs N     runs to draw (default 100); --time-s T: draw for T s\n"
    "  --max-ranks  largest world drawn (default 4)\n"
    "  --shrink-max runs spent shrinking one finding (default 120)\n"
    "  --strict     a known failure fails too\n"
    "  --timeout-ms defaults to 1000, --deadline-s to 20, -j to the CPUs\n"
    "               here (twice them with --schedule threads: real waits)\n"
    "  -j, --json, --junit, --artifacts, -q, -v as for run (the reports\n"
    "  hold each finding's minimal run, and a fuzz section)\n"
    "exit status: 1 if any failure is unexplained (any at all with\n"
    "  --strict), 2 usage error\n";

static const struct {
  const char *name, *text;
} simple[] = {
    {"list", "usage: backstop list [--json]\n  the scenario catalogue\n"},
    {"faults", "usage: backstop faults [--json]\n  the fault-point "
               "catalogue\n"},
    {"explain", "usage: backstop explain SCENARIO\n  what it does, which "
                "faults it arms, which oracles it checks\n"},
    {"bench", "usage: backstop bench [options]\n  throughput against the "
              "ceilings measured in the same run (backstop bench --help);\n"
              "  --hangs N: analyze and replay scored on N generated hung "
              "jobs\n  (backstop bench --hangs 1 --help)\n"},
    {"run", run_help},
    {"sweep", sweep_help},
    {"fuzz", fuzz_help},
    {"analyze", analyze_help},
    {"replay", replay_help},
};

static void overview(void) {
  printf("backstop %s: fault injection and correctness tests for the weight "
         "backup of colocated RL\n\n"
         "commands:\n"
         "  list [--json]            the scenario catalogue\n"
         "  faults [--json]          the fault-point catalogue\n"
         "  explain SCENARIO         what a scenario does and checks\n"
         "  run [SELECTOR...]        run scenarios (backstop help run)\n"
         "  mutants [SELECTOR...]    the mutant kill matrix\n"
         "  sweep SCENARIO...        every reach of every fault point\n"
         "  fuzz [--seed S]          swarm runs from a seed, failures shrunk\n"
         "  bench [options]          throughput against measured ceilings\n"
         "  analyze DIR              the hang report of a job's dumps\n"
         "  replay DIR [options]     a job's dumps replayed on simulated "
         "ranks\n"
         "  help [COMMAND], --version\n"
         "every command answers --help (backstop COMMAND --help)\n",
         BS_VERSION);
}

/* Every command's name, for "did you mean". */
static const char *const command_names[] = {
    "list", "faults", "explain", "run",    "mutants", "sweep",
    "fuzz", "bench",  "analyze", "replay", "help"};

int bs_cmd_help_none(void) {
  size_t n = sizeof command_names / sizeof command_names[0];
  fprintf(stderr, "backstop: no command given (one of");
  for (size_t i = 0; i < n; i++)
    fprintf(stderr, "%s %s", i ? "," : "", command_names[i]);
  fprintf(stderr, "; see backstop help)\n");
  return 2;
}

int bs_cmd_help_unknown(const char *cmd) {
  fprintf(stderr, "backstop: unknown command '%s'%s (see backstop help)\n", cmd,
          bs_near_hint(cmd, command_names,
                       sizeof command_names / sizeof command_names[0]));
  return 2;
}

/* "help help", or -h/--help anywhere after help. */
static bool asks_help_of_help(int argc, char **argv) {
  bool asks = strcmp(argv[1], "help") == 0;
  for (int i = 1; i < argc; i++)
    asks |= strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
  return asks;
}

int bs_cmd_help(int argc, char **argv) {
  if (argc < 2) {
    overview();
    return 0;
  }
  if (asks_help_of_help(argc, argv)) {
    fputs("usage: backstop help [COMMAND]\n"
          "  alone: every command; with COMMAND: its options (as backstop\n"
          "  COMMAND --help)\n",
          stdout);
    return 0;
  }
  if (strcmp(argv[1], "mutants") == 0) {
    mutants_help();
    return 0;
  }
  for (size_t i = 0; i < sizeof simple / sizeof simple[0]; i++)
    if (strcmp(argv[1], simple[i].name) == 0) {
      fputs(simple[i].text, stdout);
      if (strcmp(argv[1], "run") == 0)
        set_keys_help();
      return 0;
    }
  fprintf(stderr, "backstop help: unknown command '%s'%s (see backstop help)\n",
          argv[1],
          bs_near_hint(argv[1], command_names,
                       sizeof command_names / sizeof command_names[0]));
  return 2;
}
