/* A world's footprint against the machine's room (plan/bs_footprint.h):
 * linear in the ranks but for the padding, the room from a cgroup's
 * files and meminfo, the largest world that fits, and the message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_actor.h"
#include "bs_limits.h"
#include "comm/bs_comm.h"
#include "model/bs_config.h"
#include "model/bs_model.h"
#include "model/bs_model_parse.h"
#include "plan/bs_footprint.h"

static char dir[64];

static void put(const char *name, const char *text) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void drop(const char *name) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  unlink(path);
}

static double of(const char *model, double scale, int ranks,
                 bs_footprint_ranks as, bs_footprint *fp) {
  bs_model_spec m = {0};
  bs_config cfg;
  bs_config_defaults(&cfg);
  assert_int_equal(bs_model_preset(model, scale, &m), BS_OK);
  assert_int_equal(bs_footprint_of(&m, &cfg, ranks, as, fp), BS_OK);
  bs_model_free(&m);
  return fp->bytes;
}

/* A rank costs at least its fiber and its engine, more with a bigger
 * model, with a thread or a process of its own; the world is ranks x
 * that plus the shared part (the fixed costs dominate the tiny model). */
static void test_linear_in_ranks(void **state) {
  (void)state;
  bs_footprint a, b, d, s;
  of("tiny", 1.0, 1024, BS_FOOTPRINT_SCHEDULED, &a);
  of("tiny", 1.0, 2048, BS_FOOTPRINT_SCHEDULED, &b);
  assert_true(a.per_rank >= BS_FOOTPRINT_RANK_BYTES);
  assert_true(a.bytes == 1024 * a.per_rank + a.shared);
  assert_true(b.bytes > a.bytes && b.bytes < 2.2 * a.bytes); /* not 4x */
  assert_int_equal(a.tasks, 256 + 1 + 4); /* engines shared above 256 */
  of("dense", 1.0, 1024, BS_FOOTPRINT_SCHEDULED, &d);
  assert_true(d.per_rank > a.per_rank);
  /* A thread a rank, and ranks at once hold their grads or staging,
   * which a scheduled world's drop before they wait. */
  of("tiny", 1.0, 1024, BS_FOOTPRINT_THREADS, &s);
  double held = s.per_rank - a.per_rank - BS_FOOTPRINT_THREAD_BYTES;
  assert_true(held > 0 && held < 1e6);
  assert_int_equal(s.tasks, 1024 + 256 + 4);
  of("tiny", 1.0, 1024, BS_FOOTPRINT_SPAWN, &s); /* a process, an engine */
  assert_true(fabs(s.per_rank - a.per_rank - held - BS_FOOTPRINT_PROC_BYTES -
                   0.75 * BS_FOOTPRINT_ENGINE_BYTES) < 1e-3);
  assert_int_equal(s.tasks, 3 * 1024 + 4);
  of("tiny", 1.0, 256, BS_FOOTPRINT_THREADS, &s); /* an engine a rank */
  assert_int_equal(s.tasks, 2 * 256 + 4);
}

/* A cgroup's limit and use files: with no limit in them (none) the room
 * is MemAvailable's (2 MiB), with a limit 1000 above the use it is that. */
static void limit_files(const char *limit, const char *use, const char *none,
                        const char *by_name) {
  char by[64], meminfo[128];
  snprintf(meminfo, sizeof meminfo, "%s/meminfo", dir);
  put(limit, none);
  put(use, "5\n");
  assert_true(bs_footprint_bytes_room(dir, meminfo, by, sizeof by) ==
              2048.0 * 1024);
  assert_string_equal(by, "MemAvailable");
  put(limit, "1005\n");
  assert_true(bs_footprint_bytes_room(dir, meminfo, by, sizeof by) == 1000);
  assert_string_equal(by, by_name);
  drop(limit);
  drop(use);
}

/* The lower of MemAvailable and the cgroup's limit less its use (v2's
 * files, v1's); "max" and v1's near-2^63 are no limit; missing files say
 * nothing. */
