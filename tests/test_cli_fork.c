/* The runner and the parent's side of a run: a child per job, results in
 * job order under -j, a child past its deadline is asked to dump, then is a
 * hang (and its process group dies with it), a child killed by a signal is
 * a crash; workers serve job after job, each job ending as it would in a
 * child of its own, a worker left unfit, crashed or killed replaced. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bs_fork.h"
#include "bs_test_sanitized.h"
#include "catalog/bs_scenario.h"
#include "model/bs_model_parse.h"
#include "run/bs_child_threads.h"
#include "run/bs_parent.h"
#include "run/bs_run_all.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_forever(void) {
  for (;;)
    pause();
}

static int child_echo(void *arg, size_t job, int fd) {
  (void)arg;
  char buf[32];
  int n = snprintf(buf, sizeof buf, "job %zu", job);
  return bs_fork_write_all(fd, buf, (size_t)n) ? 0 : 9;
}

static int child_by_job(void *arg, size_t job, int fd) {
  (void)arg;
  if (job == 1)
    sleep_forever();
  if (job == 2)
    raise(SIGSEGV);
  if (job == 3) {
    /* A megabyte: the parent must drain the pipe while the child writes. */
    static char big[1 << 20];
    memset(big, 'x', sizeof big);
    return bs_fork_write_all(fd, big, sizeof big) ? 0 : 9;
  }
  return child_echo(arg, job, fd);
}

/* Closes its pipe, then takes a while to exit: the parent has to wait for
 * the exit with the pipe gone, bounded by the deadline. */
static int child_exits_late(void *arg, size_t job, int fd) {
  (void)arg, (void)job;
  struct timespec nap = {0, 50 * 1000000L};
  close(fd);
  nanosleep(&nap, NULL);
  return 0;
}

/* A far deadline (past what an int of milliseconds holds) is no endless
 * wait: the (int) of the time left used to overflow into poll(-N), which
 * waits forever. The alarm turns such a hang into a failed test. */
static void test_far_deadline_does_not_hang(void **state) {
  (void)state;
  static const double far[] = {3e6, 4294967296.0, 1e300};
  for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) {
    bs_job_out out[2];
    bs_fork r = {.njobs = 2,
                 .parallel = 2,
                 .deadline_s = far[i],
                 .child = child_exits_late};
    alarm(30);
    assert_int_equal(bs_fork_run(&r, out), BS_OK);
    alarm(0);
    for (int k = 0; k < 2; k++) {
      assert_int_equal(out[k].end, BS_JOB_EXITED);
      assert_int_equal(out[k].code, 0);
      bs_fork_job_out_free(&out[k]);
    }
  }
}

static void test_verdicts(void **state) {
  (void)state;
  bs_job_out out[4];
  bs_fork r = {
      .njobs = 4, .parallel = 4, .deadline_s = 0.2, .child = child_by_job};
  double t0 = now_ms();
  assert_int_equal(bs_fork_run(&r, out), BS_OK);
  /* A generous bound: only proves nothing waited for a long timeout. */
  assert_true(now_ms() - t0 < 5000);
  assert_int_equal(out[0].end, BS_JOB_EXITED);
  assert_int_equal(out[0].code, 0);
  assert_string_equal(out[0].payload, "job 0");
  assert_int_equal(out[1].end, BS_JOB_KILLED);
  assert_true(out[1].duration_ms >= 200);
  assert_int_equal(out[2].end, BS_JOB_SIGNALED);
  assert_int_equal(out[2].code, SIGSEGV);
  assert_int_equal(out[3].end, BS_JOB_EXITED);
  assert_int_equal(out[3].len, 1 << 20);
  for (int i = 0; i < 4; i++)
    bs_fork_job_out_free(&out[i]);
}

static size_t order[16], norder;

/* The parent makes this file once it has job 2's result, and job 0 waits
 * for it (bounded): a later job ends first whatever the load. Not sleeps
 * of different lengths (a later fork can start late enough to end last all
 * the same), nor a file job 2 makes (its exit, gcov's counters written
 * under coverage, can take longer than job 0's whole run), nor a pipe (a
 * job's child keeps no descriptor but its own). */
static char gate[64];

static void record_order(void *arg, size_t job, const bs_job_out *o) {
  (void)arg;
  if (o)
    order[norder++] = job;
  if (o && job == 2)
    close(open(gate, O_CREAT | O_WRONLY, 0600));
}

/* A later job finishes first; results still land in job order. Jobs 0 to
 * 2 run at once (3 in parallel). */
static int child_slow_first(void *arg, size_t job, int fd) {
  struct timespec nap = {0, 1000000L};
  for (int i = 0; job == 0 && i < 5000 && access(gate, F_OK) != 0; i++)
    nanosleep(&nap, NULL);
  return child_echo(arg, job, fd);
}

