#include "bs_fork.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bs_buf.h"
#include "bs_fork_chan.h"
#include "bs_span.h"
#include "bs_stop.h"

/* A child that closed its pipe gets this long between polls to exit. */
#define REAP_POLL_MS 2
/* After the kill: how long what a child wrote may take to drain. */
#define DRAIN_MS 1000
/* The longest one poll waits (a far deadline is waited for in steps). */
#define STEP_MAX_MS 60000
/* A worker told to leave (its channel closed, or its word said so) gets
 * this long to exit by itself (writing its coverage counters and spans). */
#define LEAVE_MS 2000
#define IDLE_MS (3600 * 1000)

typedef struct slot {
  pid_t pid; /* the child (a worker: busy or idle); 0: none */
  int fd;    /* the job's pipe; -1 once the child closed its end */
  int ctl;   /* reuse: the worker's channel; -1: none */
  bool busy; /* a job runs in it */
  bool worded;
  bs_fork_word word; /* reuse: how the worker says its job ended */
  size_t job;
  double t0;
  double asked; /* when it was asked to dump; 0: not yet */
  bs_buf buf;
} slot;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int bs_fork_write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return 0;
    p += w;
    n -= (size_t)w;
  }
  return 1;
}

#ifdef BS_COVERAGE
void __gcov_dump(void);
#endif

void bs_fork_exit(int code) {
  bs_span_flush();
#ifdef BS_COVERAGE
  __gcov_dump();
#endif
  _exit(code);
}

void bs_fork_job_out_free(bs_job_out *o) {
  free(o->payload);
  memset(o, 0, sizeof *o);
}

/* The child starts from default signal handling: a handler inherited from
 * the parent (a test harness's, say) must not turn a crash into anything
 * but a death by that signal. */
static void default_signals(void) {
  static const int sigs[] = {SIGSEGV, SIGBUS,  SIGFPE, SIGILL, SIGABRT,
                             SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD};
  sigset_t none;
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    signal(sigs[i], SIG_DFL);
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

/* In a new child: the read ends of the other jobs' pipes and the other
 * workers' channels are the parent's (with hundreds of jobs at once,
 * holding them would run the child out of descriptors). */
static void close_others(const slot *slots, int nslots, const slot *mine) {
  for (int i = 0; i < nslots; i++) {
    if (&slots[i] == mine || !slots[i].pid)
      continue;
    if (slots[i].fd >= 0)
      close(slots[i].fd);
    if (slots[i].ctl >= 0)
      close(slots[i].ctl);
  }
}

/* A worker, the slot-th: serves the jobs its channel sends until it is
 * closed or a job leaves it unfit (r->keep), then exits. It waits an hour
 * at most for the next (its parent is alive all along: it dies with it). */
static _Noreturn void serve(const bs_fork *r, int ctl, int slot) {
  size_t job;
  int fd;
  if (r->start)
    r->start(r->arg, slot);
  while (bs_fork_chan_get(ctl, &job, sizeof job, &fd, IDLE_MS) && fd >= 0) {
    bs_err_clear(); /* each job starts from no error, as a fresh child */
    int code = r->child(r->arg, job, fd);
    close(fd);
    bs_fork_word w = {.code = code, .keep = !r->keep || r->keep(r->arg, code)};
    if (!bs_fork_chan_put(ctl, &w, sizeof w, -1) || !w.keep)
      bs_fork_exit(code);
  }
  bs_fork_exit(0);
}

/* Forks the child of slot s: its own process group, default signals,
 * dying with the parent; in it, body(r, mine, arg) never returns. */
static bs_status fork_child(const bs_fork *r, slot *slots, int nslots, slot *s,
                            int mine, int theirs, size_t job) {
  fflush(NULL); /* the child must not flush the parent's buffers again */
  bs_span_mark_fork();
  pid_t parent = getpid(), pid = fork();
  if (pid < 0)
    return bs_err_fail(BS_ERR_INTERNAL, NULL, "runner: fork: %s",
                       strerror(errno));
  if (pid == 0) {
    bs_span_forked();
    close(theirs);
    close_others(slots, nslots, s);
    setpgid(0, 0);
    default_signals();
    bs_stop_child(parent);
    if (r->reuse)
      serve(r, mine, (int)(s - slots));
    bs_fork_exit(r->child(r->arg, job, mine));
  }
  setpgid(pid, pid); /* also here: whichever runs first wins the race */
  close(mine);
  s->pid = pid;
  return BS_OK;
}

/* A worker for slot s: its channel, then the fork. */
static bs_status fork_worker(const bs_fork *r, slot *slots, int nslots,
                             slot *s) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    return bs_err_fail(BS_ERR_INTERNAL, NULL, "runner: socketpair: %s",
                       strerror(errno));
  bs_status st = fork_child(r, slots, nslots, s, sv[1], sv[0], 0);
  if (st != BS_OK) {
    close(sv[0]);
    close(sv[1]);
    return st;
  }
  s->ctl = sv[0];
  return BS_OK;
}

