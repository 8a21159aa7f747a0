/* Process-per-rank runs (`--rendezvous`): the launcher's environment read
 * as documented, one process giving the same verdicts as a plain run, and
 * two processes that meet through the folder (nccl, and sim through a
 * shared file): process 0 merges the other's part and both report its
 * verdict; a missing process is waited for with a bound, never forever; a
 * hang past the deadline, spawned or launched, leaves every rank's dump; a
 * job id used twice is refused, processes started apart are not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bs_file.h"
#include "bs_mutant.h"
#include "bs_test_cli.h"
#include "bs_test_faults.h"
#include "catalog/bs_launcher.h"
#include "dev/bs_dev.h"
#include "result/bs_result.h"

static const char *const launcher_vars[] = {"BS_PROC_RANK",
                                            "BS_PROC_SIZE",
                                            "OMPI_COMM_WORLD_RANK",
                                            "OMPI_COMM_WORLD_SIZE",
                                            "PMI_RANK",
                                            "PMI_SIZE",
                                            "SLURM_PROCID",
                                            "SLURM_NTASKS",
                                            "BS_JOB_ID",
                                            "PMIX_NAMESPACE",
                                            "OMPI_MCA_ess_base_jobid",
                                            "SLURM_JOB_ID",
                                            "SLURM_STEP_ID",
                                            "RANK",
                                            "WORLD_SIZE",
                                            "TORCHELASTIC_RUN_ID",
                                            "TORCHELASTIC_RESTART_COUNT"};

static int clean_env(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof launcher_vars / sizeof *launcher_vars; i++)
    unsetenv(launcher_vars[i]);
  return 0;
}

static void test_env(void **state) {
  (void)state;
  bs_launcher p;
  assert_int_equal(bs_launcher_from_env(&p), BS_OK);
  assert_int_equal(p.proc, 0);
  assert_int_equal(p.nprocs, 1);
  assert_string_equal(p.job, "");
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
  setenv("PMIX_NAMESPACE", "prterun-host-77@1", 1);
  assert_int_equal(bs_launcher_from_env(&p), BS_OK);
  assert_int_equal(p.proc, 3);
  assert_int_equal(p.nprocs, 8);
  assert_string_equal(p.from, "OMPI_COMM_WORLD_RANK");
  assert_string_equal(p.job, "prterun-host-77_1");
  unsetenv("PMIX_NAMESPACE");
  setenv("SLURM_JOB_ID", "4242", 1);
  setenv("SLURM_STEP_ID", "3", 1);
  assert_int_equal(bs_launcher_from_env(&p), BS_OK);
  assert_string_equal(p.job, "4242.3");
  /* Slurm's step 0 is a step like any other (only torchrun's first attempt
   * keeps the bare id). */
  setenv("SLURM_STEP_ID", "0", 1);
  assert_int_equal(bs_launcher_from_env(&p), BS_OK);
  assert_string_equal(p.job, "4242.0");
  clean_env(NULL);
  /* torchrun's variables, last: generic names, read only under
   * --rendezvous. */
  setenv("RANK", "5", 1);
  setenv("WORLD_SIZE", "6", 1);
  setenv("TORCHELASTIC_RUN_ID", "r1", 1);
  assert_int_equal(bs_launcher_from_env(&p), BS_OK);
  assert_int_equal(p.proc, 5);
  assert_int_equal(p.nprocs, 6);
  assert_string_equal(p.job, "r1");
  assert_string_equal(p.job_from, "TORCHELASTIC_RUN_ID");
  /* A restarted worker group is a job of its own. */
  setenv("TORCHELASTIC_RESTART_COUNT", "0", 1);
  assert_int_equal(bs_launcher_from_env(&p), BS_OK);
  assert_string_equal(p.job, "r1");
  setenv("TORCHELASTIC_RESTART_COUNT", "2", 1);
  assert_int_equal(bs_launcher_from_env(&p), BS_OK);
  assert_string_equal(p.job, "r1.2");
  /* The explicit pair wins over the launcher's. */
  setenv("BS_PROC_RANK", "1", 1);
  setenv("BS_PROC_SIZE", "2", 1);
  assert_int_equal(bs_launcher_from_env(&p), BS_OK);
  assert_int_equal(p.proc, 1);
  assert_int_equal(p.nprocs, 2);
  setenv("BS_PROC_RANK", "2", 1);
  bs_err_clear();
  assert_int_equal(bs_launcher_from_env(&p), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "BS_PROC_RANK='2'"));
  unsetenv("BS_PROC_SIZE");
  bs_err_clear();
  assert_int_equal(bs_launcher_from_env(&p), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "BS_PROC_SIZE is not"));
  clean_env(NULL);
}

