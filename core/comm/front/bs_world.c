/* The world: N local ranks on their own threads, their results, the
 * watchdog, and the first failure with its report. */
#include "comm/front/bs_comm_state.h"

#include "bs_clock.h"
#include "bs_span.h"
#include "comm/front/bs_abort.h"
#include "comm/front/bs_futex.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
  DEFAULT_TIMEOUT_MS = 10000,
  DEFAULT_SLOTS = 256,
};
/* How often a process-per-rank world looks for another process's failure,
 * and how long a failed one waits for every process's note to settle on
 * the job's cause (a process that never publishes, say a killed one, costs
 * this bound once). */
enum { SHARE_POLL_MS = 1, SETTLE_MS = 250 };

static void poll_shared(void *ctx);

/* o is normalised: a sim world whose ranks span processes meets in a
 * shared file mapping rather than in this process's memory. */
static bs_status pick_backend(const bs_world_opts *o,
                              const bs_comm_backend **out) {
  const char *name = o->backend;
  if (!name || strcmp(name, "sim") == 0) {
    *out =
        o->global_size > o->size ? &bs_comm_shm_backend : &bs_comm_sim_backend;
    return BS_OK;
  }
  if (strcmp(name, "nccl") != 0)
    return bs_err_fail(BS_ERR_CONFIG, NULL,
                       "unknown communicator backend '%s' (sim or nccl)", name);
#ifdef BS_HAVE_NCCL
  *out = &bs_comm_nccl_backend;
  return BS_OK;
#else
  return bs_err_fail(BS_ERR_UNSUPPORTED, NULL,
                     "backend nccl: this build has no NCCL (configure where "
                     "CUDA and NCCL are installed)");
#endif
}

static bs_status normalise(const bs_world_opts *o, bs_world_opts *n) {
  bs_status st = BS_OK;
  *n = *o;
  n->timeout_ms = o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
  n->flight_slots = o->flight_slots ? o->flight_slots : DEFAULT_SLOTS;
  n->global_size = o->global_size ? o->global_size : o->size;
  n->procs = o->procs ? o->procs : n->global_size / (o->size ? o->size : 1);
  if (o->size < 1 || o->size > BS_WORLD_MAX_RANKS || o->timeout_ms < 0 ||
      o->flight_slots < 0)
    BS_FAIL(BS_ERR_CONFIG, NULL,
            "world: size %d (1..%d), timeout %d ms and %d flight slots must "
            "not be negative",
            o->size, BS_WORLD_MAX_RANKS, o->timeout_ms, o->flight_slots);
  if (o->first_rank < 0 || n->global_size < o->size ||
      o->first_rank > n->global_size - o->size)
    BS_FAIL(BS_ERR_CONFIG, NULL,
            "world: local ranks %d..%d do not fit a world of %d", o->first_rank,
            o->first_rank + o->size - 1, n->global_size);
out:
  return st;
}

static bs_status alloc_ranks(bs_world *w) {
  bs_status st = BS_OK;
  size_t n = (size_t)w->o.size;
  w->comms = calloc(n, sizeof *w->comms);
  w->pos = calloc(n, sizeof *w->pos);
  w->rank_st = calloc(n, sizeof *w->rank_st);
  w->rank_err = calloc(n, sizeof *w->rank_err);
  if (!w->comms || !w->pos || !w->rank_st || !w->rank_err)
    BS_FAIL(BS_ERR_NOMEM, NULL, "world: %zu ranks", n);
  for (size_t i = 0; i < n; i++) {
    bs_comm *c = &w->comms[i];
    c->w = w;
    c->rank = (int)i;
    c->grank = w->o.first_rank + (int)i;
    w->rank_err[i].rank = c->grank;
    BS_CHECK(bs_flight_create((size_t)w->o.flight_slots, &c->fr));
  }
out:
  return st;
}