static void test_parallel_order(void **state) {
  (void)state;
  bs_job_out out[6];
  norder = 0;
  snprintf(gate, sizeof gate, "/tmp/bs_fork_gate.%d", (int)getpid());
  bs_fork r = {.njobs = 6,
               .parallel = 3,
               .deadline_s = 10,
               .child = child_slow_first,
               .event = record_order};
  assert_int_equal(bs_fork_run(&r, out), BS_OK);
  assert_int_equal(norder, 6);
  bool reordered = false;
  for (size_t i = 0; i < 6; i++) {
    char want[32];
    snprintf(want, sizeof want, "job %zu", i);
    assert_string_equal(out[i].payload, want);
    reordered = reordered || order[i] != i;
    bs_fork_job_out_free(&out[i]);
  }
  unlink(gate);
  assert_true(reordered);
}

static bool alive(pid_t pid) {
  char path[64], stat[256] = "";
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  size_t n = fread(stat, 1, sizeof stat - 1, f);
  fclose(f);
  stat[n] = '\0';
  const char *paren = strrchr(stat, ')');
  return paren && paren[1] == ' ' && paren[2] != 'Z';
}

/* A child that leaves a process behind (an engine) and hangs: the kill
 * takes the whole process group. */
static int child_with_grandchild(void *arg, size_t job, int fd) {
  (void)arg;
  (void)job;
  pid_t g = fork();
  if (g == 0)
    sleep_forever();
  char buf[32];
  int n = snprintf(buf, sizeof buf, "%d", (int)g);
  bs_fork_write_all(fd, buf, (size_t)n);
  sleep_forever();
  return 0;
}

static void test_kill_takes_group(void **state) {
  (void)state;
  bs_job_out out[1];
  bs_fork r = {.njobs = 1,
               .parallel = 1,
               .deadline_s = 0.1,
               .child = child_with_grandchild};
  assert_int_equal(bs_fork_run(&r, out), BS_OK);
  assert_int_equal(out[0].end, BS_JOB_KILLED);
  pid_t g = (pid_t)atoi(out[0].payload);
  assert_true(g > 0);
  /* Dead: gone, or a zombie that its new parent has not reaped yet. */
  bool gone = false;
  for (int i = 0; i < 200 && !gone; i++) {
    gone = !alive(g);
    if (!gone)
      usleep(5000);
  }
  assert_true(gone);
  bs_fork_job_out_free(&out[0]);
}

/* ---- workers: one process serves job after job ---- */

static int started; /* in a worker: its start hook ran */

static void worker_started(void *arg, int slot) {
  (void)arg;
  started += slot == 0; /* -j 1: the one worker is the first */
}

/* Job 4 leaves its worker unfit (code 7), job 5 crashes it, job 6 hangs
 * past its deadline; every job first writes its process and whether that
 * process's start hook ran once. */
static int child_in_worker(void *arg, size_t job, int fd) {
  (void)arg;
  char buf[64];
  int n = snprintf(buf, sizeof buf, "%d %d", (int)getpid(), started);
  bs_fork_write_all(fd, buf, (size_t)n);
  if (job == 5)
    raise(SIGSEGV);
  if (job == 6)
    sleep_forever();
  return job == 4 ? 7 : 0;
}

static bool keep_unless_7(void *arg, int code) {
  (void)arg;
  return code != 7;
}

/* Job 6's deadline: 1 s of real time for its fresh worker to start and
 * write its line before the kill (0.2 s was too short beside another
 * ctest at load 100: killed before it wrote, an empty payload). */
static double short_for_6(void *arg, size_t job) {
  (void)arg;
  return job == 6 ? 1.0 : 10;
}

static int pid_of(const bs_job_out *o) {
  assert_non_null(o->payload);
  assert_non_null(strstr(o->payload, " 1")); /* its worker's start ran */
  return atoi(o->payload);
}

static void test_workers_serve_jobs(void **state) {
  (void)state;
  bs_job_out out[8];
  bs_fork r = {.njobs = 8,
               .parallel = 1,
               .deadline_of = short_for_6,
               .child = child_in_worker,
               .reuse = true,
               .start = worker_started,
               .keep = keep_unless_7};
  assert_int_equal(bs_fork_run(&r, out), BS_OK);
  int first = pid_of(&out[0]);
  assert_int_not_equal(first, (int)getpid());
  for (int i = 0; i <= 4; i++) { /* one worker, as a child each would */
    assert_int_equal(pid_of(&out[i]), first);
    assert_int_equal(out[i].end, BS_JOB_EXITED);
  }
  assert_int_equal(out[4].code, 7);
  /* Left unfit, crashed, killed: each job after in a fresh worker. */
  assert_int_equal(out[5].end, BS_JOB_SIGNALED);
  assert_int_equal(out[5].code, SIGSEGV);
  assert_int_not_equal(pid_of(&out[5]), first);
  assert_int_equal(out[6].end, BS_JOB_KILLED);
  assert_int_not_equal(pid_of(&out[6]), pid_of(&out[5]));
  assert_int_equal(out[7].end, BS_JOB_EXITED);
  assert_int_equal(out[7].code, 0);
  assert_int_not_equal(pid_of(&out[7]), pid_of(&out[6]));
  for (int i = 0; i < 8; i++)
    bs_fork_job_out_free(&out[i]);
}

