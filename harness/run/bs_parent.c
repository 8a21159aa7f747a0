#include "run/bs_parent.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "bs_fork.h"
#include "bs_stop.h"
#include "catalog/bs_scenario.h"
#include "report/bs_report.h"

typedef struct exec_state {
  const bs_run *cfgs;
  size_t n, started, done;
  bool *live; /* jobs running now, for the status line */
  const bs_parent_opts *o;
  bs_result *res;
} exec_state;

static int child(void *arg, size_t job, int fd) {
  exec_state *x = arg;
  return x->o->child(&x->cfgs[job], fd);
}

static double deadline_of(void *arg, size_t job) {
  exec_state *x = arg;
  return bs_parent_limit_s(&x->cfgs[job]);
}

static void worker_start(void *arg, int slot) {
  exec_state *x = arg;
  x->o->start(slot);
}

static bool worker_keep(void *arg, int code) {
  exec_state *x = arg;
  return x->o->keep(code);
}

/* Whether the runs may share workers: every rank a thread of the child on
 * the sim and the host (processes and GPUs: a child each, as the rank
 * pool's runs). */
static bool shareable(const bs_parent_opts *o, const bs_run *cfgs, size_t n) {
  if (!o->keep || o->ended)
    return false;
  for (size_t i = 0; i < n; i++)
    if (cfgs[i].spawn || cfgs[i].rendezvous ||
        strcmp(cfgs[i].backend, "sim") != 0 ||
        strcmp(cfgs[i].device, "host") != 0)
      return false;
  return true;
}

double bs_parent_limit_s(const bs_run *cfg) {
  if (cfg->schedule.policy == BS_SCHED_THREADS)
    return cfg->deadline_s;
  double g = 5 * cfg->deadline_s;
  return g > BS_PARENT_GUARD_S ? g : BS_PARENT_GUARD_S;
}

/* Killed past its real-time limit: a hang on real threads, the guard's
 * crash on a scheduled world (whose own deadline is virtual). */
static void killed(const bs_run *cfg, bs_result *r, const char *what) {
  bool guard = cfg->schedule.policy != BS_SCHED_THREADS;
  char *had = r->note; /* what the dump said of itself ("artifacts: ") */
  r->note = NULL;
  r->verdict = guard ? BS_CRASH : r->verdict == BS_FAIL ? BS_FAIL : BS_HANG;
  if (guard)
    bs_result_set_note(r,
                       "killed by the real-time guard after %g s%s: a "
                       "scheduled run's deadline is on its virtual clock, "
                       "so this is a bug of the scheduler or of a wait it "
                       "cannot see, not a verdict on the run%s%s",
                       bs_parent_limit_s(cfg), what, had ? "; " : "",
                       had ? had : "");
  else
    bs_result_set_note(r, "killed past the %g s deadline%s%s%s",
                       cfg->deadline_s, what, had ? "; " : "", had ? had : "");
  free(had);
}

/* A result for a run that left none of its own. */
static void without_result(const bs_run *cfg, const bs_job_out *j,
                           bs_result *r) {
  if (bs_result_from_run(cfg, r) != BS_OK)
    memset(r, 0, sizeof *r);
  if (j->end == BS_JOB_INTERRUPTED || j->end == BS_JOB_NOT_STARTED) {
    r->verdict = BS_INTERRUPTED;
    bs_result_set_note(r, "%s %s", bs_stop_name(),
                       j->end == BS_JOB_NOT_STARTED
                           ? "before it started"
                           : "while it ran (every process of it killed)");
  } else if (j->end == BS_JOB_KILLED) {
    r->verdict = BS_HANG;
    killed(cfg, r, "");
  } else if (j->end == BS_JOB_SIGNALED) {
    r->verdict = BS_CRASH;
    bs_result_set_note(r, "died on signal %d (%s)", j->code,
                       strsignal(j->code));
  } else {
    r->verdict = BS_CRASH;
    bs_result_set_note(r, "exited with status %d without a result: %s", j->code,
                       bs_err()->message);
  }
  bs_err_clear();
}

/* A run past its deadline that dumped: its own result says what it left,
 * and whether its watchdog missed a wait (a hang) or the deadline cut off
 * waits the watchdog still bounded (a fail, bs_hangdump.c). */
static bool dumped(const bs_run *cfg, const bs_job_out *j, bs_result *r) {
  if (j->end != BS_JOB_KILLED || !j->payload || !j->len)
    return false;
  if (bs_result_pack_read(j->payload, j->len, r) != BS_OK) {
    bs_err_clear();
    return false;
  }
  killed(cfg, r,
         ", after dumping its ranks' flight recorders and where they were");
  return true;
}