void bs_world_leave(bs_comm *c, bs_rank_state how, const char *why) {
  if (!c || c->gone)
    return;
  c->gone = true;
  bs_world *w = c->w;
  bs_watchdog_hold(w->wd, bs_clock_mono_ns()); /* its peers go on */
  pthread_mutex_lock(&w->mu);
  bs_rank_pos *p = &w->pos[c->rank];
  p->state = how;
  p->since_ns = bs_clock_mono_ns();
  snprintf(p->why, sizeof p->why, "%s", why ? why : "");
  pthread_mutex_unlock(&w->mu);
  w->be->rank_gone(c);
}

/* Every rank of a scheduled world waits and none has a timer: no wait of
 * theirs can end (a deadlock the scheduler saw), so the world fails at
 * once rather than never. */
static void on_stuck(void *ctx) {
  bs_world_abort(ctx, BS_ERR_DESYNC, 0,
                 "every rank waits for another and no wait of theirs can end "
                 "(a deadlock)");
}

bs_status bs_world_create(const bs_world_opts *o, bs_world **out) {
  bs_status st = BS_OK;
  bs_world *w = NULL;
  if (!o || !out)
    BS_FAIL(BS_ERR_INVALID, NULL, "world: no options");
  *out = NULL;
  w = calloc(1, sizeof *w);
  if (!w)
    BS_FAIL(BS_ERR_NOMEM, NULL, "world: out of memory");
  pthread_mutex_init(&w->mu, NULL);
  pthread_mutex_init(&w->settle_mu, NULL);
  sem_init(&w->running, 0, BS_WORLD_RUNNING_MAX);
  BS_CHECK(normalise(o, &w->o));
  BS_CHECK(pick_backend(&w->o, &w->be));
  w->o.backend = w->be->name;
  BS_CHECK(bs_world_sched_create(w));
  /* Scheduled, one rank runs at a time: no turns to take. */
  w->turns = w->o.size > BS_WORLD_RUNNING_MAX && !w->sched;
  if (w->sched)
    bs_sched_set_stuck(w->sched, on_stuck, w);
  if (w->sched && w->o.quiet)
    bs_sched_set_quiet(w->sched, w->o.quiet, w->o.quiet_ctx);
  if (w->sched && w->o.past && w->o.deadline_ms > 0)
    bs_sched_set_deadline(
        w->sched, bs_world_sched_now(w) + (uint64_t)(w->o.deadline_ms * 1e6),
        w->o.past, w->o.past_ctx);
  BS_CHECK(alloc_ranks(w));
  BS_CHECK(w->be->world_init(w));
  *out = w;
  w = NULL;
out:
  bs_world_destroy(w);
  return st;
}

void bs_world_destroy(bs_world *w) {
  if (!w)
    return;
  bs_world_pgs_free(w);
  if (w->impl)
    w->be->world_fini(w);
  for (int i = 0; w->comms && i < w->o.size; i++) {
    bs_flight_destroy(w->comms[i].fr);
    free(w->comms[i].swapped);
  }
  free(w->comms);
  free(w->pos);
  free(w->rank_st);
  free(w->rank_err);
  free(w->report);
  free(w->fail_pos);
  pthread_mutex_destroy(&w->mu);
  pthread_mutex_destroy(&w->settle_mu);
  sem_destroy(&w->running);
  bs_sched_destroy(w->sched);
  free(w);
}

void bs_world_turn(bs_comm *c, bool take) {
  bs_world *w = c->w;
  if (c->parent) /* a group's handle: the turn is its rank's */
    c = c->parent;
  if (!w->turns)
    return;
  /* Turns are kept after the world's failure too: 16,384 ranks returning
   * it at once, every one pausing its memory (mprotect, madvise), spun on
   * the process's mmap lock for seconds of CPU each, which no wait of
   * theirs accounts for; in turns they queue, and say so (queued_ns). */
  if (take == c->turn)
    return;
  if (!take) {
    sem_post(&w->running);
    c->turn = false;
    return;
  }
  uint64_t t0 = bs_clock_mono_ns();
  while (sem_wait(&w->running) != 0)
    ;
  c->turn = true;
  uint64_t t1 = bs_clock_mono_ns(), from = t0;
  c->turn_wait_ns += t1 - t0;
  /* Read after the status: set before it (fail_first). */
  if (c->fail_ns || bs_world_abort_status(w) == BS_OK)
    return;
  pthread_mutex_lock(&w->mu);
  if (w->stall_ns > from)
    from = w->stall_ns;
  pthread_mutex_unlock(&w->mu);
  if (t1 > from)
    c->queued_ns += t1 - from;
}

