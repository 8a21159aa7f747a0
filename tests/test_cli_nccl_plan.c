/* Where NCCL ranks go: threads while each has a GPU of its own, one
 * process per rank (started by the run's child) when they would share one,
 * a usage error under a launcher that gives a process several ranks of a
 * shared GPU, and one below NCCL 2.30 that says where a newer NCCL comes
 * from. The probe itself needs a GPU (ci/gpu.sh runs it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "catalog/bs_scenario.h"
#include "run/bs_nccl_plan.h"

static bs_scenario scn = {.name = "rank-death"};

static bs_run cfg(int ranks) {
  return (bs_run){.scn = &scn, .ranks = ranks, .backend = "nccl", .nprocs = 1};
}

static bs_nccl_info info(int version, int gpus) {
  bs_nccl_info in = {.version = version, .gpus = gpus};
  strcpy(in.lib, "/opt/nccl/libnccl.so.2");
  return in;
}

static void test_own_gpus_are_threads(void **state) {
  (void)state;
  bs_run c = cfg(8);
  bs_nccl_info in = info(22809, 8);
  unsetenv("NCCL_MULTI_RANK_GPU_ENABLE");
  unsetenv("NCCL_MAX_NCHANNELS");
  assert_int_equal(bs_nccl_plan_place(&c, &in), BS_OK);
  assert_false(c.spawn);
  assert_null(getenv("NCCL_MULTI_RANK_GPU_ENABLE"));
  assert_null(getenv("NCCL_MAX_NCHANNELS"));
}

static void test_shared_gpu_spawns(void **state) {
  (void)state;
  bs_run c = cfg(8);
  bs_nccl_info in = info(23007, 1);
  unsetenv("NCCL_MULTI_RANK_GPU_ENABLE");
  unsetenv("NCCL_MAX_NCHANNELS");
  assert_int_equal(bs_nccl_plan_place(&c, &in), BS_OK);
  assert_true(c.spawn);
  assert_string_equal(getenv("NCCL_MULTI_RANK_GPU_ENABLE"), "1");
  /* Ranks sharing a GPU's SMs get one channel each, unless the user
   * chose. */
  assert_string_equal(getenv("NCCL_MAX_NCHANNELS"), "1");
  setenv("NCCL_MAX_NCHANNELS", "4", 1);
  c = cfg(8);
  assert_int_equal(bs_nccl_plan_place(&c, &in), BS_OK);
  assert_string_equal(getenv("NCCL_MAX_NCHANNELS"), "4");
  unsetenv("NCCL_MAX_NCHANNELS");
  /* A custom driver keeps its ranks in one process: nothing to spawn. */
  bs_scenario drive = {.name = "config-matrix", .drive = (bs_drive_fn)1};
  c = cfg(8);
  c.scn = &drive;
  assert_int_equal(bs_nccl_plan_place(&c, &in), BS_OK);
  assert_false(c.spawn);
}

static void test_old_nccl_refuses_sharing(void **state) {
  (void)state;
  bs_run c = cfg(4);
  bs_nccl_info in = info(22809, 1);
  bs_err_clear();
  assert_int_equal(bs_nccl_plan_place(&c, &in), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "needs NCCL >= 2.30"));
  assert_non_null(strstr(bs_err()->message, "is 2.28.9"));
  assert_non_null(strstr(bs_err()->message, "nvidia-nccl-cu13"));
  assert_non_null(strstr(bs_err()->message, "BS_NCCL"));
  assert_false(c.spawn);
}

static void test_launcher_with_shared_threads_refused(void **state) {
  (void)state;
  bs_run c = cfg(8);
  c.nprocs = 2; /* 4 ranks a process */
  c.rendezvous = "/tmp/x";
  bs_nccl_info in = info(23007, 1);
  bs_err_clear();
  assert_int_equal(bs_nccl_plan_place(&c, &in), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "mpirun -np 8"));
  /* One rank a process on a shared GPU is fine. */
  c.nprocs = 8;
  bs_err_clear();
  assert_int_equal(bs_nccl_plan_place(&c, &in), BS_OK);
  assert_false(c.spawn);
}

/* Runs that share a GPU go one at a time, with or without an MPS daemon
 * (whose control socket bs_nccl_plan_mps finds). */
static void test_shared_gpu_runs_alone_unless_mps(void **state) {
  (void)state;
  char dir[] = "/tmp/bs_mps.XXXXXX", pipe_path[64];
  assert_non_null(mkdtemp(dir));
  snprintf(pipe_path, sizeof pipe_path, "%s/control", dir);
  setenv("CUDA_MPS_PIPE_DIRECTORY", dir, 1);
  bs_run cs[2] = {cfg(8), cfg(2)};
  assert_int_equal(bs_nccl_plan_jobs(cs, 2, 4), 4); /* no sharing */
  cs[0].shares_gpu = true;
  assert_false(bs_nccl_plan_mps());
  assert_int_equal(bs_nccl_plan_jobs(cs, 2, 4), 1);
  /* The daemon's control socket, as nvidia-cuda-mps-control -d makes it. */
  int sock = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", pipe_path);
  assert_int_equal(bind(sock, (struct sockaddr *)&sa, sizeof sa), 0);
  assert_true(bs_nccl_plan_mps());
  /* Side by side, their collectives starve even under MPS. */
  assert_int_equal(bs_nccl_plan_jobs(cs, 2, 4), 1);
  close(sock);
  unlink(pipe_path);
  rmdir(dir);
  unsetenv("CUDA_MPS_PIPE_DIRECTORY");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_own_gpus_are_threads),
      cmocka_unit_test(test_shared_gpu_spawns),
      cmocka_unit_test(test_old_nccl_refuses_sharing),
      cmocka_unit_test(test_shared_gpu_runs_alone_unless_mps),
      cmocka_unit_test(test_launcher_with_shared_threads_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