static void collect(const bs_run *cfg, const bs_job_out *j, bs_result *r) {
  bool exited = j->end == BS_JOB_EXITED && j->code == 0;
  if (dumped(cfg, j, r)) {
    /* its own result, artifacts listed */
  } else if (!exited || !j->payload ||
             bs_result_pack_read(j->payload, j->len, r) != BS_OK) {
    if (exited && !bs_err()->message[0])
      bs_err_fail(BS_ERR_INVALID, NULL, "empty output");
    without_result(cfg, j, r);
  }
  /* The parent's clock: it includes the fork and what the child missed. */
  r->duration_ms = j->duration_ms;
  r->seed = cfg->seed;
}

static void status_line(const exec_state *x) {
  if (!x->o->tty || !x->o->out || x->done == x->n)
    return;
  fprintf(x->o->out, "\r\033[K[%zu/%zu] running:", x->done, x->n);
  for (size_t i = 0; i < x->n; i++)
    if (x->live[i])
      fprintf(x->o->out, " %s", x->cfgs[i].scn->name);
  fflush(x->o->out);
}

static void event(void *arg, size_t job, const bs_job_out *ended) {
  exec_state *x = arg;
  x->live[job] = !ended;
  if (!ended) {
    x->started++;
    status_line(x);
    return;
  }
  bs_job_out copy = *ended, *j = &copy;
  if (x->o->ended)
    x->o->ended(job, j);
  collect(&x->cfgs[job], j, &x->res[job]);
  if (x->o->settle)
    x->o->settle(&x->cfgs[job], &x->res[job], x->o->settle_arg);
  x->done++;
  FILE *out = x->o->out;
  if (out && x->o->tty)
    fprintf(out, "\r\033[K");
  /* Of the runs a signal stopped, those it cut short are shown. */
  if (out && j->end != BS_JOB_NOT_STARTED &&
      (x->o->verbosity >= 0 || x->res[job].verdict != BS_PASS))
    bs_report_table_line(out, &x->res[job], x->o->verbosity);
  status_line(x);
  bs_verdict v = x->res[job].verdict;
  /* A run a signal cut short is not done. */
  if (x->o->progress && v != BS_INTERRUPTED) {
    bs_progress_add(x->o->progress,
                    v == BS_FAIL || v == BS_HANG || v == BS_CRASH,
                    v == BS_VACUOUS);
    bs_progress_show(x->o->progress, NULL);
  }
}

void bs_parent_progress(bs_parent_opts *o, bs_progress *line, const char *label,
                        size_t n) {
  bs_progress_init(line, o->out && !o->tty ? stderr : NULL, label);
  line->total = n;
  o->progress = line;
}

double bs_parent_grace_s(double deadline_s) {
  double g = deadline_s / 4;
  return g < 1 ? 1 : g > 10 ? 10 : g;
}

bs_status bs_parent_run(const bs_run *cfgs, size_t n, const bs_parent_opts *o,
                        bs_result *out) {
  bs_status st = BS_OK;
  bs_job_out *jobs = calloc(n ? n : 1, sizeof *jobs);
  exec_state x = {.cfgs = cfgs, .n = n, .o = o, .res = out};
  double deadline = 0;
  memset(out, 0, n * sizeof *out);
  x.live = calloc(n ? n : 1, sizeof *x.live);
  if (!jobs || !x.live)
    BS_FAIL(BS_ERR_NOMEM, NULL, "exec: %zu jobs", n);
  for (size_t i = 0; i < n; i++) {
    double limit = bs_parent_limit_s(&cfgs[i]);
    deadline = limit > deadline ? limit : deadline;
  }
  bool reuse = shareable(o, cfgs, n);
  bs_fork r = {.njobs = n,
               .parallel = o->jobs,
               .deadline_s = deadline,
               .deadline_of = deadline_of,
               .dump_signal = BS_DUMP_SIGNAL,
               .grace_s = bs_parent_grace_s(deadline),
               .child = child,
               .event = event,
               .arg = &x,
               .reuse = reuse,
               .start = reuse && o->start ? worker_start : NULL,
               .keep = reuse ? worker_keep : NULL};
  BS_CHECK(bs_fork_run(&r, jobs));
out:
  for (size_t i = 0; jobs && i < n; i++)
    bs_fork_job_out_free(&jobs[i]);
  free(jobs);
  free(x.live);
  return st;
}
