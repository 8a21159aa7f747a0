/* The replay figure (`backstop bench --replay N`): Backstop's own dumps of
 * an N-rank sim world that runs a training step's collectives (gradient
 * all-reduce, parameter all-gather, reduce-scatter, broadcast, barrier)
 * until its last rank issues a reduce-scatter where the others all-gather,
 * replayed in a child process of its own: the wall time from reading the
 * dumps to the report, that child's own peak memory (the world runs in
 * another child, so none of its pages count), and whether the replay names
 * the world's culprit. */
#include "bs_bench_replay.h"

#include "bs_bench_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bs_buf.h"
#include "bs_file.h"
#include "bs_fork.h"
#include "bs_json_write.h"
#include "comm/bs_comm.h"
#include "dumps/bs_dumps.h"
#include "dumps/bs_replay.h"

enum { STEPS = 2, COUNT = 4 };

/* One rank of the world the dumps come from. */
static bs_status step_rank(bs_comm *c, void *arg) {
  bs_status st = BS_OK;
  int n = bs_comm_size(c), me = bs_comm_rank(c);
  float grad[8] = {0};
  int32_t meta[16] = {0};
  uint16_t *shard = calloc(COUNT * (size_t)n, sizeof *shard);
  (void)arg;
  if (!shard)
    BS_FAIL(BS_ERR_NOMEM, NULL, "bench replay: rank %d", me);
  for (int s = 0; s < STEPS; s++) {
    BS_CHECK(bs_comm_all_reduce(c, grad, grad, 8, BS_F32, BS_SUM));
    BS_CHECK(bs_comm_all_gather(c, shard + (size_t)me * COUNT, shard, COUNT,
                                BS_BF16));
    BS_CHECK(bs_comm_reduce_scatter(c, shard, shard + (size_t)me * COUNT, COUNT,
                                    BS_BF16, BS_SUM));
    BS_CHECK(bs_comm_broadcast(c, meta, 16, BS_I32, 0));
    BS_CHECK(bs_comm_barrier(c));
  }
  if (me == n - 1)
    st = bs_comm_reduce_scatter(c, shard, shard + (size_t)me * COUNT, COUNT,
                                BS_BF16, BS_SUM);
  else
    st = bs_comm_all_gather(c, shard + (size_t)me * COUNT, shard, COUNT,
                            BS_BF16);
out:
  free(shard);
  return st;
}

/* Whom a report blames: its culprit line, up to the reason. */
static void culprit_of(const char *report, char *out, size_t n) {
  const char *at = strstr(report, "  culprit: ");
  const char *from = at ? at + strlen("  culprit: ") : "";
  const char *why = strstr(from, " (");
  snprintf(out, n, "%.*s",
           (int)(why ? (size_t)(why - from) : strcspn(from, "\n")), from);
}

static bs_status write_dump(const char *dir, const bs_world *w, int r) {
  bs_status st = BS_OK;
  char path[512], *json = bs_world_flight_json(w, r);
  bs_buf b = {0};
  if (!json)
    BS_FAIL(BS_ERR_NOMEM, NULL, "bench replay: dump of rank %d", r);
  BS_CHECK(bs_dumps_pickle(json, &b));
  snprintf(path, sizeof path, "%s/rank_%d", dir, r);
  BS_CHECK(bs_file_publish(path, b.s, b.len));
out:
  free(json);
  bs_buf_free(&b);
  return st;
}

/* The world, its culprit, and every rank's dump as a pickle in dir. */
static bs_status make_dumps(int ranks, const char *dir, char *culprit,
                            size_t n) {
  bs_status st = BS_OK;
  bs_world *w = NULL;
  bs_world_opts o = {.size = ranks, .timeout_ms = 600000, .fingerprint = true};
  BS_CHECK(bs_world_create(&o, &w));
  if (bs_world_run(w, NULL, step_rank, NULL) != BS_ERR_DESYNC)
    BS_FAIL(BS_ERR_INTERNAL, NULL, "bench replay: the world did not desync");
  bs_err_clear();
  culprit_of(bs_world_report(w), culprit, n);
  for (int r = 0; r < ranks; r++)
    BS_CHECK(write_dump(dir, w, r));
out:
  bs_world_destroy(w);
  return st;
}

/* What a child works on. */
typedef struct job {
  const char *dir;
  int ranks;
} job;

/* A child's failure, said on stderr (the parent sees its exit code). */
static int why_not(const char *what, int code) {
  fprintf(stderr, "backstop bench: %s: %s\n", what, bs_err()->message);
  return code;
}

/* Job 0 makes the world's dumps (in a child, so that no page of it counts
 * in the replay's peak): "culprit". Job 1 reads and replays them:
 * "seconds collectives peak_kib culprit", its peak its own. */