static int setup(void **state) {
  (void)state;
  clean_env(NULL);
  return cli_setup("bs_procs_");
}

static int teardown(void **state) {
  (void)state;
  return cli_teardown();
}

/* The first run's rank outcomes in the JSON report in dir/file (the
 * verdicts' what); a message may hold ']', the next key ends them. */
static char *outcomes(const char *file) {
  char *s = slurp(file);
  char *a = strstr(s, "\"rank_outcomes\"");
  assert_non_null(a);
  char *e = strstr(a, "\"memory\"");
  assert_non_null(e);
  e[0] = '\0';
  char *r = strdup(a);
  free(s);
  return r;
}

/* The verdict process 0 left in a run's folder for its peers (packed). */
static void verdict_in(const char *path, bs_result *r) {
  char *data = NULL, full[256];
  size_t n = 0;
  snprintf(full, sizeof full, "%s/%s", dir, path);
  assert_int_equal(bs_file_read(full, &data, &n), BS_OK);
  assert_int_equal(bs_result_pack_read(data, n, r), BS_OK);
  free(data);
}

/* One process of one: the same verdicts and rank outcomes as without the
 * rendezvous, the run's part and verdict left in the job's folder. */
static void test_one_process(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  const char *sel = "engine-death rank-divergence --ranks 2";
  char args[256];
  snprintf(args, sizeof args, "run %s --json plain.json", sel);
  assert_int_equal(backstop(args), 0);
  setenv("BS_JOB_ID", "j1", 1);
  snprintf(args, sizeof args, "run %s --rendezvous rv --json rv.json", sel);
  assert_int_equal(backstop(args), 0);
  unsetenv("BS_JOB_ID");
  char *a = outcomes("plain.json"), *b = outcomes("rv.json");
  assert_string_equal(a, b);
  free(a);
  /* the failures name the core's BS_FAIL through the rendezvous too */
  a = slurp("rv.json");
  assert_non_null(strstr(a, "\"where\": \"core/sync/bs_engine.c:"));
  assert_non_null(strstr(a, "\"where\": \"core/comm/front/bs_comm.c:"));
  free(a);
  free(b);
  char *part = slurp("rv/j1/run1/part0");
  bs_result res;
  assert_true(strlen(part) > 0);
  verdict_in("rv/j1/run1/result.bin", &res);
  assert_string_equal(res.scenario, "rank-divergence");
  assert_non_null(strstr(out_text, "2 passed"));
  free(part);
  bs_result_free(&res);
  /* The same job id again: refused before anything runs, its verdicts not
   * reported as this job's. */
  setenv("BS_JOB_ID", "j1", 1);
  assert_int_equal(backstop(args), 2);
  unsetenv("BS_JOB_ID");
  assert_non_null(strstr(err_text, "backstop run: job id j1 (BS_JOB_ID) was "
                                   "used before: rv/j1 holds proc0 from an "
                                   "earlier run; give a new job id "
                                   "(BS_JOB_ID) or remove rv/j1\n"));
  assert_null(strstr(out_text, "passed"));
  /* Without a job id the folder is rv/job: the same. */
  assert_int_equal(backstop("run engine-death --rendezvous rv -q"), 0);
  assert_int_equal(backstop("run engine-death --rendezvous rv -q"), 2);
  assert_non_null(strstr(err_text, "rv/job holds proc0 from an earlier run "
                                   "without a job id"));
}

/* The kill matrix too: every run (each mutant's) meets in a folder of its
 * own, and the one process reports as without --rendezvous. */
static void test_mutants(void **state) {
  (void)state;
  setenv("BS_JOB_ID", "j3", 1);
  /* One scenario leaves most mutants alive: exit 1, as without it. */
  assert_int_equal(backstop("mutants frozen-params --rendezvous rv"), 1);
  unsetenv("BS_JOB_ID");
  assert_non_null(strstr(out_text, "fixed core: 1 of 1 runs pass"));
  assert_non_null(strstr(out_text, "skip-frozen-backup       frozen-params"));
  for (int m = 0; m < BS_MUT_COUNT; m++) {
    char path[64];
    snprintf(path, sizeof path, "rv/j3/run%d/result.bin", m + 1);
    bs_result res;
    verdict_in(path, &res);
    assert_int_equal(res.nmutants, 1);
    assert_string_equal(res.mutants[0], bs_mutant_name((bs_mutant)m));
    bs_result_free(&res);
  }
}

