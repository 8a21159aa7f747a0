/* Trainer side of the rollout-engine stand-in: spawns the engine process and
 * streams weight updates to it (protocol in bs_wire.h). */
#include "sync/bs_engine.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bs_fault.h"
#include "bs_limits.h"
#include "bs_per_thread.h"
#include "bs_span.h"
#include "sync/bs_engine_keep.h"
#include "sync/bs_engine_zygote.h"
#include "sync/bs_sync_testing.h"
#include "sync/bs_wire.h"

#define DEFAULT_TIMEOUT_MS 10000
#define EXIT_WAIT_MS 2000 /* for a process that should be ending anyway */

/* One engine process serving ranks first .. first+k-1 (a world larger
 * than BS_ENGINE_PROCS_MAX): the trainer ends of its sockets until each
 * rank takes its own, and how many ranks still use it. Under groups_mu. */
typedef struct group {
  struct group *next;
  int first, k, world, taken, users;
  pid_t pid;
  int *fds;
} group;

static pthread_mutex_t groups_mu = PTHREAD_MUTEX_INITIALIZER;
static group *groups;

struct bs_engine {
  char *exe;
  char **prefix; /* NULL-terminated copy of argv_prefix */
  int rank, timeout_ms;
  int world;    /* above BS_ENGINE_PROCS_MAX: its process is a group's */
  bool pending; /* restarted in a world of groups: joins at its next use */
  pid_t pid;
  int fd;
  group *g; /* a process shared with other ranks' engines; NULL: its own */
  bool reaped, status_known, death_reported;
  int wstatus;
  /* the update in progress */
  bool in_update;
  int cycle, bucket;
  size_t nsent;
};

/* ---- process ---- */

static void record_exit(bs_engine *e, pid_t r, int ws) {
  e->reaped = true;
  e->status_known = r == e->pid;
  e->wstatus = ws;
}

/* Reaps without waiting; true once the process is gone. */
static bool poll_exit(bs_engine *e) {
  if (e->reaped || e->pid <= 0)
    return true;
  int ws = 0;
  pid_t r = waitpid(e->pid, &ws, WNOHANG);
  if (r == 0 || (r < 0 && errno == EINTR))
    return false;
  record_exit(e, r, ws); /* r < 0 (ECHILD): someone else reaped it */
  return true;
}

/* Waits up to timeout_ms for the process to end, then SIGKILLs it. Looks
 * again after 50 us, then twice as long each time up to 1 ms: an engine
 * told to quit is gone in well under 1 ms, and every run ends its own. */
static void reap(bs_engine *e, int timeout_ms) {
  long nap = 50000;
  for (long waited = 0; !poll_exit(e);
       waited += nap, nap = nap < 500000 ? 2 * nap : 1000000) {
    if (waited >= timeout_ms * 1000000L) {
      kill(e->pid, SIGKILL);
      int ws = 0;
      pid_t r;
      while ((r = waitpid(e->pid, &ws, 0)) < 0 && errno == EINTR)
        ;
      record_exit(e, r, ws);
      return;
    }
    struct timespec tick = {0, nap};
    nanosleep(&tick, NULL);
  }
}

static void kill_now(bs_engine *e) {
  if (!e->reaped && e->pid > 0)
    kill(e->pid, SIGKILL);
  reap(e, EXIT_WAIT_MS);
}

static void describe_end(const bs_engine *e, char *buf, size_t n) {
  if (e->pid <= 0)
    snprintf(buf, n, "not running (its start failed)");
  else if (!e->reaped)
    snprintf(buf, n, "still running");
  else if (!e->status_known)
    snprintf(buf, n, "ended (exit status not available)");
  else if (WIFSIGNALED(e->wstatus))
    snprintf(buf, n, "killed by signal %d", WTERMSIG(e->wstatus));
  else
    snprintf(buf, n, "exited with status %d", WEXITSTATUS(e->wstatus));
}

