/* One process per replayed rank (bs_replay_procs.h). */
#include "bs_replay_procs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bs_dumps_report.h"
#include "bs_file.h"
#include "bs_fork.h"
#include "bs_num.h"
#include "bs_replay_read.h"
#include "comm/bs_meet.h"
#include "comm/front/bs_comm_report.h"
#include "dev/bs_dev.h"

/* A process's exit status when its world could not be made. */
enum { SETUP_FAILED = 3 };

/* Descriptors the parent needs beyond a pipe per process. */
enum { SPARE_FDS = 64 };

typedef struct procs {
  const bs_replay_procs *p;
  char dir[64];
} procs;

typedef struct child_rank {
  const procs *ps;
  int k;
  /* Its plan's own status: whether its world learnt of another rank's
   * failure before it ended is a race, what its own collectives did not. */
  bool ran;
  bs_status own;
} child_rank;

static void path_of(const procs *ps, const char *what, int k, char *out,
                    size_t n) {
  snprintf(out, n, "%s/%s.%d", ps->dir, what, k);
}

/* Rank k says it reached `what`, then waits until every rank has or
 * wait_ms passed (the parent's deadline still bounds the others). */
static void meet(const procs *ps, int k, const char *what, long long wait_ms) {
  int n = ps->p->wo->size;
  char(*paths)[128] = calloc((size_t)n, sizeof *paths);
  const char **each = calloc((size_t)n, sizeof *each);
  for (int q = 0; paths && each && q < n; q++) {
    path_of(ps, what, q, paths[q], sizeof paths[q]);
    each[q] = paths[q];
  }
  if (!paths || !each || bs_file_publish(paths[k], "", 0) != BS_OK ||
      bs_file_wait_all(each, (size_t)n,
                       (int)(wait_ms < INT_MAX ? wait_ms : INT_MAX)) != BS_OK)
    bs_err_clear();
  free(each);
  free(paths);
}

/* Through its plan, a rank stays in its world (out of every collective)
 * until every rank is through. */
static void through(const procs *ps, int k) {
  meet(ps, k, "done", 2LL * ps->p->wo->timeout_ms + BS_REPLAY_DONE_SLACK_MS);
}

/* The process of this rank (a child runs one). */
static const child_rank *current;

void bs_replay_procs_ready(void) {
  if (current)
    meet(current->ps, current->k, "ready", BS_REPLAY_START_MS);
}

static bs_status rank_body(bs_comm *c, void *arg) {
  child_rank *cr = arg;
  cr->own = cr->ps->p->fn(c, cr->ps->p->args[cr->k]);
  cr->ran = true;
  through(cr->ps, cr->k);
  return cr->own;
}

/* What a process sends: "<status>\n<report bytes>\n<report><flight>". */
static void send_result(int fd, bs_status st, const char *report,
                        const char *flight) {
  bs_buf b = {0};
  bs_buf_printf(&b, "%d\n%zu\n%s%s", (int)st, strlen(report), report,
                flight ? flight : "");
  const char *s = bs_buf_str(&b);
  bs_fork_write_all(fd, s, strlen(s));
  bs_buf_free(&b);
}

/* Process k: rank k's world of one local rank. */
static int child(void *arg, size_t job, int fd) {
  const procs *ps = arg;
  int k = (int)job;
  bs_meet m;
  bs_world *w = NULL;
  bs_dev *dev = NULL;
  bs_world_opts wo = *ps->p->wo;
  wo.size = 1;
  bs_meet_world(&m, ps->dir, ps->p->wo->size, k, true, &wo);
  child_rank cr = {.ps = ps, .k = k};
  void *args[1] = {&cr};
  current = &cr;
  bs_status st = BS_OK;
  if (strcmp(ps->p->device, "host") != 0)
    st = bs_dev_create_for_rank(ps->p->device, k, &dev);
  if (st == BS_OK)
    st = bs_world_create(&wo, &w);
  if (st == BS_OK)
    st = bs_world_run(w, &dev, rank_body, args);
  const char *report = w ? bs_world_report(w) : "";
  char *flight = w ? bs_world_flight_json(w, 0) : NULL;
  if (st != BS_OK && !cr.ran)
    report = bs_err()->message; /* a setup error: no plan ran */
  bs_status sent = cr.ran ? cr.own : st;
  send_result(fd, sent, sent == BS_OK ? "" : report, flight);
  if (!cr.ran) { /* nobody waits for a rank that never started */
    meet(ps, k, "ready", 0);
    meet(ps, k, "done", 0);
  }
  free(flight);
  bs_world_destroy(w);
  bs_dev_destroy(dev);
  return cr.ran ? 0 : SETUP_FAILED;
}