/* Waits for the dump signal, then writes what it has. */
static void dump_on_signal(int fd, const char *what, size_t n) {
  sigset_t set;
  int sig;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigprocmask(SIG_BLOCK, &set, NULL);
  sigwait(&set, &sig);
  bs_fork_write_all(fd, what, n);
}

/* Job 0 dumps when asked and ends; job 1 is deaf to it and is killed
 * after the grace. */
static int child_asked(void *arg, size_t job, int fd) {
  (void)arg;
  if (job == 0) {
    dump_on_signal(fd, "dumped", 6);
    return 0;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigprocmask(SIG_BLOCK, &set, NULL);
  sleep_forever();
  return 0;
}

static void test_asked_to_dump(void **state) {
  (void)state;
  bs_job_out out[2];
  bs_fork r = {.njobs = 2,
               .parallel = 2,
               .deadline_s = 0.2,
               .dump_signal = SIGUSR1,
               .grace_s = 0.5,
               .child = child_asked};
  assert_int_equal(bs_fork_run(&r, out), BS_OK);
  assert_int_equal(out[0].end, BS_JOB_KILLED); /* past its deadline */
  assert_string_equal(out[0].payload, "dumped");
  assert_true(out[0].duration_ms >= 200 && out[0].duration_ms < 650);
  assert_int_equal(out[1].end, BS_JOB_KILLED);
  assert_int_equal(out[1].code, SIGKILL);
  assert_true(out[1].duration_ms >= 700);
  for (int i = 0; i < 2; i++)
    bs_fork_job_out_free(&out[i]);
}

/* A descendant that left the job's process group and keeps the pipe open
 * (a daemonised helper): the kill cannot end it, the drain is bounded. */
static int child_leaves_pipe_open(void *arg, size_t job, int fd) {
  (void)arg, (void)job;
  bs_fork_write_all(fd, "before", 6);
  pid_t grandchild = fork();
  if (grandchild == 0) {
    setpgid(0, 0);
    int null = open("/dev/null", O_RDWR); /* ctest waits for stdio */
    for (int i = 0; null >= 0 && i < 3; i++)
      dup2(null, i);
    struct timespec t = {5, 0};
    nanosleep(&t, NULL); /* holding fd */
    bs_fork_exit(0);
  }
  sleep_forever();
  return 0;
}

static void test_drain_is_bounded(void **state) {
  (void)state;
  bs_job_out out;
  bs_fork r = {.njobs = 1,
               .parallel = 1,
               .deadline_s = 0.1,
               .child = child_leaves_pipe_open};
  assert_int_equal(bs_fork_run(&r, &out), BS_OK);
  assert_int_equal(out.end, BS_JOB_KILLED);
  assert_string_equal(out.payload, "before");
  assert_true(out.duration_ms < 3000); /* not the grandchild's 5 s */
  bs_fork_job_out_free(&out);
}

/* ---- the parent's results ---- */

static bool expect_nothing(const bs_record *r, char *d, size_t n) {
  (void)r;
  snprintf(d, n, "nothing");
  return true;
}

static const bs_scenario fake = {.name = "fake",
                                 .labels = "@test",
                                 .model = "tiny",
                                 .cycles = 1,
                                 .default_ranks = 2,
                                 .min_ranks = 1,
                                 .expect = expect_nothing};

static int child_result(const bs_run *cfg, int fd) {
  if (cfg->seed == 1)
    sleep_forever();
  if (cfg->seed == 5) { /* hung, and dumps when asked: its own result */
    bs_result r;
    bs_buf b = {0};
    assert_int_equal(bs_result_from_run(cfg, &r), BS_OK);
    r.trace = strdup("art/fake/trace.json");
    bs_result_pack(&b, &r);
    dump_on_signal(fd, b.s, b.len);
    bs_buf_free(&b);
    bs_result_free(&r);
    return 0;
  }
  if (cfg->seed == 2)
    raise(SIGSEGV);
  if (cfg->seed == 3)
    return 3;
  bs_result r;
  bs_buf b = {0};
  assert_int_equal(bs_result_from_run(cfg, &r), BS_OK);
  bs_oracle_result o = {"liveness", cfg->seed != 4, "rank 1 never returned"};
  bs_result_add_oracle(&r, &o);
  r.verdict = o.ok ? BS_PASS : BS_FAIL;
  bs_result_pack(&b, &r);
  int ok = bs_fork_write_all(fd, b.s, b.len);
  bs_buf_free(&b);
  bs_result_free(&r);
  return ok ? 0 : 9;
}

static void test_exec_results(void **state) {
  (void)state;
  bs_run cfgs[6];
  for (int i = 0; i < 6; i++)
    cfgs[i] = (bs_run){.scn = &fake,
                       .ranks = 2,
                       .backend = "sim",
                       .device = "host",
                       .model_name = "tiny",
                       .scale = 1,
                       .cycles = 1,
                       .seed = (uint64_t)i,
                       .deadline_s = 0.3};
  bs_result res[6];
  bs_parent_opts o = {.jobs = 6, .child = child_result};
  assert_int_equal(bs_parent_run(cfgs, 6, &o, res), BS_OK);
  assert_int_equal(res[0].verdict, BS_PASS);
  assert_string_equal(res[0].scenario, "fake");
  assert_int_equal(res[0].noracles, 1);
  assert_int_equal(res[1].verdict, BS_HANG);
  assert_non_null(strstr(res[1].note, "deadline"));
  assert_int_equal(res[2].verdict, BS_CRASH);
  assert_non_null(strstr(res[2].note, "signal 11"));
  assert_int_equal(res[3].verdict, BS_CRASH);
  assert_non_null(strstr(res[3].note, "exited with status 3"));
  assert_int_equal(res[4].verdict, BS_FAIL);
  assert_false(res[4].oracles[0].ok);
  assert_string_equal(res[4].repro, "backstop run fake --ranks 2 --seed 4 "
                                    "--schedule threads --deadline-s 0.3");
  /* Past its deadline whatever it says; its artifacts kept. */
  assert_int_equal(res[5].verdict, BS_HANG);
  assert_non_null(strstr(res[5].note, "after dumping"));
  assert_string_equal(res[5].trace, "art/fake/trace.json");
  assert_int_equal(bs_run_all_exit_code(res, 1), 0);
  assert_int_equal(bs_run_all_exit_code(res, 5), 1);
  for (int i = 0; i < 6; i++)
    bs_result_free(&res[i]);
}

/* A run whose world cannot start (its ranks' stacks past RLIMIT_AS) fails
 * naming why; it had read as every rank never returning. */
static int child_short_of_address(const bs_run *cfg, int fd) {
  struct rlimit rl;
  long pages = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f || fscanf(f, "%ld", &pages) != 1 || getrlimit(RLIMIT_AS, &rl) != 0)
    return 7;
  fclose(f);
  rl.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (256u << 20);
  if (setrlimit(RLIMIT_AS, &rl) != 0)
    return 8;
  return bs_child_threads_run(cfg, fd);
}

