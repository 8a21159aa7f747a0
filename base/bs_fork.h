/* The runner: each job in a forked child, a hard deadline enforced by the
 * parent. Fork happens before any thread exists in the parent (the
 * parent never creates one); each child gets its own process group, so a
 * run that must be killed takes its engine processes with it. The child
 * writes its result to a pipe; the parent polls every pipe, so a child
 * that writes a lot never blocks, and kills a child past its deadline:
 * first it asks (dump_signal), so that a hung run leaves what it knows,
 * then, grace_s later, it kills.
 *
 * With reuse, a child is a worker that serves job after job (at most
 * `parallel` of them): each job gets a pipe of its own (its end passed
 * over the worker's channel), and after it the worker says whether it is
 * still as a fresh one would be (keep); one that is not, that died, or
 * whose job passed its deadline is gone and a fresh one forked for the
 * next job. Nothing else changes: a job's end, code and output are what a
 * child of its own would have given. */
#ifndef BS_FORK_H
#define BS_FORK_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_err.h"

typedef enum bs_job_end {
  BS_JOB_EXITED = 0, /* code: the exit status */
  BS_JOB_SIGNALED,   /* code: the signal that ended it */
  BS_JOB_KILLED, /* past the deadline: asked to dump, then ended or killed */
  BS_JOB_INTERRUPTED, /* killed as a signal stopped the command (bs_stop.h);
                         code: that signal */
  BS_JOB_NOT_STARTED, /* a signal stopped the command first; code: it */
} bs_job_end;

typedef struct bs_job_out {
  bs_job_end end;
  int code;
  char *payload; /* everything the child wrote (NUL-terminated) */
  size_t len;
  double duration_ms;
} bs_job_out;

/* Runs in the child; writes its result to fd; returns the exit status. */
typedef int (*bs_child_fn)(void *arg, size_t job, int fd);
/* Called in the parent as a job starts (out == NULL) and ends. */
typedef void (*bs_job_event_fn)(void *arg, size_t job, const bs_job_out *out);

typedef struct bs_fork {
  size_t njobs;
  int parallel;      /* at most this many children at once (>= 1) */
  double deadline_s; /* per job, from its start */
  /* Job `job`'s deadline instead (NULL: deadline_s for every job). */
  double (*deadline_of)(void *arg, size_t job);
  int dump_signal; /* sent to the child at its deadline; 0: kill at once */
  double grace_s;  /* from the signal to the kill */
  bs_child_fn child;
  bs_job_event_fn event; /* may be NULL */
  void *arg;
  /* Workers (above): reuse them; start(arg, slot) runs once in each as it
   * is forked (slot: which of the `parallel` it is), keep(arg, code) after
   * each of its jobs (code: the child's return), in the worker: whether it
   * may serve another. NULLs: none, and keep always. */
  bool reuse;
  void (*start)(void *arg, int slot);
  bool (*keep)(void *arg, int code);
} bs_fork;

/* out holds njobs entries, filled in job order whatever the schedule.
 * Once a caught signal came (bs_stop.h), the running children are killed
 * and the rest never start. Fails only when the runner itself cannot go on
 * (fork or pipe failed). */
bs_status bs_fork_run(const bs_fork *r, bs_job_out *out);
void bs_fork_job_out_free(bs_job_out *o);

/* Writes all of buf to fd (retrying partial writes); 0 on error. */
int bs_fork_write_all(int fd, const void *buf, size_t n);
/* Ends a forked process: _exit (no atexit handlers, no second flush of the
 * parent's stdio), after writing coverage counters in coverage builds
 * (gcov writes them only at exit). Every forked child that runs project
 * code ends here, tests' included, so what children run is counted. */
_Noreturn void bs_fork_exit(int code);

#endif