static void *rank_main(void *p) {
  bs_comm *c = p;
  bs_world *w = c->w;
  if (!w->fibers) /* fibers run on their thread's signal stack */
    bs_world_stacks_enter(w->stacks, c->rank, NULL);
  if (w->sched) /* from here on the rank runs when scheduled */
    bs_sched_begin(w->sched, c->rank);
  bs_err_set_rank(c->grank);
  bs_err_clear();
  bs_world_turn(c, true);
  uint64_t t0 = bs_span_now();
  bs_status st = w->be->rank_init(c);
  bs_span_since(BS_SPAN_COMM_INIT, t0);
  if (st == BS_OK)
    st = w->fn(c, w->args ? w->args[c->rank] : NULL);
  bs_world_turn(c, false);
  char why[64];
  snprintf(why, sizeof why, "returned %s from its rank function",
           bs_status_name(st));
  bs_world_leave(c, BS_RANK_EXITED, why);
  w->be->rank_fini(c);
  pthread_mutex_lock(&w->mu);
  w->rank_st[c->rank] = st;
  w->rank_err[c->rank] = *bs_err();
  pthread_mutex_unlock(&w->mu);
  if (w->sched)
    bs_sched_end(w->sched);
  return NULL;
}

static void on_watchdog(void *ctx, int slot, uint64_t armed_ns) {
  bs_world *w = ctx;
  bs_world_timeout(w, slot, armed_ns);
  w->be->wake(w);
}

/* A rank whose thread never started is dead: its peers must not wait. */
static void never_started(bs_world *w, int rank) {
  if (w->sched)
    bs_sched_absent(w->sched, rank);
  pthread_mutex_lock(&w->mu);
  w->rank_st[rank] = BS_ERR_RANK_DEAD;
  snprintf(w->rank_err[rank].message, sizeof w->rank_err[rank].message,
           "rank thread could not start");
  w->rank_err[rank].code = BS_ERR_RANK_DEAD;
  pthread_mutex_unlock(&w->mu);
  bs_world_leave(&w->comms[rank], BS_RANK_DEAD, "its thread could not start");
}

/* Worst status, and the record of the lowest rank that has it. */
static bs_status worst(const bs_world *w, int *who) {
  bs_status st = BS_OK;
  *who = -1;
  for (int i = 0; i < w->o.size; i++)
    if (w->rank_st[i] > st) {
      st = w->rank_st[i];
      *who = i;
    }
  return st;
}

/* Rank i's thread, on its stack; false (the rank dead) when it could not
 * start. */
static bool start_rank(bs_world *w, int i, pthread_t *t) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  bs_world_stacks_attr(w->stacks, i, &attr);
  bool ok = pthread_create(t, &attr, rank_main, &w->comms[i]) == 0;
  pthread_attr_destroy(&attr);
  if (!ok)
    never_started(w, i);
  return ok;
}

/* Ranks run as fibers on this thread where a scheduler runs them one at a
 * time on stacks of the world's, none steps outside, and every device is
 * the host's (a CUDA context is a thread's). */
static bool use_fibers(const bs_world *w) {
  if (!w->sched || !w->stacks || w->o.outside)
    return false;
  for (int i = 0; i < w->o.size; i++)
    if (w->comms[i].dev && !bs_dev_in_process(w->comms[i].dev))
      return false;
  return true;
}