/* What one process sent: its status, its world's report and its flight
 * recorder (both inside the job's payload); got false when it sent none
 * whole. */
typedef struct sent {
  bool got;
  bs_status st;
  const char *report, *flight;
  size_t report_len;
} sent;

/* The number in [0, hi] on the line at *at, which is then the next
 * line's; false when the line holds none. */
static bool line_num(const char **at, long hi, long *out) {
  const char *nl = strchr(*at, '\n');
  if (!nl || !bs_num_longn(*at, (size_t)(nl - *at), 0, hi, out))
    return false;
  *at = nl + 1;
  return true;
}

static sent take(const bs_job_out *o) {
  sent s = {0};
  const char *at = o->payload;
  long code, len;
  if (o->end != BS_JOB_EXITED || !at ||
      !line_num(&at, BS_STATUS_COUNT - 1, &code) ||
      !line_num(&at, LONG_MAX, &len) ||
      (size_t)len > o->len - (size_t)(at - o->payload))
    return s;
  s.report = at;
  s.report_len = (size_t)len;
  s.flight = s.report + len;
  s.st = (bs_status)code;
  s.got = true;
  return s;
}

/* The first line of what process k said, or why it said nothing (then
 * its rank counts as hung). */
static char *verdict_of(const bs_job_out *o, sent *s, double deadline_s) {
  char line[512];
  if (!s->got) {
    s->st = BS_ERR_TIMEOUT;
    if (o->end == BS_JOB_KILLED)
      snprintf(line, sizeof line,
               "its process did not end within %.0f s and was killed",
               deadline_s);
    else if (o->end == BS_JOB_SIGNALED)
      snprintf(line, sizeof line, "its process ended by signal %d", o->code);
    else
      snprintf(line, sizeof line, "its process sent no result (exit status %d)",
               o->code);
    return strdup(line);
  }
  size_t n = strcspn(s->report, "\n");
  n = n < s->report_len ? n : s->report_len;
  if (n)
    snprintf(line, sizeof line, "%.*s", (int)n, s->report);
  else
    snprintf(line, sizeof line, "%s",
             s->st == BS_OK ? "every collective of its plan completed"
                            : bs_status_name(s->st));
  /* "(N ranks, B backend)": how many ranks its world knew of, which
   * differs between processes of one verdict. */
  char *paren = strrchr(line, '(');
  if (paren && paren > line && strstr(paren, " backend)"))
    paren[-1] = '\0';
  return strdup(line);
}

/* "  ranks 0-2,5: VERDICT" for the ranks whose verdict is verdicts[k]. */
static bs_status ranks_saying(char **verdicts, int n, int k, bs_buf *b) {
  bool *pick = calloc((size_t)n, sizeof *pick);
  char *ranks = NULL;
  for (int q = 0; pick && q < n; q++)
    pick[q] = strcmp(verdicts[q], verdicts[k]) == 0;
  if (pick)
    ranks = bs_report_block_ranks(pick, n);
  free(pick);
  if (!ranks)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %d ranks' verdicts", n);
  bs_buf_printf(b, "  %s: %s\n", ranks, verdicts[k]);
  free(ranks);
  return BS_OK;
}