/* Usage errors name what is wrong. */
static void test_usage(void **state) {
  (void)state;
  setenv("BS_PROC_RANK", "0", 1);
  setenv("BS_PROC_SIZE", "2", 1);
  assert_int_equal(backstop("run engine-death --rendezvous rv"), 2);
  assert_non_null(strstr(err_text, "no job id"));
  setenv("BS_JOB_ID", "j4", 1);
  assert_int_equal(backstop("run engine-death --ranks 3 --rendezvous rv"), 2);
  assert_non_null(strstr(err_text, "3 ranks do not split evenly over 2"));
  assert_int_equal(backstop("run engine-death --rendezvous /proc/nope"), 2);
  assert_non_null(strstr(err_text, "--rendezvous: cannot create /proc/nope"));
  assert_int_equal(backstop("run engine-death --rendezvous ''"), 2);
  assert_non_null(strstr(err_text, "--rendezvous: an empty folder name"));
  clean_env(NULL);
}

/* Runs process proc of 2 of job `job` in the background (&) or not. */
static void launch(char *cmd, size_t n, int proc, const char *job,
                   const char *args, const char *extra) {
  size_t len = strlen(cmd);
  snprintf(cmd + len, n - len,
           "BS_JOB_ID=%s BS_PROC_RANK=%d BS_PROC_SIZE=2 '%s' run %s "
           "--rendezvous rv >out%d.txt 2>&1; echo $? >rc%d.txt%s",
           job, proc, getenv("BACKSTOP_BIN"), args, proc, proc, extra);
}

/* Both processes of job, side by side, each waited for; process p after
 * the shell's late<p> (a launcher may start one later than the other). */
static void launch_both(const char *job, const char *args, const char *late0,
                        const char *late1) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cd %s && { (%s", dir, late0);
  launch(cmd, sizeof cmd, 0, job, args, ") & (");
  snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s", late1);
  launch(cmd, sizeof cmd, 1, job, args, "); wait; }");
  assert_int_equal(system(cmd), 0);
}

#define NCCL_RUN "engine-death --ranks 2 --backend nccl --deadline-s 1"
#define SIM_RUN "engine-death --ranks 2 --deadline-s 1"

static int rc_of(int proc) {
  char f[16];
  snprintf(f, sizeof f, "rc%d.txt", proc);
  char *s = slurp(f);
  int rc = atoi(s);
  free(s);
  return rc;
}

/* Two processes: whatever the machine (no GPU here, one GPU that NCCL will
 * not share, enough GPUs), both exit alike. Without a GPU each refuses
 * before anything runs, saying so; with one, process 0 reports for both. */
static void test_two_processes(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  launch_both("j2", NCCL_RUN, "", "");
  assert_int_equal(rc_of(0), rc_of(1));
  char *o0 = slurp("out0.txt"), *o1 = slurp("out1.txt");
  if (bs_dev_cuda_count() == 0) {
    assert_int_equal(rc_of(0), 2);
    assert_non_null(strstr(o0, "backstop run: --backend nccl: no "));
    assert_non_null(strstr(o1, "backstop run: --backend nccl: no "));
  } else {
    assert_non_null(strstr(o0, "engine-death"));
    assert_string_equal(o1, "");
  }
  free(o0);
  free(o1);
}

/* Both processes of job (process 0 after late0) pass every run, process 0
 * saying so (summary) for both. */
static void both_pass(const char *job, const char *args, const char *late0,
                      const char *summary) {
  launch_both(job, args, late0, "");
  char *o0 = slurp("out0.txt"), *o1 = slurp("out1.txt");
  if (rc_of(0) != 0 || rc_of(1) != 0)
    fail_msg("exit %d and %d:\n%s\n%s", rc_of(0), rc_of(1), o0, o1);
  assert_non_null(strstr(o0, summary));
  assert_string_equal(o1, "");
  free(o0);
  free(o1);
}

/* sim ranks in two processes (a shared file in the run's folder): the
 * fault scenarios pass as in one process, process 0 speaking for both. */
static void test_two_sim_processes(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  both_pass("j5", "engine-death rank-death rank-divergence --ranks 4", "",
            "3 runs: 3 passed");
}

/* Alone, either process gives up within the run's deadline with a reason
 * (over NCCL where there is a GPU: process 1 waits for process 0's NCCL
 * id; else over the sim, whose ranks wait to meet). */
static void test_missing_process(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  const char *run = bs_dev_cuda_count() ? NCCL_RUN : SIM_RUN;
  for (int proc = 0; proc < 2; proc++) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "cd %s && rm -rf rv && ", dir);
    launch(cmd, sizeof cmd, proc, "j2", run, "");
    assert_int_equal(system(cmd), 0);
    assert_int_equal(rc_of(proc), 1);
    char *out = slurp(proc ? "out1.txt" : "out0.txt");
    /* The ranks waited for a peer within the watchdog's timeout: the
     * deadline was too short to call it a hang. */
    if (proc == 0 && !strstr(out, "1 failed"))
      fail_msg("process 0 alone did not fail its run:\n%s", out);
    free(out);
  }
  /* Nobody published a verdict for process 1, the parent stopped it. */
  assert_int_equal(access("rv/j2/run0/result.bin", F_OK), -1);
}