/* Every rank a fiber on this thread, on its stack; this thread's signal
 * stack is rank 0's meanwhile. */
static bs_status run_fibers(bs_world *w) {
  bs_status st = BS_OK;
  stack_t old;
  for (int i = 0; i < w->o.size; i++) {
    size_t size = 0;
    void *stack = bs_world_stacks_get(w->stacks, i, &size);
    BS_CHECK(bs_sched_spawn(w->sched, i, rank_main, &w->comms[i], stack, size));
  }
  bs_world_stacks_enter(w->stacks, 0, &old);
  bs_sched_run(w->sched);
  bs_world_stacks_leave(&old);
out:
  return st;
}

static bs_status spawn_and_join(bs_world *w) {
  bs_status st = BS_OK;
  pthread_t *t = NULL;
  bool *started = NULL;
  BS_CHECK(bs_world_stacks_create(w->o.size, &w->stacks));
  if ((w->fibers = use_fibers(w))) {
    st = run_fibers(w);
    goto out;
  }
  t = calloc((size_t)w->o.size, sizeof *t);
  started = calloc((size_t)w->o.size, sizeof *started);
  if (!t || !started)
    BS_FAIL(BS_ERR_NOMEM, NULL, "world: %d rank threads", w->o.size);
  bs_futex_hash_room(w->o.size);
  for (int i = 0; i < w->o.size; i++)
    started[i] = start_rank(w, i, &t[i]);
  if (w->sched)
    bs_sched_run(w->sched);
  for (int i = 0; i < w->o.size; i++)
    if (started[i])
      pthread_join(t[i], NULL);
out:
  bs_world_stacks_destroy(w->stacks);
  w->stacks = NULL;
  free(t);
  free(started);
  return st;
}

/* Ranks spread over processes: a rank of this process that died is this
 * process's to report (its report names it), even when its peers, in other
 * processes, learnt of it there and this world saw no failure. */
static void report_dead(bs_world *w) {
  if (w->o.global_size == w->o.size || bs_world_abort_status(w) != BS_OK)
    return;
  for (int i = 0; i < w->o.size; i++)
    if (w->pos[i].state == BS_RANK_DEAD) {
      bs_world_fail(w, BS_ERR_RANK_DEAD, w->pos[i].since_ns, NULL, 0,
                    "rank %d died: %s", w->comms[i].grank, w->pos[i].why);
      return;
    }
}

/* How often the watchdog thread looks at the other processes' news. */
static int tick_ms(const bs_world *w) {
  if (w->o.abort_dir || w->be->tick_ms <= 0)
    return SHARE_POLL_MS;
  return w->be->tick_ms;
}

bs_status bs_world_run(bs_world *w, bs_dev *const *devs, bs_rank_fn fn,
                       void *const *args) {
  bs_status st = BS_OK;
  int who = -1;
  if (!w || !fn)
    BS_FAIL(BS_ERR_INVALID, NULL, "world run: no world or no rank function");
  if (w->ran)
    BS_FAIL(BS_ERR_STATE, NULL, "world run: a world runs once");
  w->ran = true;
  w->fn = fn;
  w->args = args;
  for (int i = 0; i < w->o.size; i++)
    w->comms[i].dev = devs ? devs[i] : NULL;
  /* Scheduled, the waits it watches bound themselves on virtual time: no
   * thread of its own looks at the real clock. */
  if (w->sched)
    BS_CHECK(bs_watchdog_create(w->o.size, w->o.timeout_ms, &w->wd));
  else
    BS_CHECK(bs_watchdog_start_ticking(
        w->o.size, w->o.timeout_ms, on_watchdog,
        w->o.abort_dir ? poll_shared : w->be->tick, tick_ms(w), w, &w->wd));
  bs_world_running(w, true);
  st = spawn_and_join(w);
  bs_world_running(w, false);
  w->end_ns = bs_world_sched_now(w);
  bs_watchdog_stop(w->wd);
  w->wd = NULL;
  report_dead(w);
  BS_CHECK(st);
  st = worst(w, &who);
  if (st != BS_OK && bs_err()->code == BS_OK)
    *bs_err() = w->rank_err[who];
  if (st != BS_OK && w->o.flight_dir)
    bs_world_dump_flight(w, w->o.flight_dir);
out:
  return st;
}