static bs_status spawn_error(const char *exe, int err) {
  bool bad_exe = err == ENOENT || err == EACCES || err == ENOEXEC;
  return bs_err_fail(bad_exe ? BS_ERR_INVALID : BS_ERR_INTERNAL, NULL,
                     "cannot start the engine '%s': %s", exe, strerror(err));
}

/* Both socket ends are CLOEXEC: no engine started by another rank thread
 * inherits them (it would keep a socket open past its engine's death). The
 * engine's ends go to BS_ENGINE_FD.. in it, forked by the zygote where one
 * serves, else spawned (moved above the targets, dup2'd without CLOEXEC).
 * k sockets, for ranks first..first+k-1; the trainer's ends in fds. */
static bs_status spawn_procs(const bs_engine *e, int first, int k, pid_t *pid,
                             int *fds) {
  bs_status st = BS_OK;
  int err, theirs[BS_ENGINE_GROUP_MAX];
  char rank[16], fd[16], count[16];
  const char *argv[64];
  size_t na = 0;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  for (int i = 0; i < k; i++)
    fds[i] = theirs[i] = -1;
  for (int i = 0; i < k; i++) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      BS_FAIL(BS_ERR_INTERNAL, NULL, "engine socketpair: %s", strerror(errno));
    fds[i] = sv[0];
    theirs[i] = fcntl(sv[1], F_DUPFD_CLOEXEC, BS_ENGINE_FD + k);
    close(sv[1]);
    if (theirs[i] < 0)
      BS_FAIL(BS_ERR_INTERNAL, NULL, "engine fd: %s", strerror(errno));
    if ((err = posix_spawn_file_actions_adddup2(&fa, theirs[i],
                                                BS_ENGINE_FD + i)))
      BS_FAIL(BS_ERR_INTERNAL, NULL, "engine spawn: %s", strerror(err));
  }
  snprintf(rank, sizeof rank, "%d", first);
  snprintf(fd, sizeof fd, "%d", BS_ENGINE_FD);
  snprintf(count, sizeof count, "%d", k);
  argv[na++] = e->exe;
  for (char **p = e->prefix; *p && na < 54; p++)
    argv[na++] = *p;
  const char *tail[] = {"engine", "--fd", fd, "--rank", rank, NULL, NULL, NULL};
  if (k > 1) {
    tail[5] = "--count";
    tail[6] = count;
  }
  memcpy(&argv[na], tail, sizeof tail);
  uint64_t t0 = bs_span_now();
  if (!bs_engine_zygote_spawn(e->exe, e->prefix, theirs, k, first, pid))
    err = posix_spawn(pid, e->exe, &fa, NULL, (char *const *)argv, environ);
  bs_span_since(BS_SPAN_ENGINE_START, t0);
  if (err) {
    *pid = -1;
    st = spawn_error(e->exe, err);
  }
out:
  posix_spawn_file_actions_destroy(&fa);
  for (int i = 0; i < k; i++) {
    if (theirs[i] >= 0)
      close(theirs[i]);
    if (st != BS_OK && fds[i] >= 0)
      close(fds[i]);
  }
  return st;
}

static void fresh(bs_engine *e) {
  e->reaped = e->status_known = e->death_reported = e->in_update = false;
}

/* A kept engine (bs_engine_keep.h) made this rank's: RESET answered
 * within the timeout; false (it ended: reaped) when it does not. */
static bool adopt(bs_engine *e, pid_t pid, int fd) {
  bs_emsg_reset m = {.rank = e->rank};
  bs_eframe h;
  int err = bs_wire_frame(fd, BS_EMSG_RESET, &m, sizeof m, 0, e->timeout_ms);
  if (!err)
    err = bs_wire_read(fd, &h, sizeof h, e->timeout_ms);
  if (!err && h.magic == BS_ENGINE_MAGIC && h.type == BS_EMSG_RESET && !h.len) {
    e->pid = pid;
    e->fd = fd;
    return true;
  }
  close(fd);
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
    ;
  return false;
}

/* A process of this rank's own: a kept one when one answers, else a
 * fresh one. */