static void test_world_setup_failure_named(void **state) {
  (void)state;
  if (BS_TEST_SANITIZED)
    skip(); /* its shadow takes more than any RLIMIT_AS leaves */
  bs_model_spec m = {0};
  assert_int_equal(bs_model_preset("tiny", 1.0, &m), BS_OK);
  bs_run cfg = {.scn = &fake,
                .ranks = 4096, /* 1.3 GiB of stacks */
                .backend = "sim",
                .device = "host",
                .model = &m,
                .model_name = "tiny",
                .scale = 1,
                .cycles = 1,
                .schedule = {.policy = BS_SCHED_RANDOM},
                .deadline_s = 60};
  bs_config_defaults(&cfg.config);
  bs_result res;
  bs_parent_opts o = {.jobs = 1, .child = child_short_of_address};
  assert_int_equal(bs_parent_run(&cfg, 1, &o, &res), BS_OK);
  assert_int_equal(res.verdict, BS_FAIL);
  assert_non_null(res.note);
  assert_non_null(strstr(res.note, "setup failed"));
  assert_non_null(strstr(res.note, "of address space for the stacks of 4096 "
                                   "ranks: Cannot allocate memory"));
  bs_result_free(&res);
  bs_model_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_verdicts),
      cmocka_unit_test(test_far_deadline_does_not_hang),
      cmocka_unit_test(test_parallel_order),
      cmocka_unit_test(test_kill_takes_group),
      cmocka_unit_test(test_asked_to_dump),
      cmocka_unit_test(test_drain_is_bounded),
      cmocka_unit_test(test_exec_results),
      cmocka_unit_test(test_workers_serve_jobs),
      cmocka_unit_test(test_world_setup_failure_named),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