bs_status bs_world_rank_status(const bs_world *w, int rank, bs_error *err) {
  if (!w || rank < 0 || rank >= w->o.size)
    return bs_err_fail(BS_ERR_INVALID, NULL, "rank status: no rank %d", rank);
  if (err)
    *err = w->rank_err[rank];
  return w->rank_st[rank];
}

const bs_world_opts *bs_world_options(const bs_world *w) {
  return &w->o;
}

void *bs_world_impl(const bs_world *w) {
  return w->impl;
}

void bs_world_set_impl(bs_world *w, void *impl) {
  w->impl = impl;
}

const char *bs_world_report(const bs_world *w) {
  return w && w->report ? w->report : "";
}

/* The last local rank's return from a collective with the failure, less
 * what it waited for a turn after the failure (bs_comm.queued_ns); a
 * world whose ranks all died returned nothing to anyone (its peers, in
 * other processes, say when they returned). */
double bs_world_detect_ms(const bs_world *w) {
  if (!w || !w->stall_ns || !w->end_ns)
    return -1.0;
  uint64_t d = 0;
  bool alive = false, returned = false;
  for (int i = 0; i < w->o.size; i++) {
    const bs_comm *c = &w->comms[i];
    alive |= w->pos[i].state != BS_RANK_DEAD;
    if (!c->fail_ns)
      continue;
    returned = true;
    uint64_t own = c->fail_ns > w->stall_ns ? c->fail_ns - w->stall_ns : 0;
    uint64_t queued = c->queued_ns;
    own = own > queued ? own - queued : 0;
    d = own > d ? own : d;
  }
  if (!alive && !returned)
    return -1.0;
  if (!returned)
    d = w->end_ns > w->stall_ns ? w->end_ns - w->stall_ns : 0;
  return (double)d / 1e6;
}

static char *flight_json(const bs_world *w, int rank, bool marked) {
  if (!w || rank < 0 || rank >= w->o.size)
    return NULL;
  const bs_comm *c = &w->comms[rank];
  bs_flight_meta m = {.rank = c->grank,
                      .size = w->o.global_size,
                      .backend = w->be->name,
                      .timeout_ms = w->o.timeout_ms,
                      .world_marked = marked};
  return bs_flight_json(c->fr, &m);
}

char *bs_world_flight_json(const bs_world *w, int rank) {
  return flight_json(w, rank, false);
}

char *bs_world_flight_json_marked(const bs_world *w, int rank) {
  return flight_json(w, rank, true);
}

bs_status bs_world_flight_colls(const bs_world *w, int rank, bs_coll_rec **out,
                                size_t *n) {
  if (!w || rank < 0 || rank >= w->o.size)
    return bs_err_fail(BS_ERR_INVALID, NULL, "flight recorder of rank %d: none",
                       rank);
  return bs_flight_colls(w->comms[rank].fr, out, n);
}

char *bs_world_flight_expand(const char *json) {
  return json ? bs_flight_json_expand(json) : NULL;
}

static bs_status write_file(const char *path, const char *text) {
  bs_status st = BS_OK;
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0)
    BS_FAIL(BS_ERR_INVALID, NULL, "flight dump: cannot write %s", path);
out:
  if (f && fclose(f) != 0 && st == BS_OK)
    st =
        bs_err_fail(BS_ERR_INVALID, NULL, "flight dump: cannot write %s", path);
  return st;
}