/* The job to slot s's worker (forked first when it has none), its pipe's
 * write end with it. */
static bs_status hand_job(const bs_fork *r, slot *slots, int nslots, slot *s,
                          size_t job) {
  bs_status st = BS_OK;
  int fds[2];
  if (!s->pid)
    BS_CHECK(fork_worker(r, slots, nslots, s));
  if (pipe2(fds, O_CLOEXEC) != 0)
    BS_FAIL(BS_ERR_INTERNAL, NULL, "runner: pipe: %s", strerror(errno));
  bool sent = bs_fork_chan_put(s->ctl, &job, sizeof job, fds[1]);
  close(fds[1]);
  s->fd = fds[0];
  /* A worker that cannot take it has died: the job ends as it does. */
  if (!sent) {
    close(s->ctl);
    s->ctl = -1;
  }
out:
  return st;
}

static bs_status start(const bs_fork *r, slot *slots, int nslots, slot *s,
                       size_t job) {
  bs_status st = BS_OK;
  int fds[2];
  if (r->reuse) {
    BS_CHECK(hand_job(r, slots, nslots, s, job));
  } else {
    if (pipe2(fds, O_CLOEXEC) != 0)
      BS_FAIL(BS_ERR_INTERNAL, NULL, "runner: pipe: %s", strerror(errno));
    st = fork_child(r, slots, nslots, s, fds[1], fds[0], job);
    if (st != BS_OK) {
      close(fds[0]);
      close(fds[1]);
      goto out;
    }
    s->fd = fds[0];
  }
  s->busy = true;
  s->worded = false;
  s->job = job;
  s->t0 = now_ms();
  s->asked = 0;
  if (r->event)
    r->event(r->arg, job, NULL);
out:
  return st;
}

/* Slot s has no child any more: its descriptors closed, free for a new
 * one. */
static void forget(slot *s) {
  if (s->fd >= 0)
    close(s->fd);
  if (s->ctl >= 0)
    close(s->ctl);
  bs_buf_free(&s->buf);
  *s = (slot){.fd = -1, .ctl = -1};
}

/* Waits up to LEAVE_MS for the child of s to exit (it was told to), then
 * kills it; its group is swept either way (what it started: engines). */
static void leave(slot *s) {
  double until = now_ms() + LEAVE_MS;
  while (waitpid(s->pid, NULL, WNOHANG) == 0) {
    if (now_ms() >= until) {
      kill(s->pid, SIGKILL);
      while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
        ;
      break;
    }
    struct timespec nap = {0, 1000000L};
    nanosleep(&nap, NULL);
  }
  kill(-s->pid, SIGKILL);
}

/* The job of s ended: its output taken. gone: its child is gone too
 * (reaped; its group is swept of what the run left behind). */
static void finish(const bs_fork *r, slot *s, bs_job_out *out, bs_job_end end,
                   int code, bool gone) {
  size_t job = s->job;
  bs_job_out *o = &out[job];
  o->end = end;
  o->code = code;
  o->duration_ms = now_ms() - s->t0;
  o->len = s->buf.len;
  o->payload = bs_buf_take(&s->buf);
  if (s->fd >= 0)
    close(s->fd);
  s->fd = -1;
  s->busy = false;
  if (gone) {
    kill(-s->pid, SIGKILL);
    forget(s);
  }
  if (r->event)
    r->event(r->arg, job, o);
}