/* The replayed flight recorders as analyze reads them. */
static bs_status analyze(const sent *got, int n, bs_buf *text,
                         bs_dumps_verdict *back) {
  bs_status st = BS_OK;
  const char **flights = calloc((size_t)n, sizeof *flights);
  if (!flights)
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %d flight recorders", n);
  for (int k = 0; k < n; k++)
    flights[k] = got[k].got ? got[k].flight : NULL;
  BS_CHECK(bs_replay_read_back(flights, n, true, text, back));
out:
  free(flights);
  return st;
}

/* A process whose world could not be made fails the replay (bad input
 * for this machine: no GPU, no NCCL), as in one process. */
static bs_status setup_error(const bs_job_out *out, const sent *got, int n) {
  for (int k = 0; k < n; k++)
    if (out[k].end == BS_JOB_EXITED && out[k].code == SETUP_FAILED &&
        got[k].got)
      return bs_err_fail(got[k].st, NULL, "rank %d: %.*s", k,
                         (int)got[k].report_len, got[k].report);
  return BS_OK;
}

static bs_status worse(bs_status a, bs_status b) {
  return a != BS_OK ? a : b;
}

/* A pipe per process in this one: the soft limit raised as far as the hard
 * one allows, else a clear refusal. */
static bs_status enough_fds(int n) {
  struct rlimit rl;
  rlim_t need = (rlim_t)n + SPARE_FDS;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
    return BS_OK;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "%d processes need %llu open files, more than this "
                       "shell's hard limit of %llu (ulimit -Hn)",
                       n, (unsigned long long)need,
                       (unsigned long long)rl.rlim_max);
  rl.rlim_cur = need;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "%d processes need %llu open files: ulimit -n", n,
                       (unsigned long long)need);
  return BS_OK;
}

bs_status bs_replay_procs_run(const bs_replay_procs *p, bs_status *status,
                              bs_buf *text, bs_dumps_verdict *back) {
  bs_status st = BS_OK;
  int n = p->wo->size;
  procs ps = {.p = p, .dir = "/tmp/backstop-replay.XXXXXX"};
  bs_job_out *out = calloc((size_t)n, sizeof *out);
  sent *got = calloc((size_t)n, sizeof *got);
  char **verdicts = calloc((size_t)n, sizeof *verdicts);
  bool made = false;
  *status = BS_OK;
  if (!out || !got || !verdicts)
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %d processes", n);
  BS_CHECK(enough_fds(n));
  if (!mkdtemp(ps.dir))
    BS_FAIL(BS_ERR_INVALID, NULL, "replay: cannot make %s", ps.dir);
  made = true;
  bs_fork f = {.njobs = (size_t)n,
               .parallel = n, /* they meet: all at once */
               .deadline_s = p->deadline_s,
               .child = child,
               .arg = &ps};
  fflush(NULL);
  BS_CHECK(bs_fork_run(&f, out));
  for (int k = 0; k < n; k++)
    got[k] = take(&out[k]);
  BS_CHECK(setup_error(out, got, n));
  for (int k = 0; k < n; k++) {
    if (!(verdicts[k] = verdict_of(&out[k], &got[k], p->deadline_s)))
      BS_FAIL(BS_ERR_NOMEM, NULL, "replay: rank %d's verdict", k);
    *status = worse(*status, got[k].st);
  }
  for (int k = 0; k < n; k++) {
    bool first = true;
    for (int q = 0; q < k && first; q++)
      first = strcmp(verdicts[q], verdicts[k]) != 0;
    if (first)
      BS_CHECK(ranks_saying(verdicts, n, k, text));
  }
  BS_CHECK(analyze(got, n, text, back));
out:
  for (int k = 0; out && verdicts && k < n; k++) {
    bs_fork_job_out_free(&out[k]);
    free(verdicts[k]);
  }
  free(out);
  free(got);
  free(verdicts);
  if (made && bs_file_remove_tree(ps.dir) != BS_OK)
    bs_err_clear(); /* a leftover in /tmp does not change the replay */
  return st;
}