bs_status bs_world_dump_flight(const bs_world *w, const char *dir) {
  bs_status st = BS_OK;
  char *json = NULL;
  if (!w || !dir)
    BS_FAIL(BS_ERR_INVALID, NULL, "flight dump: no world or directory");
  mkdir(dir, 0777); /* may exist; fopen reports the real problem */
  for (int i = 0; i < w->o.size; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/flight_rank%d.json", dir,
             w->comms[i].grank);
    if (!(json = bs_world_flight_json(w, i)))
      BS_FAIL(BS_ERR_NOMEM, NULL, "flight dump of rank %d", i);
    BS_CHECK(write_file(path, json));
    free(json);
    json = NULL;
  }
out:
  free(json);
  return st;
}

bs_status bs_world_abort_status(const bs_world *w) {
  return (bs_status)atomic_load(&((bs_world *)w)->abort_st);
}

/* The report of the world's failure, from where the ranks were when it
 * happened (kept, so that adopting the job's cause later keeps them); mu
 * held. */
static void write_report(bs_world *w, bs_status why, uint64_t detect_ns) {
  bs_report_in in = {.status = why,
                     .cause = w->cause,
                     .backend = w->be->name,
                     .size = w->fail_npos,
                     .first_rank = w->fail_first,
                     .world = w->o.global_size,
                     .pos = w->fail_pos,
                     .stall_ns = w->stall_ns,
                     .detect_ns = detect_ns,
                     .timeout_ms = w->o.timeout_ms,
                     .pgs = w->pgs,
                     .npgs = w->npgs};
  char *report = bs_comm_report(&in);
  if (report) {
    free(w->report);
    w->report = report;
  }
}

/* Records the world's first failure; true when this call did. */
static bool fail_first(bs_world *w, bs_status why, uint64_t stall_ns,
                       const bs_rank_pos *pos, int npos, const char *cause) {
  bool first = false;
  pthread_mutex_lock(&w->mu);
  if (bs_world_abort_status(w) == BS_OK) {
    snprintf(w->cause, sizeof w->cause, "%s", cause);
    uint64_t now = bs_world_sched_now(w);
    w->stall_ns = stall_ns ? stall_ns : now;
    int n = pos ? npos : w->o.size;
    w->fail_pos = calloc((size_t)n, sizeof *w->fail_pos);
    w->fail_npos = w->fail_pos ? n : 0;
    w->fail_first = pos ? 0 : w->o.first_rank;
    if (w->fail_pos)
      memcpy(w->fail_pos, pos ? pos : w->pos, (size_t)n * sizeof *pos);
    write_report(w, why, now);
    atomic_store(&w->abort_st, (int)why);
    bs_world_sched_bump(w, &w->failed_word);
    first = true;
  }
  pthread_mutex_unlock(&w->mu);
  return first;
}

/* The other processes learn of it from the note (their watchdog threads
 * look for it): the stall time travels as wall-clock time. */
static void share(bs_world *w, bs_status why, bool follows) {
  uint64_t mono = bs_clock_mono_ns(), real = bs_abort_real_ns();
  bs_abort_note n = {.st = why,
                     .first = w->o.first_rank,
                     .size = w->o.size,
                     .follows = follows};
  pthread_mutex_lock(&w->mu);
  n.real_ns = real - (mono - w->stall_ns);
  snprintf(n.cause, sizeof n.cause, "%s", w->cause);
  n.done = UINT64_MAX;
  n.torn = UINT32_MAX;
  for (int i = 0; i < w->o.size; i++) {
    n.done = w->pos[i].last_seq < n.done ? w->pos[i].last_seq : n.done;
    n.torn = w->pos[i].torn < n.torn ? w->pos[i].torn : n.torn;
  }
  pthread_mutex_unlock(&w->mu);
  if (bs_abort_publish(w->o.abort_dir, &n) != BS_OK)
    fprintf(stderr, "backstop: %s\n", bs_err()->message);
}