static bs_status spawn(bs_engine *e) {
  bs_status st = BS_OK;
  pid_t pid;
  int fd;
  e->g = NULL;
  bool kept = false;
  while (!kept && bs_engine_keep_take(&pid, &fd))
    kept = adopt(e, pid, fd);
  if (!kept)
    BS_CHECK(spawn_procs(e, e->rank, 1, &e->pid, &e->fd));
  fresh(e);
out:
  return st;
}

/* An idle engine of the rank's own, alive between updates, kept for the
 * next rank instead of ended; false when it is not kept. */
static bool park(bs_engine *e) {
  if (e->g || e->fd < 0 || e->reaped || e->death_reported || e->in_update ||
      !bs_engine_alive(e) || !bs_engine_keep_park(e->pid, e->fd))
    return false;
  e->fd = -1;
  return true;
}

/* Under groups_mu: out of the registry (a no-op when already out). */
static void unlink_group(group *g) {
  group **p = &groups;
  while (*p && *p != g)
    p = &(*p)->next;
  if (*p)
    *p = g->next;
}

/* The group's process, started by the first of its ranks to come; each
 * rank takes its socket, and the last to take it forgets the group (a
 * later world starts its own). A rank whose socket there is taken already
 * (restarted again before all its neighbours joined) starts another. */
static bs_status join_group(bs_engine *e, int world) {
  bs_status st = BS_OK;
  int k = (world + BS_ENGINE_PROCS_MAX - 1) / BS_ENGINE_PROCS_MAX;
  int first = e->rank / k * k;
  k = first + k <= world ? k : world - first;
  pthread_mutex_lock(&groups_mu);
  group *g = groups;
  while (g && (g->first != first || g->world != world ||
               g->fds[e->rank - first] < 0))
    g = g->next;
  if (!g) {
    g = calloc(1, sizeof *g);
    if (!g || !(g->fds = calloc((size_t)k, sizeof *g->fds))) {
      free(g);
      BS_FAIL(BS_ERR_NOMEM, NULL, "engine group of %d ranks", k);
    }
    *g = (group){
        .next = groups, .first = first, .k = k, .world = world, .fds = g->fds};
    if ((st = spawn_procs(e, first, k, &g->pid, g->fds)) != BS_OK) {
      free(g->fds);
      free(g);
      goto out;
    }
    groups = g;
  }
  e->fd = g->fds[e->rank - first];
  g->fds[e->rank - first] = -1;
  e->pid = g->pid;
  e->g = g;
  g->users++;
  if (++g->taken == g->k)
    unlink_group(g);
  fresh(e);
out:
  pthread_mutex_unlock(&groups_mu);
  return st;
}

/* Whether this rank is the last user of its process (or has it alone),
 * and so the one to wait for it and reap it. */
static bool last_user(bs_engine *e) {
  group *g = e->g;
  if (!g)
    return true;
  pthread_mutex_lock(&groups_mu);
  bool last = --g->users == 0;
  /* Ranks that never came (they failed before their engine started): the
   * process sees their sockets close unused, which ends them cleanly. */
  for (int i = 0; last && i < g->k; i++)
    if (g->fds[i] >= 0)
      close(g->fds[i]);
  if (last)
    unlink_group(g);
  pthread_mutex_unlock(&groups_mu);
  e->g = NULL;
  if (last) {
    free(g->fds);
    free(g);
  }
  return last;
}

/* Ends the current process: QUIT when asked and possible, bounded wait,
 * SIGKILL past it; closes the socket. */
static void end_process(bs_engine *e, bool quit) {
  if (quit && !e->reaped && e->fd >= 0)
    bs_wire_frame(e->fd, BS_EMSG_QUIT, NULL, 0, 0, EXIT_WAIT_MS);
  if (e->fd >= 0 && e->g) /* the process ends once its last rank quits */
    close(e->fd);
  e->fd = e->g ? -1 : e->fd;
  if (last_user(e))
    reap(e, EXIT_WAIT_MS);
  else
    e->reaped = e->status_known = true; /* others' to wait for: a clean end */
  if (e->fd >= 0)
    close(e->fd);
  e->fd = -1;
  e->in_update = false;
}