/* A run stuck past its deadline: rank 3 stalls 60 s before collective #3,
 * with a 100 s watchdog and a 2 s deadline (its grace, half of which is
 * process 0's for the others' dumps, must hold on a busy machine). The
 * watchdog was within its timeout then: the verdict is a fail that says
 * the deadline was too short, not a hang. */
#define HANG_RUN                                                               \
  "steady-normal --ranks 4 --fault name=comm/stall,rank=3,nth=3,"              \
  "failinfo=60000 --timeout-ms 100000 --deadline-s 2"

/* The hang's artifacts in art/<run>: every rank's flight recorder (the
 * pickle and its JSON copy) and the report of where each rank was, every
 * rank together and each process's block. */
static void hang_artifacts(const char *art, const char *const *blocks,
                           int nblocks) {
  char path[640], run[300];
  run_folder_in(art, "steady-normal-r4-s0-", run, sizeof run);
  assert_true(run[0] != '\0');
  for (int r = 0; r < 4; r++) {
    snprintf(path, sizeof path, "%s/rank_%d", run, r);
    char *pickle = slurp(path);
    assert_true(strlen(pickle) > 0);
    free(pickle);
    snprintf(path, sizeof path, "%s/json/rank%d.flight.json", run, r);
    char *json = slurp(path), rank[16];
    snprintf(rank, sizeof rank, "\"rank\":%d,", r);
    assert_non_null(strstr(json, rank));
    free(json);
  }
  snprintf(path, sizeof path, "%s/report.txt", run);
  char *report = slurp(path);
  assert_non_null(strstr(report, "every rank, from their flight recorders:\n"
                                 "backstop: hang at collective #3 (4 ranks"));
  assert_non_null(strstr(report, "ranks 0-2: all_gather #3"));
  assert_non_null(strstr(report, "rank 3: not in a collective (last "
                                 "completed #2)"));
  assert_non_null(strstr(report, "culprit: rank 3 (missing from #3)"));
  for (int b = 0; b < nblocks; b++)
    assert_non_null(strstr(report, blocks[b]));
  free(report);
}

/* --spawn: the parent asks process 0 to dump, process 0 asks the others,
 * gathers their dumps and ends them: every rank's flight recorder and
 * where it was, and the verdict says the deadline cut the watchdog off,
 * soon after the deadline. */
static void test_spawn_hang_dumps(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  static const char *const blocks[] = {
      "ranks 0..0 (one process):\nbackstop: hang at collective #3 (1 of 4 "
      "ranks, sim backend)",
      /* one process's block cannot say who is missing elsewhere */
      "  rank 1: all_gather #3 (464 x uint8) [fingerprint]\n  missing from "
      "#3: none of the 1 here (the other 3: their processes' blocks)\n",
      "ranks 1..1 (one process)", "ranks 2..2 (one process)",
      "ranks 3..3 (one process)"};
  assert_int_equal(
      backstop("run " HANG_RUN " --spawn --artifacts art --json s.json"), 1);
  assert_non_null(strstr(out_text, "FAIL  steady-normal"));
  assert_non_null(strstr(out_text, "after dumping its ranks' flight"));
  assert_non_null(strstr(out_text, "the deadline was shorter than the "
                                   "timeouts the run needed"));
  hang_artifacts("art", blocks, 5);
  char *json = slurp("s.json");
  assert_non_null(strstr(json, "\"verdict\": \"fail\""));
  /* artifacts.flight_recorder: the pickles, as PyTorch names them */
  assert_non_null(strstr(json, "/rank_3\""));
  assert_null(strstr(json, "flight.json\""));
  free(json);
}