static int child(void *arg, size_t which, int fd) {
  const job *j = arg;
  char culprit[128], line[256];
  int k;
  if (which == 0) {
    if (make_dumps(j->ranks, j->dir, culprit, sizeof culprit) != BS_OK)
      return why_not("the world", 3);
    k = snprintf(line, sizeof line, "%s\n", culprit);
    return bs_fork_write_all(fd, line, (size_t)k) ? 0 : 5;
  }
  bs_dumps d;
  bs_replay_result res;
  bs_replay_opts o = {.timeout_ms = 600000};
  struct rusage ru;
  double t0 = bs_bench_measure_now_s();
  if (bs_dumps_load(j->dir, NULL, &d) != BS_OK)
    return why_not("reading the dumps", 3);
  bs_status st = bs_replay_run(&d, &o, &res);
  bs_dumps_free(&d);
  if (st != BS_OK)
    return why_not("the replay", 4);
  double seconds = bs_bench_measure_now_s() - t0;
  culprit_of(res.text, culprit, sizeof culprit);
  getrusage(RUSAGE_SELF, &ru);
  k = snprintf(line, sizeof line, "%.6f %zu %ld %s\n", seconds, res.collectives,
               ru.ru_maxrss, culprit);
  bs_replay_result_free(&res);
  return bs_fork_write_all(fd, line, (size_t)k) ? 0 : 5;
}

/* The two jobs one after the other (the replay reads the dumps). */
static bs_status run_jobs(const char *dir, bs_bench_replay *out) {
  bs_status st = BS_OK;
  job j = {.dir = dir, .ranks = out->ranks};
  bs_job_out res[2] = {0};
  bs_fork f = {
      .njobs = 2, .parallel = 1, .deadline_s = 3600, .child = child, .arg = &j};
  long kib = 0;
  BS_CHECK(bs_fork_run(&f, res));
  out->dump_seconds = res[0].duration_ms / 1e3;
  for (int i = 0; i < 2; i++)
    if (res[i].end != BS_JOB_EXITED || res[i].code != 0)
      BS_FAIL(BS_ERR_INTERNAL, NULL, "bench replay: the %s failed (%d)",
              i ? "replay" : "world", res[i].code);
  snprintf(out->world_culprit, sizeof out->world_culprit, "%.*s",
           (int)strcspn(res[0].payload, "\n"), res[0].payload);
  _Static_assert(sizeof out->replay_culprit == 64, "the %63 below");
  if (sscanf(res[1].payload, "%lf %zu %ld %63[^\n]", &out->seconds,
             &out->collectives, &kib, out->replay_culprit) < 3)
    BS_FAIL(BS_ERR_INTERNAL, NULL, "bench replay: no figures from the child");
  out->peak_bytes = (size_t)kib * 1024;
out:
  for (int i = 0; i < 2; i++)
    bs_fork_job_out_free(&res[i]);
  return st;
}

bs_status bs_bench_replay_run(int ranks, bs_bench_replay *out) {
  bs_status st = BS_OK;
  char dir[64] = "";
  memset(out, 0, sizeof *out);
  out->ranks = ranks;
  if (ranks < 2 || ranks > BS_WORLD_MAX_RANKS)
    BS_FAIL(BS_ERR_INVALID, NULL, "--replay: 2..%d ranks, not %d",
            BS_WORLD_MAX_RANKS, ranks);
  /* In memory where it can: 16,384 ranks' dumps are 1.9 GB. */
  BS_CHECK(bs_file_scratch("bs_bench_replay", dir, sizeof dir));
  st = run_jobs(dir, out);
  out->agrees = st == BS_OK && out->world_culprit[0] &&
                strcmp(out->world_culprit, out->replay_culprit) == 0;
  if (bs_file_remove_tree(dir) != BS_OK)
    bs_err_clear(); /* a leftover does not change the figure */
out:
  return st;
}

/* The culprit is replay's own words: escaped as JSON's rules say. */
static char *replay_json(const bs_bench_replay *r) {
  bs_buf b = {0};
  bs_buf_printf(&b,
                "{\"replay\": {\"ranks\": %d, \"collectives\": %zu, "
                "\"seconds\": %.3f, \"peak_bytes\": %zu",
                r->ranks, r->collectives, r->seconds, r->peak_bytes);
  bs_json_write_field_str(&b, ", ", "culprit", r->replay_culprit);
  bs_buf_printf(&b, ", \"agrees\": %s, \"dump_seconds\": %.3f}}\n",
                r->agrees ? "true" : "false", r->dump_seconds);
  return bs_buf_take(&b);
}

char *bs_bench_replay_text(const bs_bench_replay *r, bool json) {
  char *s = NULL;
  if (json)
    return replay_json(r);
  int n = asprintf(&s,
                   "replay of %d ranks' dumps (%zu collectives): %.2f s, peak "
                   "%.0f MiB; culprit %s (%s the world's report)\n",
                   r->ranks, r->collectives, r->seconds,
                   (double)r->peak_bytes / (1 << 20), r->replay_culprit,
                   r->agrees ? "as" : "NOT as");
  return n < 0 ? NULL : s;
}