static void free_engine(bs_engine *e) {
  for (char **p = e->prefix; p && *p; p++)
    free(*p);
  free(e->prefix);
  free(e->exe);
  free(e);
}

bs_status bs_engine_start_world(const char *exe, const char *const *argv_prefix,
                                int rank, int world, bs_engine **out) {
  bs_status st = BS_OK;
  bs_engine *e = NULL;
  size_t np = 0;
  if (!out || !exe || !*exe || rank < 0 || world > BS_WORLD_MAX_RANKS ||
      (world > 1 && rank >= world))
    BS_FAIL(BS_ERR_INVALID, NULL,
            "engine start needs an executable, a rank >= 0 (in a world of "
            "at most %d) and an output",
            BS_WORLD_MAX_RANKS);
  *out = NULL;
  while (argv_prefix && argv_prefix[np])
    np++;
  if (np > 32)
    BS_FAIL(BS_ERR_INVALID, NULL, "engine argv prefix too long (%zu)", np);
  e = calloc(1, sizeof *e);
  if (!e || !(e->prefix = calloc(np + 1, sizeof *e->prefix)) ||
      !(e->exe = strdup(exe)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "engine handle");
  for (size_t i = 0; i < np; i++)
    if (!(e->prefix[i] = strdup(argv_prefix[i])))
      BS_FAIL(BS_ERR_NOMEM, NULL, "engine handle");
  e->rank = rank;
  e->world = world;
  e->fd = e->pid = -1;
  e->timeout_ms = DEFAULT_TIMEOUT_MS;
  BS_CHECK(world > BS_ENGINE_PROCS_MAX ? join_group(e, world) : spawn(e));
  bs_engine_keep_use(1);
  *out = e;
  e = NULL;
out:
  if (e)
    free_engine(e);
  return st;
}

bs_status bs_engine_start(const char *exe, const char *const *argv_prefix,
                          int rank, bs_engine **out) {
  return bs_engine_start_world(exe, argv_prefix, rank, 1, out);
}

bs_status bs_engine_stop(bs_engine *e) {
  bs_status st = BS_OK;
  char how[64];
  if (!e)
    return BS_OK;
  bs_engine_keep_use(-1);
  if (park(e))
    goto out;
  bool known_dead = e->death_reported || e->reaped;
  end_process(e, true);
  bool clean =
      e->status_known && WIFEXITED(e->wstatus) && WEXITSTATUS(e->wstatus) == 0;
  describe_end(e, how, sizeof how);
  if (!known_dead && !clean && e->pid > 0)
    BS_FAIL(BS_ERR_ENGINE_DEAD, NULL,
            "engine of rank %d did not stop "
            "cleanly: %s",
            e->rank, how);
out:
  free_engine(e);
  return st;
}

/* In a world of groups, into a group again: the whole world restarts its
 * engines after a death (the failure is every rank's), and 16,384 processes
 * of one each would not fit the machine (bs_engine_start_world). Joined at
 * the next use, not now: by then every rank of the group has closed its old
 * socket (collectives lie between), where a group started at the first
 * restart opens its sockets for all its ranks while the rest still hold
 * theirs, up to twice the world's descriptors (RLIMIT_NOFILE). */
bs_status bs_engine_restart(bs_engine *e) {
  bs_status st = BS_OK;
  if (!e)
    BS_FAIL(BS_ERR_INVALID, NULL, "engine restart without an engine");
  end_process(e, true);
  e->pending = e->world > BS_ENGINE_PROCS_MAX;
  if (!e->pending)
    BS_CHECK(spawn(e));
out:
  return st;
}

pid_t bs_engine_pid(const bs_engine *e) {
  return e && !e->reaped ? e->pid : -1;
}

bool bs_engine_alive(bs_engine *e) {
  return e && !poll_exit(e);
}

int bs_engine_rank(const bs_engine *e) {
  return e ? e->rank : -1;
}

void bs_engine_set_timeout_ms(bs_engine *e, int ms) {
  if (e && ms > 0)
    e->timeout_ms = ms;
}

/* ---- failures ---- */

/* `where`: "in bucket 2", "before the update"... */
static bs_status dead(bs_engine *e, const char *tensor, const char *where) {
  char how[64];
  reap(e, EXIT_WAIT_MS);
  describe_end(e, how, sizeof how);
  e->death_reported = true;
  return bs_err_fail(BS_ERR_ENGINE_DEAD, tensor,
                     "engine of rank %d died %s (cycle %d): %s", e->rank, where,
                     e->cycle, how);
}

/* Maps a failed read or write to a status; the stream is unusable after
 * any of them, so a still-running engine is stopped. */
static bs_status io_failed(bs_engine *e, int err, const char *tensor,
                           const char *where) {
  if (err == ETIMEDOUT || err == EFAULT || err == EPROTO) {
    kill_now(e);
    e->death_reported = true;
  }
  if (err == ETIMEDOUT)
    return bs_err_fail(
        BS_ERR_TIMEOUT, tensor,
        "engine of rank %d did not respond within %d ms %s (cycle "
        "%d): killed",
        e->rank, e->timeout_ms, where, e->cycle);
  if (err == EFAULT)
    return bs_err_fail(BS_ERR_PAUSED_READ, tensor,
                       "the bytes sent to the engine of rank %d %s are not "
                       "readable (a paused region?)",
                       e->rank, where);
  if (err == EPROTO) /* the engine is this program: a bug, not a death */
    return bs_err_fail(BS_ERR_INTERNAL, tensor,
                       "engine of rank %d broke the protocol %s (cycle %d): "
                       "killed",
                       e->rank, where, e->cycle);
  return dead(e, tensor, where);
}

/* Known dead: reported, or reaped here (a reaped engine's socket may still
 * take a write for a moment on some kernels, so its death is not left to
 * the write). An engine that died unnoticed is found by the next write
 * failing, as a real trainer finds it. */
static bool gone(const bs_engine *e) {
  return e->fd < 0 || e->death_reported || e->reaped;
}

/* ---- the session ---- */

/* A restarted engine of a world of groups joins its group's process. */
static bs_status join_pending(bs_engine *e) {
  bs_status st = BS_OK;
  if (e->pending)
    BS_CHECK(join_group(e, e->world));
  e->pending = false;
out:
  return st;
}

bs_status bs_engine_reconnect(bs_engine *e) {
  bs_status st = BS_OK;
  bs_eframe h;
  if (!e)
    BS_FAIL(BS_ERR_INVALID, NULL, "reconnect without an engine");
  BS_CHECK(join_pending(e));
  if (bs_fault_hit(BS_FP_ENGINE_RECONNECT, NULL))
    BS_FAIL(BS_ERR_ENGINE_DEAD, NULL,
            "engine of rank %d: reconnect refused (fault engine/reconnect)",
            e->rank);
  if (gone(e)) {
    st = dead(e, NULL, "before the reconnect");
    goto out;
  }
  int err = bs_wire_frame(e->fd, BS_EMSG_HELLO, NULL, 0, 0, e->timeout_ms);
  if (!err)
    err = bs_wire_read(e->fd, &h, sizeof h, e->timeout_ms);
  /* A HELLO with a payload would leave its bytes in the stream. */
  if (!err &&
      (h.magic != BS_ENGINE_MAGIC || h.type != BS_EMSG_HELLO || h.len != 0))
    err = EPROTO;
  if (err)
    st = io_failed(e, err, NULL, "at the reconnect");
out:
  return st;
}

/* ---- an update ---- */

bs_status bs_engine_update_begin(bs_engine *e, int cycle) {
  bs_status st = BS_OK;
  uint64_t info = 0;
  if (!e)
    BS_FAIL(BS_ERR_INVALID, NULL, "update without an engine");
  BS_CHECK(join_pending(e));
  e->cycle = cycle;
  if (gone(e)) {
    st = dead(e, NULL, "before the update");
    goto out;
  }
  bs_emsg_begin b = {.cycle = cycle};
  if (bs_fault_hit(BS_FP_ENGINE_VERIFY, &info)) {
    b.flip = 1;
    b.flip_tensor = (uint32_t)info;
    b.flip_bit = (uint32_t)(info >> 32);
  }
  int err = bs_wire_frame(e->fd, BS_EMSG_BEGIN, &b, sizeof b, 0, e->timeout_ms);
  if (err) {
    st = io_failed(e, err, NULL, "before the update");
    goto out;
  }
  e->in_update = true;
  e->bucket = 0;
  e->nsent = 0;
out:
  return st;
}

void bs_engine_bucket(bs_engine *e, int k) {
  uint64_t info = 0;
  if (!e)
    return;
  e->bucket = k;
  /* The death is real and complete before the next write: SIGKILL, then
   * reap, so the next send reports it every time. */
  if (bs_fault_hit(BS_FP_ENGINE_SEND, &info))
    kill_now(e);
}

static bs_status check_send_args(const bs_engine *e, const char *name,
                                 bs_dtype dtype, const void *host_ptr,
                                 size_t nbytes, const bs_digest *expected) {
  bs_status st = BS_OK;
  if (!e || !name || !expected || (!host_ptr && nbytes > 0))
    BS_FAIL(BS_ERR_INVALID, name, "engine send: missing argument");
  if (strlen(name) > BS_ENGINE_NAME_MAX)
    BS_FAIL(BS_ERR_INVALID, NULL, "engine send: tensor name longer than %d",
            BS_ENGINE_NAME_MAX);
  if ((int)dtype < 0 || dtype >= BS_DTYPE_COUNT ||
      nbytes % bs_dtype_size(dtype) != 0)
    BS_FAIL(BS_ERR_INVALID, name,
            "engine send: %zu bytes are not a whole "
            "number of elements of dtype %d",
            nbytes, (int)dtype);
  if (!e->in_update)
    BS_FAIL(BS_ERR_STATE, name, "engine send outside an update");
out:
  return st;
}

/* Where a send failed, into buf (made only then: sends are many). */
static const char *send_where(const bs_engine *e, const char *name, char *buf,
                              size_t n) {
  snprintf(buf, n, "in bucket %d at tensor '%.100s'", e->bucket, name);
  return buf;
}

/* A write's frames, a header and a tensor message each, beside the name
 * and bytes the caller keeps: the thread's scratch, used within one call
 * (not on a rank's stack, whose every page touched stays a rank's). */
#define WRITE_MAX 64
typedef struct frames {
  struct {
    bs_eframe h;
    bs_emsg_tensor m;
  } f[WRITE_MAX];
  struct iovec iov[4 * WRITE_MAX];
} frames;

static bs_per_thread frames_of = BS_PER_THREAD(sizeof(frames), NULL);

/* Tensors t[0..k) as frames in b; the pieces' count. */
static int frame_all(frames *b, const bs_engine_tensor *t, size_t k) {
  int n = 0;
  for (size_t i = 0; i < k; i++) {
    bs_emsg_tensor *m = &b->f[i].m;
    *m = (bs_emsg_tensor){.name_len = (uint32_t)strlen(t[i].name),
                          .dtype = (uint32_t)t[i].dtype,
                          .nbytes = t[i].nbytes};
    memcpy(m->expected, t[i].expected->b, sizeof m->expected);
    struct iovec tail[2] = {{(void *)t[i].name, m->name_len},
                            {(void *)t[i].host_ptr, t[i].nbytes}};
    n += bs_wire_frame_iov(&b->f[i].h, BS_EMSG_TENSOR, m, sizeof *m, tail, 2,
                           b->iov + n);
  }
  return n;
}

bs_status bs_engine_send_many(bs_engine *e, const bs_engine_tensor *t,
                              size_t n) {
  bs_status st = BS_OK;
  char where[160];
  frames *b = bs_per_thread_get(&frames_of);
  if (n && !t)
    BS_FAIL(BS_ERR_INVALID, NULL, "engine send: no tensors");
  for (size_t i = 0; i < n; i++)
    BS_CHECK(check_send_args(e, t[i].name, t[i].dtype, t[i].host_ptr,
                             t[i].nbytes, t[i].expected));
  if (!b)
    BS_FAIL(BS_ERR_NOMEM, NULL, "engine send: frames of %d tensors", WRITE_MAX);
  for (size_t at = 0; at < n; at += WRITE_MAX) {
    const char *first = t[at].name;
    size_t k = n - at < WRITE_MAX ? n - at : WRITE_MAX;
    if (gone(e)) {
      st = dead(e, first, send_where(e, first, where, sizeof where));
      goto out;
    }
    int err =
        bs_wire_writev(e->fd, b->iov, frame_all(b, t + at, k), e->timeout_ms);
    if (err) {
      st = io_failed(e, err, first, send_where(e, first, where, sizeof where));
      goto out;
    }
    e->nsent += k;
  }
out:
  return st;
}

bs_status bs_engine_send(bs_engine *e, const char *name, bs_dtype dtype,
                         const void *host_ptr, size_t nbytes,
                         const bs_digest *expected) {
  bs_engine_tensor t = {name, dtype, host_ptr, nbytes, expected};
  return bs_engine_send_many(e, &t, 1);
}

void bs_engine_result_free(bs_engine_result *r) {
  if (!r)
    return;
  free(r->digests);
  r->digests = NULL;
}

/* Reads REPLY into *res (digests allocated); an errno (EPROTO when the
 * reply is malformed). */
static int read_reply(bs_engine *e, bs_engine_result *res) {
  bs_eframe h;
  bs_emsg_reply r;
  int err = bs_wire_read(e->fd, &h, sizeof h, e->timeout_ms);
  if (!err)
    err = h.magic != BS_ENGINE_MAGIC || h.type != BS_EMSG_REPLY ||
                  h.len != sizeof r + e->nsent * sizeof(bs_digest)
              ? EPROTO
              : bs_wire_read(e->fd, &r, sizeof r, e->timeout_ms);
  if (err)
    return err;
  if (r.ntensors != e->nsent || r.nmismatch > r.ntensors)
    return EPROTO;
  res->digests = calloc(e->nsent ? e->nsent : 1, sizeof(bs_digest));
  if (!res->digests)
    return ENOMEM;
  err = bs_wire_read(e->fd, res->digests, e->nsent * sizeof(bs_digest),
                     e->timeout_ms);
  res->cycle = e->cycle;
  res->ntensors = r.ntensors;
  res->nmismatch = r.nmismatch;
  res->first_bad = r.first_bad;
  snprintf(res->first_bad_name, sizeof res->first_bad_name, "%.*s",
           (int)sizeof r.first_bad_name, r.first_bad_name);
  return err;
}

static bs_status reply_failed(bs_engine *e, int err) {
  char where[64];
  snprintf(where, sizeof where,
           "before answering (after bucket %d, %zu "
           "tensors)",
           e->bucket, e->nsent);
  if (err == ENOMEM)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "engine reply digests");
  return io_failed(e, err, NULL, where);
}

bs_status bs_engine_update_end(bs_engine *e, bs_engine_result *res) {
  bs_status st = BS_OK;
  bs_engine_result local = {0};
  bs_engine_result *r = res ? res : &local;
  if (res)
    memset(res, 0, sizeof *res);
  if (!e || !e->in_update)
    BS_FAIL(BS_ERR_STATE, NULL, "engine update end without a begin");
  bs_emsg_end end = {.ntensors = e->nsent};
  int err =
      bs_wire_frame(e->fd, BS_EMSG_END, &end, sizeof end, 0, e->timeout_ms);
  if (!err)
    err = read_reply(e, r);
  e->in_update = false;
  if (err) {
    bs_engine_result_free(r);
    st = reply_failed(e, err);
    goto out;
  }
  if (r->nmismatch > 0)
    BS_FAIL(BS_ERR_ENGINE_VERIFY, r->first_bad_name,
            "engine of rank %d: %zu/%zu received tensors do not match the "
            "trainer's SHA256, first '%s' (cycle %d)",
            e->rank, r->nmismatch, r->ntensors, r->first_bad_name, e->cycle);
out:
  bs_engine_result_free(&local);
  return st;
}