static void drain(slot *s);

/* What a child that ended (or was killed) wrote before: the pipe ends
 * with it and its group, unless a descendant that left the group holds
 * it, so the wait is bounded. */
static void drain_all(slot *s) {
  for (double until = now_ms() + DRAIN_MS; s->fd >= 0 && now_ms() < until;) {
    struct pollfd p = {.fd = s->fd, .events = POLLIN};
    if (poll(&p, 1, (int)(until - now_ms()) + 1) > 0)
      drain(s);
  }
}

static void reaped(const bs_fork *r, slot *s, bs_job_out *out, int ws) {
  drain_all(s);
  if (s->asked) /* past its deadline, whatever it did then */
    finish(r, s, out, BS_JOB_KILLED, WIFSIGNALED(ws) ? WTERMSIG(ws) : 0, true);
  else if (WIFSIGNALED(ws))
    finish(r, s, out, BS_JOB_SIGNALED, WTERMSIG(ws), true);
  else
    finish(r, s, out, BS_JOB_EXITED, WEXITSTATUS(ws), true);
}

/* The worker said its job ended and closed the job's pipe: the job's end
 * is the child's return; the worker stays for the next one unless it said
 * it must not (then it exits by itself). */
static void answered(const bs_fork *r, slot *s, bs_job_out *out) {
  bool keep = s->word.keep;
  finish(r, s, out, BS_JOB_EXITED, s->word.code, false);
  if (!keep) {
    leave(s);
    forget(s);
  }
}

static void drain(slot *s) {
  char chunk[65536];
  ssize_t n = read(s->fd, chunk, sizeof chunk);
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return;
  if (n > 0) {
    bs_buf_append(&s->buf, chunk, (size_t)n);
    return;
  }
  close(s->fd);
  s->fd = -1;
}

/* The worker's word on its job (its channel closed: it is going). */
static void hear(slot *s) {
  if (bs_fork_chan_get(s->ctl, &s->word, sizeof s->word, NULL, 0)) {
    s->worded = true;
    return;
  }
  close(s->ctl);
  s->ctl = -1;
}

static double deadline_ms(const bs_fork *r, const slot *s) {
  return 1e3 *
         (r->deadline_of ? r->deadline_of(r->arg, s->job) : r->deadline_s);
}

/* When the child in s must be asked to dump, or killed. */
static double next_event_ms(const bs_fork *r, const slot *s) {
  if (s->asked)
    return s->asked + r->grace_s * 1e3;
  return s->t0 + deadline_ms(r, s);
}

/* Past its deadline: asked first (when the runner asks), killed after. */
static void overdue(const bs_fork *r, slot *s, bs_job_out *out) {
  int ws;
  if (r->dump_signal && !s->asked) {
    kill(s->pid, r->dump_signal);
    s->asked = now_ms();
    return;
  }
  kill(-s->pid, SIGKILL);
  kill(s->pid, SIGKILL);
  while (waitpid(s->pid, &ws, 0) < 0 && errno == EINTR)
    ;
  drain_all(s);
  finish(r, s, out, BS_JOB_KILLED, SIGKILL, true);
}

/* A signal asked the command to stop: each child's group killed (its
 * engines and rank processes with it) and reaped, at once; a job that was
 * running is interrupted. */
static void interrupted(const bs_fork *r, slot *s, bs_job_out *out) {
  kill(-s->pid, SIGKILL);
  kill(s->pid, SIGKILL);
  while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
    ;
  if (s->busy)
    finish(r, s, out, BS_JOB_INTERRUPTED, bs_stop_signal(), true);
  else
    forget(s);
}

/* How long the next poll may wait for slot s's busy child. */
static int wait_ms(const bs_fork *r, const slot *s, double t) {
  double left = next_event_ms(r, s) - t;
  /* Bounded before the cast: a deadline of 1e300 s is no negative wait. */
  int ms = left <= 0 ? 0 : left >= STEP_MAX_MS ? STEP_MAX_MS : (int)ceil(left);
  bool wordless = r->reuse ? s->ctl < 0 : s->fd < 0; /* reap it by polling */
  return wordless && ms > REAP_POLL_MS ? REAP_POLL_MS : ms;
}