/* Under a launcher each process is asked by its own parent and dumps its
 * own ranks (its flight recorders into the artifacts folder itself);
 * process 0 gathers them all. */
static void test_launcher_hang_dumps(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  static const char *const blocks[] = {"ranks 0..1 (one process)",
                                       "ranks 2..3 (one process)"};
  launch_both("j6", HANG_RUN " --artifacts art2", "", "");
  char *o0 = slurp("out0.txt"), *o1 = slurp("out1.txt");
  assert_int_equal(rc_of(0), 1);
  assert_int_equal(rc_of(1), 1);
  assert_non_null(strstr(o0, "FAIL  steady-normal"));
  assert_non_null(strstr(o0, "the deadline was shorter"));
  assert_string_equal(o1, "");
  hang_artifacts("art2", blocks, 2);
  char *dump = slurp("rv/j6/run0/dump1");
  assert_true(strlen(dump) > 0);
  free(o0);
  free(o1);
  /* The hung job left its dumps and no verdict: its id again is refused
   * by both processes, before either reads or writes the run's folder. */
  launch_both("j6", "engine-death --ranks 2", "", "");
  assert_int_equal(rc_of(0), 2);
  assert_int_equal(rc_of(1), 2);
  o0 = slurp("out0.txt");
  o1 = slurp("out1.txt");
  assert_non_null(strstr(o0, "job id j6 (BS_JOB_ID) was used before: rv/j6 "
                             "holds proc0 from an earlier run"));
  assert_non_null(strstr(o1, "rv/j6 holds proc1 from an earlier run"));
  assert_int_equal(access("rv/j6/run0/result.bin", F_OK), -1);
  char *again = slurp("rv/j6/run0/dump1");
  assert_string_equal(again, dump);
  free(again);
  free(dump);
  free(o0);
  free(o1);
}

/* A launcher starts process 1 well before process 0: its part of the
 * first run (config-matrix: every rank is process 0's) is in the folder
 * before process 0 claims it, and is this job's, not an earlier one's. */
static void test_lead_late(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  both_pass("j8", "config-matrix engine-death", "sleep 0.5; ",
            "2 runs: 2 passed");
}

/* Process 1 started 1.5 s after process 0, its deadline past half of
 * process 0's grace: process 0, asked at its deadline, asks it through the
 * run's folder, and its ranks are in the report all the same. An 8 s
 * deadline (a 2 s grace: process 1 answers within 1 s of real time, not
 * 0.5 as with 2 s): beside another ctest at load 130 it answered too late
 * for a 2 s deadline's grace. */
static void test_launcher_late_dumps(void **state) {
  (void)state;
  BS_TEST_NEEDS_FAULTS();
  static const char *const blocks[] = {
      "ranks 0..1 (one process)",
      "ranks 2..3 (one process):\nbackstop: hang at collective #3 (2 of 4 "
      "ranks, sim backend)\n  cause: the run passed its 8 s deadline and "
      "process 0 asked for this dump"};
  launch_both("j7", HANG_RUN " --deadline-s 8 --artifacts art3", "",
              "sleep 1.5; ");
  assert_int_equal(rc_of(0), 1);
  assert_int_equal(rc_of(1), 1);
  hang_artifacts("art3", blocks, 2);
  char *asked = slurp("rv/j7/run0/dump.asked");
  assert_true(strlen(asked) > 0);
  free(asked);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_env, clean_env),
      cmocka_unit_test(test_one_process),
      cmocka_unit_test(test_mutants),
      cmocka_unit_test(test_usage),
      cmocka_unit_test(test_two_processes),
      cmocka_unit_test(test_two_sim_processes),
      cmocka_unit_test(test_missing_process),
      cmocka_unit_test(test_spawn_hang_dumps),
      cmocka_unit_test(test_launcher_hang_dumps),
      cmocka_unit_test(test_launcher_late_dumps),
      cmocka_unit_test(test_lead_late),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