bool bs_world_joined_by_failer(bs_world *w, const bs_rank_pos *p) {
  pthread_mutex_lock(&w->mu);
  bool joined = p->state == BS_RANK_IN_COLL && p->at.pg == 0 &&
                p->at.op != BS_COLL_SEND && p->at.op != BS_COLL_RECV &&
                p->at.seq && p->at.seq <= w->peer_done;
  /* A teardown its failer finished (ncclCommFinalize) finishes here too. */
  joined = joined || (p->tearing && p->torn < w->peer_torn);
  pthread_mutex_unlock(&w->mu);
  return joined;
}

bs_status bs_world_fail(bs_world *w, bs_status why, uint64_t stall_ns,
                        const bs_rank_pos *pos, int npos, const char *fmt,
                        ...) {
  char cause[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cause, sizeof cause, fmt, ap);
  va_end(ap);
  if (fail_first(w, why, stall_ns, pos, npos, cause)) {
    if (w->o.abort_dir)
      share(w, why, false);
    if (w->be->nudge)
      w->be->nudge(w);
  }
  return bs_world_abort_status(w);
}

/* A note's stall on this host's monotonic clock. */
static uint64_t note_stall(const bs_abort_note *n) {
  uint64_t mono = bs_clock_mono_ns(), real = bs_abort_real_ns();
  uint64_t ago = real > n->real_ns ? real - n->real_ns : 0;
  return ago < mono ? mono - ago : mono;
}

/* On the watchdog thread: another process's world failed, so this one
 * does too, and says it follows. */
static void poll_shared(void *ctx) {
  bs_world *w = ctx;
  bs_abort_note n;
  if (bs_world_abort_status(w) != BS_OK ||
      !bs_abort_find(w->o.abort_dir, w->o.first_rank, &n))
    return;
  pthread_mutex_lock(&w->mu);
  w->peer_done = n.done; /* before the failure any waiter may see */
  w->peer_torn = n.torn;
  pthread_mutex_unlock(&w->mu);
  bool first = fail_first(w, n.st, note_stall(&n), NULL, 0, n.cause);
  if (first)
    share(w, bs_world_abort_status(w), true);
  w->be->wake(w);
}