/* What a busy slot's child did since the last round. */
static void settle(const bs_fork *r, slot *s, bs_job_out *out) {
  int ws;
  if (r->reuse && s->fd < 0 && s->worded)
    answered(r, s, out);
  else if ((s->fd < 0 || (r->reuse && s->ctl < 0)) &&
           waitpid(s->pid, &ws, WNOHANG) == s->pid)
    reaped(r, s, out, ws);
  else if (now_ms() >= next_event_ms(r, s))
    overdue(r, s, out);
}

/* One round: wait for output, a word or the nearest deadline, then
 * settle. */
static void step(const bs_fork *r, slot *slots, int nslots, bs_job_out *out) {
  struct pollfd pfd[2 * nslots + 1];
  int at[2 * nslots + 1]; /* pfd[k]'s slot; < 0: its channel */
  double t = now_ms();
  int timeout = -1, np = 0;
  for (int i = 0; i < nslots; i++) {
    if (!slots[i].busy)
      continue;
    int ms = wait_ms(r, &slots[i], t);
    timeout = timeout < 0 || ms < timeout ? ms : timeout;
    if (slots[i].fd >= 0) {
      at[np] = i;
      pfd[np++] = (struct pollfd){.fd = slots[i].fd, .events = POLLIN};
    }
    if (r->reuse && slots[i].ctl >= 0 && !slots[i].worded) {
      at[np] = -1 - i;
      pfd[np++] = (struct pollfd){.fd = slots[i].ctl, .events = POLLIN};
    }
  }
  int nfds = np;
  if (bs_stop_fd() >= 0)
    pfd[nfds++] = (struct pollfd){.fd = bs_stop_fd(), .events = POLLIN};
  if (poll(pfd, (nfds_t)nfds, timeout) < 0 && errno != EINTR)
    timeout = 0;
  if (bs_stop_signal())
    return;
  for (int k = 0; k < np; k++) {
    if (!pfd[k].revents)
      continue;
    if (at[k] >= 0)
      drain(&slots[at[k]]);
    else
      hear(&slots[-1 - at[k]]);
  }
  for (int i = 0; i < nslots; i++)
    if (slots[i].busy)
      settle(r, &slots[i], out);
}

/* Every idle worker told to leave (its channel closed), then reaped. */
static void retire(slot *slots, int nslots) {
  for (int i = 0; i < nslots; i++)
    if (slots[i].pid && slots[i].ctl >= 0) {
      close(slots[i].ctl);
      slots[i].ctl = -1;
    }
  for (int i = 0; i < nslots; i++)
    if (slots[i].pid) {
      leave(&slots[i]);
      forget(&slots[i]);
    }
}

bs_status bs_fork_run(const bs_fork *r, bs_job_out *out) {
  bs_status st = BS_OK;
  int nslots = r->parallel < 1 ? 1 : r->parallel;
  slot *slots = calloc((size_t)nslots, sizeof *slots);
  size_t next = 0;
  if (!slots)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "runner: %d slots", nslots);
  for (int i = 0; i < nslots; i++)
    forget(&slots[i]);
  memset(out, 0, r->njobs * sizeof *out);
  for (;;) {
    int running = 0;
    for (int i = 0; i < nslots; i++) {
      if (bs_stop_signal() && slots[i].pid)
        interrupted(r, &slots[i], out);
      if (!slots[i].busy && next < r->njobs && !bs_stop_signal())
        BS_CHECK(start(r, slots, nslots, &slots[i], next++));
      running += slots[i].busy;
    }
    if (!running)
      break;
    step(r, slots, nslots, out);
  }
  retire(slots, nslots);
  /* Runs a signal kept from starting. */
  for (; next < r->njobs; next++) {
    out[next] =
        (bs_job_out){.end = BS_JOB_NOT_STARTED, .code = bs_stop_signal()};
    if (r->event)
      r->event(r->arg, next, &out[next]);
  }
out:
  /* On a runner failure, take down whatever is still running. */
  for (int i = 0; i < nslots; i++)
    if (slots[i].pid) {
      kill(-slots[i].pid, SIGKILL);
      waitpid(slots[i].pid, NULL, 0);
      forget(&slots[i]);
    }
  free(slots);
  return st;
}