static void test_room_from_files(void **state) {
  (void)state;
  char by[64], meminfo[128];
  snprintf(meminfo, sizeof meminfo, "%s/meminfo", dir);
  put("meminfo", "MemTotal: 100 kB\nMemAvailable: 2048 kB\n");
  limit_files("memory.max", "memory.current", "max\n", "cgroup memory.max");
  limit_files("memory.limit_in_bytes", "memory.usage_in_bytes",
              "9223372036854771712\n", "cgroup memory.limit_in_bytes");
  drop("meminfo");
  assert_true(bs_footprint_bytes_room(dir, meminfo, by, sizeof by) == 0);
}

/* The tiny model, the default configuration, a footprint and why it
 * does not fit: each test's. */
static struct {
  bs_model_spec m;
  bs_config cfg;
  bs_footprint fp;
  char why[300];
} t;

static void tiny(void) {
  memset(&t, 0, sizeof t);
  bs_config_defaults(&t.cfg);
  assert_int_equal(bs_model_preset("tiny", 1.0, &t.m), BS_OK);
}

/* The largest world fits and one more does not; a room too small for
 * one rank gives 0; an unknown room holds the world's limit. */
static void test_largest_fits(void **state) {
  (void)state;
  tiny();
  bs_room room = {.bytes = 1.0 * (1u << 30), .tasks = 1000000};
  snprintf(room.bytes_by, sizeof room.bytes_by, "test");
  int n = bs_footprint_largest(&t.m, &t.cfg, BS_FOOTPRINT_SCHEDULED, &room);
  assert_true(n > 1 && n < BS_WORLD_MAX_RANKS);
  assert_int_equal(
      bs_footprint_of(&t.m, &t.cfg, n, BS_FOOTPRINT_SCHEDULED, &t.fp), BS_OK);
  assert_true(bs_footprint_fits(&t.fp, &room, t.why, sizeof t.why));
  assert_int_equal(
      bs_footprint_of(&t.m, &t.cfg, n + 1, BS_FOOTPRINT_SCHEDULED, &t.fp),
      BS_OK);
  assert_false(bs_footprint_fits(&t.fp, &room, t.why, sizeof t.why));
  assert_non_null(strstr(t.why, "GiB of host memory ("));
  assert_non_null(strstr(t.why, "MiB a rank + "));
  assert_non_null(strstr(t.why, "1.00 GiB available (test)"));
  room.bytes = 1000;
  assert_int_equal(
      bs_footprint_largest(&t.m, &t.cfg, BS_FOOTPRINT_SCHEDULED, &room), 0);
  room = (bs_room){.tasks = 201};
  snprintf(room.tasks_by, sizeof room.tasks_by, "kernel.pid_max");
  assert_int_equal(
      bs_footprint_largest(&t.m, &t.cfg, BS_FOOTPRINT_THREADS, &room), 98);
  assert_int_equal(
      bs_footprint_of(&t.m, &t.cfg, 99, BS_FOOTPRINT_THREADS, &t.fp), BS_OK);
  assert_false(bs_footprint_fits(&t.fp, &room, t.why, sizeof t.why));
  assert_string_equal(t.why, "needs 202 threads and processes (its ranks', "
                             "its engines'), 201 free (kernel.pid_max)");
  /* Fibers of one thread: the engines' processes only. */
  assert_int_equal(
      bs_footprint_largest(&t.m, &t.cfg, BS_FOOTPRINT_SCHEDULED, &room), 196);
  room = (bs_room){0};
  assert_int_equal(
      bs_footprint_largest(&t.m, &t.cfg, BS_FOOTPRINT_SCHEDULED, &room),
      BS_WORLD_MAX_RANKS);
  bs_model_free(&t.m);
}

/* A world's threads share one process's mappings: 16,384 MainCast ranks
 * (some 6.3 mappings each, measured) do not fit the default
 * vm.max_map_count of 65,530 and are refused naming it, with the largest
 * world that fits, unless the kernel has guard regions; as many Normal
 * ranks (2.4-3.1) do; a process per rank (--spawn) holds one rank's. */