static void nap_ms(int ms) {
  struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* Waits until every process's note is in (or the bound), then takes the
 * winner as this world's failure: status, cause, stall and report. */
static void settle_across(bs_world *w) {
  int procs = w->o.procs > 0 ? w->o.procs : 1;
  bs_abort_note *notes = calloc((size_t)procs, sizeof *notes);
  size_t n = 0;
  uint64_t until = bs_clock_mono_ns() + SETTLE_MS * 1000000ull;
  while (notes) {
    n = bs_abort_collect(w->o.abort_dir, notes, (size_t)procs);
    if (n >= (size_t)procs || bs_clock_mono_ns() >= until)
      break;
    nap_ms(SHARE_POLL_MS);
  }
  const bs_abort_note *best = notes ? bs_abort_best(notes, n) : NULL;
  if (best)
    bs_world_adopt(w, best->st, note_stall(best), best->cause);
  free(notes);
}

void bs_world_adopt(bs_world *w, bs_status st, uint64_t stall_ns,
                    const char *cause) {
  pthread_mutex_lock(&w->mu);
  /* This world's own failure won: its report (which may know every rank's
   * fingerprint) stands. */
  if (st == bs_world_abort_status(w) && strcmp(cause, w->cause) == 0) {
    pthread_mutex_unlock(&w->mu);
    return;
  }
  snprintf(w->cause, sizeof w->cause, "%s", cause);
  w->stall_ns = stall_ns;
  write_report(w, st, bs_world_sched_now(w));
  atomic_store(&w->abort_st, (int)st);
  bs_world_sched_bump(w, &w->failed_word);
  pthread_mutex_unlock(&w->mu);
}

bs_status bs_world_settle(bs_world *w) {
  if (bs_world_abort_status(w) == BS_OK || (!w->o.abort_dir && !w->be->settle))
    return bs_world_abort_status(w);
  pthread_mutex_lock(&w->settle_mu);
  if (!w->settled) {
    if (w->o.abort_dir)
      settle_across(w);
    else
      w->be->settle(w);
    w->settled = true;
  }
  pthread_mutex_unlock(&w->settle_mu);
  return bs_world_abort_status(w);
}

void bs_world_abort(bs_world *w, bs_status why, uint64_t stall_ns,
                    const char *fmt, ...) {
  char cause[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cause, sizeof cause, fmt, ap);
  va_end(ap);
  bs_world_fail(w, why, stall_ns, NULL, 0, "%s", cause);
  w->be->wake(w);
}

/* The rank a timeout names: the lowest of this process's ranks waiting in
 * the same collective, not whichever watchdog fired first (a matter of
 * timing among the stuck ranks), so that one seed's reports read the same.
 * It may have waited less than the timeout: the message says a rank did.
 * Under w->mu. */
static int first_waiting(const bs_world *w, int rank) {
  const bs_coll_args *at = &w->pos[rank].at;
  for (int i = 0; i < rank; i++)
    if (w->pos[i].state == BS_RANK_IN_COLL && w->pos[i].at.seq == at->seq &&
        w->pos[i].at.op == at->op && w->pos[i].at.pg == at->pg)
      return i;
  return rank;
}

/* With groups or p2p about, the op the report is about (the root of
 * the hang), not whichever watchdog fired first: the cause names it alike
 * from run to run. Under w->mu. */
static int root_waiting(const bs_world *w, int rank) {
  bs_report_in in = {.size = w->o.size,
                     .first_rank = w->o.first_rank,
                     .world = w->o.global_size,
                     .pos = w->pos,
                     .pgs = w->pgs,
                     .npgs = w->npgs};
  int f = bs_comm_report_pg_applies(&in) ? bs_comm_report_pg_focus(&in) : -1;
  return f >= 0 ? f - w->o.first_rank : rank;
}

/* A timeout's cause: written here, read back by bs_world_culprit. */
#define TIMEOUT_CAUSE                                                          \
  "a rank waited more than %d ms in %s (the lowest waiting: rank %d)"

bs_status bs_world_timeout(bs_world *w, int rank, uint64_t since_ns) {
  char coll[160];
  pthread_mutex_lock(&w->mu);
  /* An earlier failure wins (fail_first): the hundreds of ranks that time
   * out together skip the search of the root (each over every rank). */
  bs_status failed = bs_world_abort_status(w);
  if (failed != BS_OK) {
    pthread_mutex_unlock(&w->mu);
    return failed;
  }
  rank = root_waiting(w, rank);
  bs_coll_args at = w->pos[rank].at;
  int named = first_waiting(w, rank);
  char of[BS_PG_NAME + 16] = "";
  if (at.pg > 0 && at.pg <= w->npgs)
    snprintf(of, sizeof of, " of group %s", w->pgs[at.pg - 1]->name);
  pthread_mutex_unlock(&w->mu);
  snprintf(coll, sizeof coll, "%s #%llu%s", bs_coll_args_name(&at),
           (unsigned long long)at.seq, of);
  return bs_world_fail(w, BS_ERR_TIMEOUT, since_ns, NULL, 0, TIMEOUT_CAUSE,
                       w->o.timeout_ms, coll, w->comms[named].grank);
}

int bs_world_culprit(bs_world *w) {
  char cause[sizeof w->cause], at[160];
  int ms = 0, rank = -1;
  bs_world_cause(w, cause, sizeof cause);
  if (sscanf(cause,
             "a rank waited more than %d ms in %159[^(](the lowest waiting: "
             "rank %d)",
             &ms, at, &rank) != 3)
    return -1;
  return rank;
}

void bs_world_cause(bs_world *w, char *buf, size_t n) {
  pthread_mutex_lock(&w->mu);
  snprintf(buf, n, "%s", w->cause);
  pthread_mutex_unlock(&w->mu);
}
