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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bs_buf.h"
#include "bs_span.h"
#include "bs_stop.h"

/* A child that closed its pipe gets this long between polls to exit. */
#define REAP_POLL_MS 2
/* After the kill: how long what a child wrote may take to drain. */
#define DRAIN_MS 1000
/* The longest one poll waits (a far deadline is waited for in steps). */
#define STEP_MAX_MS 60000

typedef struct slot {
  pid_t pid; /* 0: free */
  int fd;    /* -1 once the child closed its end */
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

/* In a new child: the read ends of the other running jobs' pipes are the
 * parent's (with hundreds of jobs at once, holding them would run the child
 * out of descriptors). */
static void close_others(const slot *slots, int nslots, const slot *mine) {
  for (int i = 0; i < nslots; i++)
    if (&slots[i] != mine && slots[i].pid && slots[i].fd >= 0)
      close(slots[i].fd);
}

static bs_status start(const bs_fork *r, slot *slots, int nslots, slot *s,
                       size_t job) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return bs_err_fail(BS_ERR_INTERNAL, NULL, "runner: pipe: %s",
                       strerror(errno));
  fflush(NULL); /* the child must not flush the parent's buffers again */
  bs_span_mark_fork();
  pid_t parent = getpid(), pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return bs_err_fail(BS_ERR_INTERNAL, NULL, "runner: fork: %s",
                       strerror(errno));
  }
  if (pid == 0) {
    bs_span_forked();
    close(fds[0]);
    close_others(slots, nslots, s);
    setpgid(0, 0);
    default_signals();
    bs_stop_child(parent);
    bs_fork_exit(r->child(r->arg, job, fds[1]));
  }
  setpgid(pid, pid); /* also here: whichever runs first wins the race */
  close(fds[1]);
  *s = (slot){.pid = pid, .fd = fds[0], .job = job, .t0 = now_ms()};
  if (r->event)
    r->event(r->arg, job, NULL);
  return BS_OK;
}

static void finish(const bs_fork *r, slot *s, bs_job_out *out, bs_job_end end,
                   int code) {
  /* Sweep what the run left behind (engine processes) in its group. */
  kill(-s->pid, SIGKILL);
  if (s->fd >= 0)
    close(s->fd);
  bs_job_out *o = &out[s->job];
  o->end = end;
  o->code = code;
  o->duration_ms = now_ms() - s->t0;
  o->len = s->buf.len;
  o->payload = bs_buf_take(&s->buf);
  if (r->event)
    r->event(r->arg, s->job, o);
  *s = (slot){.fd = -1};
}

static void reaped(const bs_fork *r, slot *s, bs_job_out *out, int ws) {
  if (s->asked) /* past its deadline, whatever it did then */
    finish(r, s, out, BS_JOB_KILLED, WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
  else if (WIFSIGNALED(ws))
    finish(r, s, out, BS_JOB_SIGNALED, WTERMSIG(ws));
  else
    finish(r, s, out, BS_JOB_EXITED, WEXITSTATUS(ws));
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

/* When the child in s must be asked to dump, or killed. */
static double next_event_ms(const bs_fork *r, const slot *s) {
  if (s->asked)
    return s->asked + r->grace_s * 1e3;
  return s->t0 + r->deadline_s * 1e3;
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
  /* What it wrote before: the pipe ends with it and its group, unless a
   * descendant that left the group holds it, so the wait is bounded. */
  for (double until = now_ms() + DRAIN_MS; s->fd >= 0 && now_ms() < until;) {
    struct pollfd p = {.fd = s->fd, .events = POLLIN};
    if (poll(&p, 1, (int)(until - now_ms()) + 1) > 0)
      drain(s);
  }
  if (s->fd >= 0) {
    close(s->fd);
    s->fd = -1;
  }
  finish(r, s, out, BS_JOB_KILLED, SIGKILL);
}

/* A signal asked the command to stop: each running child's group killed
 * (its engines and rank processes with it) and reaped, at once. */
static void interrupted(const bs_fork *r, slot *s, bs_job_out *out) {
  kill(-s->pid, SIGKILL);
  kill(s->pid, SIGKILL);
  while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
    ;
  finish(r, s, out, BS_JOB_INTERRUPTED, bs_stop_signal());
}

/* One round: wait for output or the nearest deadline, then settle. */
static void step(const bs_fork *r, slot *slots, int nslots, bs_job_out *out) {
  struct pollfd pfd[nslots + 1];
  double t = now_ms();
  int timeout = -1, np = 0;
  for (int i = 0; i < nslots; i++) {
    if (!slots[i].pid)
      continue;
    double left = next_event_ms(r, &slots[i]) - t;
    /* Bounded before the cast: a deadline of 1e300 s is no negative wait. */
    int ms = left <= 0             ? 0
             : left >= STEP_MAX_MS ? STEP_MAX_MS
                                   : (int)ceil(left);
    if (slots[i].fd < 0)
      ms = ms < REAP_POLL_MS ? ms : REAP_POLL_MS;
    timeout = timeout < 0 || ms < timeout ? ms : timeout;
    if (slots[i].fd >= 0)
      pfd[np++] = (struct pollfd){.fd = slots[i].fd, .events = POLLIN};
  }
  int nfds = np;
  if (bs_stop_fd() >= 0)
    pfd[nfds++] = (struct pollfd){.fd = bs_stop_fd(), .events = POLLIN};
  if (poll(pfd, (nfds_t)nfds, timeout) < 0 && errno != EINTR)
    timeout = 0;
  if (bs_stop_signal())
    return;
  for (int i = 0, k = 0; i < nslots; i++) {
    slot *s = &slots[i];
    if (!s->pid)
      continue;
    if (s->fd >= 0 && pfd[k++].revents)
      drain(s);
    int ws;
    if (s->fd < 0 && waitpid(s->pid, &ws, WNOHANG) == s->pid)
      reaped(r, s, out, ws);
    else if (now_ms() >= next_event_ms(r, s))
      overdue(r, s, out);
  }
}

bs_status bs_fork_run(const bs_fork *r, bs_job_out *out) {
  bs_status st = BS_OK;
  int nslots = r->parallel < 1 ? 1 : r->parallel;
  slot *slots = calloc((size_t)nslots, sizeof *slots);
  size_t next = 0;
  if (!slots)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "runner: %d slots", nslots);
  memset(out, 0, r->njobs * sizeof *out);
  for (;;) {
    int running = 0;
    for (int i = 0; i < nslots; i++) {
      if (bs_stop_signal() && slots[i].pid)
        interrupted(r, &slots[i], out);
      if (!slots[i].pid && next < r->njobs && !bs_stop_signal())
        BS_CHECK(start(r, slots, nslots, &slots[i], next++));
      running += slots[i].pid != 0;
    }
    if (!running)
      break;
    step(r, slots, nslots, out);
  }
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
      if (slots[i].fd >= 0)
        close(slots[i].fd);
      bs_buf_free(&slots[i].buf);
    }
  free(slots);
  return st;
}