static void test_mappings_counted(void **state) {
  (void)state;
  tiny();
  bs_room room = {.maps = 65530};
  assert_int_equal(
      bs_footprint_of(&t.m, &t.cfg, 16384, BS_FOOTPRINT_SCHEDULED, &t.fp),
      BS_OK);
  assert_true(bs_footprint_fits(&t.fp, &room, t.why, sizeof t.why));
  t.cfg.rematerialize = true;
  assert_int_equal(
      bs_footprint_of(&t.m, &t.cfg, 16384, BS_FOOTPRINT_SCHEDULED, &t.fp),
      BS_OK);
  assert_false(bs_footprint_fits(&t.fp, &room, t.why, sizeof t.why));
  assert_non_null(strstr(t.why, "memory mappings in one process"));
  assert_non_null(strstr(t.why, "vm.max_map_count allows 65530"));
  int n = bs_footprint_largest(&t.m, &t.cfg, BS_FOOTPRINT_SCHEDULED, &room);
  assert_true(n > 4096 && n < 16384);
  room.guards = true; /* stacks and paused memory split no mapping */
  assert_true(bs_footprint_fits(&t.fp, &room, t.why, sizeof t.why));
  room.guards = false;
  assert_int_equal(
      bs_footprint_of(&t.m, &t.cfg, 16384, BS_FOOTPRINT_SPAWN, &t.fp), BS_OK);
  assert_true(t.fp.maps < 2 * BS_FOOTPRINT_MAPS);
  bs_model_free(&t.m);
}

/* A world of threads is one process: every rank's stacks and DDP buffers
 * in its address space, refused past RLIMIT_AS naming it; a process per
 * rank holds one rank's buffers. */
static void test_address_counted(void **state) {
  (void)state;
  tiny();
  assert_int_equal(
      bs_footprint_of(&t.m, &t.cfg, 4096, BS_FOOTPRINT_SCHEDULED, &t.fp),
      BS_OK);
  assert_true(t.fp.address > 4096.0 * (double)bs_world_stacks_reserve_bytes());
  bs_room room = {.address = t.fp.address};
  assert_true(bs_footprint_fits(&t.fp, &room, t.why, sizeof t.why));
  room.address = 2.0 * (1u << 30);
  if (t.fp.address > room.address) { /* not in a sanitizer's build */
    assert_false(bs_footprint_fits(&t.fp, &room, t.why, sizeof t.why));
    assert_non_null(strstr(t.why, "GiB of address space in one process"));
    assert_non_null(strstr(t.why, "RLIMIT_AS (ulimit -v) leaves 2.00 GiB"));
    int n = bs_footprint_largest(&t.m, &t.cfg, BS_FOOTPRINT_SCHEDULED, &room);
    assert_true(n > 1 && n < 4096);
  }
  assert_int_equal(
      bs_footprint_of(&t.m, &t.cfg, 4096, BS_FOOTPRINT_SPAWN, &t.fp), BS_OK);
  assert_true(t.fp.address < (1u << 30));
  bs_model_free(&t.m);
}

/* This machine's room says where it comes from. */
static void test_room_here(void **state) {
  (void)state;
  bs_room r;
  bs_footprint_room(&r);
  assert_true(r.bytes > 0);
  assert_true(strlen(r.bytes_by) > 0);
  assert_true(r.maps > 0); /* Linux has vm.max_map_count */
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/bs_footprint_XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return rmdir(dir);
}

/* Past 4096 ranks a bucket holds an element a rank, but a dense buffer in
 * model chunks keeps its buckets: moe's in two chunks still lays out on
 * 16,384 ranks (its dense buffer as one bucket could not be chained). */
static void test_bucket_target(void **state) {
  (void)state;
  bs_model_spec m = {0};
  bs_config cfg;
  bs_config_defaults(&cfg);
  assert_int_equal(bs_actor_layout_bucket_numel(&cfg, 4), 4096);
  assert_int_equal(bs_actor_layout_bucket_numel(&cfg, 16384), 16384);
  cfg.sim.optimizer_chunks = 2;
  assert_int_equal(bs_actor_layout_bucket_numel(&cfg, 16384), 4096);
  assert_int_equal(bs_model_preset("moe", 1.0, &m), BS_OK);
  assert_int_equal(bs_actor_layout_check(&m, 16384, &cfg), BS_OK);
  bs_model_free(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_linear_in_ranks),
      cmocka_unit_test(test_room_from_files),
      cmocka_unit_test(test_largest_fits),
      cmocka_unit_test(test_bucket_target),
      cmocka_unit_test(test_mappings_counted),
      cmocka_unit_test(test_address_counted),
      cmocka_unit_test(test_room_here),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
