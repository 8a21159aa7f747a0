/* The deterministic scheduler (bs_sched.h). One lock guards it all; the
 * baton is `current`, and a task runs only while it holds it. A task that
 * stops (waits, yields, ends, steps outside) decides who runs next on its
 * own thread, under the lock, posts that task's semaphore once it has let
 * the lock go (the woken thread would otherwise wake only to wait for it),
 * and sleeps on its own until the baton comes back: a hand-over wakes one
 * thread, which runs without taking the lock again.
 *
 * One task runs at a time, so every task's thread runs on one CPU, the
 * one the scheduler was made on: a hand-over then wakes a thread on the
 * CPU that is about to sleep, not one on another CPU through an
 * interrupt (3x cheaper on the 2-core VM: 6 us rather than 19 at 4096
 * threads). */
#include "bs_sched.h"

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bs_clock.h"
#include "bs_fiber.h"
#include "bs_sched_heap.h"
#include "bs_sched_pick.h"
#include "bs_task_local.h"

#define NEVER UINT64_MAX
enum { NONE = -1, DECIDING = -2 };
enum { DEFAULT_GUARD_MS = 300000, TRACE_CAP = 4096, BUCKETS = 256 };

typedef enum task_state {
  T_NEW = 0,
  T_READY,
  T_WAIT,
  T_OUT,
  T_DONE
} task_state;

typedef struct task {
  sem_t go; /* posted once for each turn it is given */
  task_state state;
  const void *on; /* T_WAIT: what it waits on (NULL: a sleep) */
  int prev, next; /* the list of waiters of its bucket */
  void *arg;      /* a fiber's: its function's argument */
} task;

struct bs_sched {
  pthread_mutex_t mu;
  pthread_cond_t main_cv; /* the starting thread's */
  int n;
  task *t;
  bs_sched_pick *pick;
  bs_sched_heap timers;
  int bucket[BUCKETS]; /* waiters by what they wait on, hashed */
  _Atomic uint64_t now;
  uint64_t origin; /* the clock's start: decisions hash the time since */
  /* The task holding the baton; NONE: no one (before the start, after the
   * end, or while the scheduler waits for tasks outside); DECIDING: the
   * stuck hook runs. */
  int current;
  int last; /* the task that ran the last step */
  int begun, live, outside;
  int sleeping; /* tasks waiting on nothing but their timer */
  uint64_t steps, hash, comebacks;
  int trace[TRACE_CAP];
  size_t ntrace;
  void (*stuck)(void *ctx);
  void *stuck_ctx;
  void (*quiet)(void *ctx);
  void *quiet_ctx;
  uint64_t deadline; /* NEVER: none */
  void (*past)(void *ctx);
  void *past_ctx;
  int guard_ms;
  bool pin; /* tasks run on cpu; they end on the mask they came with */
  int cpu;
  cpu_set_t mask;
  /* Fibers (bs_sched_spawn): every task on the thread of bs_sched_run,
   * whose own context is fiber[n]; each runs entry(its arg). One block:
   * the n + 1 fibers, then their n + 1 copies of the task-locals. */
  bs_fiber *fiber;
  void *(*entry)(void *);
  bool finished; /* fibers: every task ended (the guard's thread stops) */
};

static _Thread_local bs_sched *self;
static _Thread_local int self_task = NONE;

static void sched_free(bs_sched *s) {
  for (int i = 0; s->t && i < s->n; i++)
    sem_destroy(&s->t[i].go);
  for (int i = 0; s->fiber && i < s->n; i++)
    bs_fiber_destroy(&s->fiber[i]);
  free(s->fiber);
  free(s->t);
  bs_sched_pick_destroy(s->pick);
  bs_sched_heap_fini(&s->timers);
  pthread_cond_destroy(&s->main_cv);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

/* The CPU the tasks share: the creating thread's, when it may use it. */
static void init_cpu(bs_sched *s) {
  s->cpu = sched_getcpu();
  s->pin =
      s->cpu >= 0 && s->cpu < CPU_SETSIZE &&
      pthread_getaffinity_np(pthread_self(), sizeof s->mask, &s->mask) == 0 &&
      CPU_ISSET(s->cpu, &s->mask);
}

static void init_sync(bs_sched *s) {
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->main_cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&s->mu, NULL);
  for (int i = 0; i < s->n; i++) {
    sem_init(&s->t[i].go, 0, 0);
    s->t[i].prev = s->t[i].next = NONE;
  }
  for (int b = 0; b < BUCKETS; b++)
    s->bucket[b] = NONE;
}

bs_status bs_sched_create(int ntasks, const bs_sched_spec *spec,
                          uint64_t origin_ns, bs_sched **out) {
  bs_status st = BS_OK;
  bs_sched *s = NULL;
  if (ntasks < 1 || !spec || spec->policy == BS_SCHED_THREADS || !out)
    BS_FAIL(BS_ERR_INVALID, NULL, "scheduler: %d tasks, policy %d", ntasks,
            spec ? (int)spec->policy : -1);
  if (!(s = calloc(1, sizeof *s)) ||
      !(s->t = calloc((size_t)ntasks, sizeof *s->t)) ||
      !bs_sched_heap_init(&s->timers, ntasks)) {
    if (s)
      bs_sched_heap_fini(&s->timers);
    free(s ? s->t : NULL);
    free(s);
    BS_FAIL(BS_ERR_NOMEM, NULL, "scheduler of %d tasks", ntasks);
  }
  s->n = s->live = ntasks;
  s->current = s->last = NONE;
  s->hash = 14695981039346656037ull; /* FNV-1a's offset basis */
  s->guard_ms = spec->guard_ms > 0 ? spec->guard_ms : DEFAULT_GUARD_MS;
  atomic_init(&s->now, origin_ns);
  s->origin = origin_ns;
  s->deadline = NEVER;
  init_sync(s);
  init_cpu(s);
  *out = s;
  st = bs_sched_pick_create(ntasks, spec, &s->pick);
  if (st != BS_OK) {
    sched_free(s);
    *out = NULL;
  }
out:
  return st;
}

void bs_sched_destroy(bs_sched *s) {
  if (s)
    sched_free(s);
}

void bs_sched_set_stuck(bs_sched *s, void (*stuck)(void *ctx), void *ctx) {
  pthread_mutex_lock(&s->mu);
  s->stuck = stuck;
  s->stuck_ctx = ctx;
  pthread_mutex_unlock(&s->mu);
}

void bs_sched_set_quiet(bs_sched *s, void (*quiet)(void *ctx), void *ctx) {
  pthread_mutex_lock(&s->mu);
  s->quiet = quiet;
  s->quiet_ctx = ctx;
  pthread_mutex_unlock(&s->mu);
}

void bs_sched_set_deadline(bs_sched *s, uint64_t until_ns,
                           void (*past)(void *ctx), void *ctx) {
  pthread_mutex_lock(&s->mu);
  s->deadline = past ? until_ns : NEVER;
  s->past = past;
  s->past_ctx = ctx;
  pthread_mutex_unlock(&s->mu);
}

bs_sched *bs_sched_self(void) {
  return self;
}

uint64_t bs_sched_now(const bs_sched *s) {
  return atomic_load(&((bs_sched *)s)->now);
}

/* ---- what tasks wait on ---- */

static int bucket_of(const void *on) {
  uint64_t x = (uint64_t)(uintptr_t)on * 0x9e3779b97f4a7c15ull;
  return (int)(x >> 56) % BUCKETS;
}

static void link_waiter(bs_sched *s, int k) {
  int *head = &s->bucket[bucket_of(s->t[k].on)];
  s->t[k].prev = NONE;
  s->t[k].next = *head;
  if (*head != NONE)
    s->t[*head].prev = k;
  *head = k;
}

static void unlink_waiter(bs_sched *s, int k) {
  task *t = &s->t[k];
  if (t->prev != NONE)
    s->t[t->prev].next = t->next;
  else
    s->bucket[bucket_of(t->on)] = t->next;
  if (t->next != NONE)
    s->t[t->next].prev = t->prev;
  t->prev = t->next = NONE;
}

/* Locked: a waiting task may run again. */
static void ready(bs_sched *s, int k) {
  task *t = &s->t[k];
  if (t->on)
    unlink_waiter(s, k);
  else if (t->state == T_WAIT)
    s->sleeping--;
  bs_sched_heap_drop(&s->timers, k);
  t->on = NULL;
  t->state = T_READY;
  bs_sched_pick_set(s->pick, k, true);
}

/* ---- decisions ---- */

/* Locked: k runs next; the decision joins the hash and the trace. */
static void decide(bs_sched *s, int k) {
  uint64_t v[2] = {(uint64_t)k, atomic_load(&s->now) - s->origin};
  const unsigned char *p = (const unsigned char *)v;
  for (size_t i = 0; i < sizeof v; i++)
    s->hash = (s->hash ^ p[i]) * 1099511628211ull;
  s->steps++;
  if (s->ntrace < TRACE_CAP)
    s->trace[s->ntrace++] = k;
  s->current = k;
}

/* Unlocked: the task dispatch chose (NONE: none) takes the baton. */
static void wake(bs_sched *s, int k) {
  if (k >= 0)
    sem_post(&s->t[k].go);
}

/* Locked: hook(ctx) runs unlocked, the baton held by no task (DECIDING). */
static void call_out(bs_sched *s, void (*hook)(void *ctx), void *ctx) {
  int was = s->current;
  s->current = DECIDING;
  pthread_mutex_unlock(&s->mu);
  hook(ctx);
  pthread_mutex_lock(&s->mu);
  s->current = was;
}

/* Locked: the clock would move to `when`, past the deadline: its hook
 * (which ends the process, or else the deadline is gone). */
static void deadline_passed(bs_sched *s) {
  void (*past)(void *ctx) = s->past;
  s->deadline = NEVER;
  s->past = NULL;
  call_out(s, past, s->past_ctx);
}

/* Locked, nothing runnable: the clock to the earliest timer, whose tasks
 * (all of that time) may run; false when none is set. */
static bool advance(bs_sched *s) {
  uint64_t when = 0;
  int k = bs_sched_heap_top(&s->timers, &when);
  if (k < 0)
    return false;
  if (when > s->deadline) { /* the hook ran unlocked: look again */
    deadline_passed(s);
    return true;
  }
  if (when > atomic_load(&s->now))
    atomic_store(&s->now, when);
  while ((k = bs_sched_heap_top(&s->timers, &when)) >= 0 &&
         when <= atomic_load(&s->now))
    ready(s, k);
  return true;
}

/* Says where the scheduler is, and aborts: a bug of the scheduler or of
 * its tasks' waits, never a verdict on the system under test. */
static void fatal(bs_sched *s, const char *why) {
  fprintf(stderr,
          "backstop: scheduler guard: %s (a bug of the scheduler or of a "
          "wait it cannot see, not a hang of the run): %llu decisions, "
          "virtual time %llu ns, %d of %d tasks live, %d outside\n",
          why, (unsigned long long)s->steps,
          (unsigned long long)atomic_load(&s->now), s->live, s->n, s->outside);
  for (int i = 0, shown = 0; i < s->n && shown < 16; i++)
    if (s->t[i].state == T_WAIT || s->t[i].state == T_OUT) {
      fprintf(stderr, "  task %d: %s\n", i,
              s->t[i].state == T_OUT ? "outside" : "waiting");
      shown++;
    }
  abort();
}

/* Locked: every task waits and no timer is set. The stuck hook (unlocked,
 * the baton held by no task) should wake some. */
static void unstick(bs_sched *s) {
  if (!s->stuck)
    fatal(s, "every task waits and none has a timer (a deadlock)");
  call_out(s, s->stuck, s->stuck_ctx);
  if (bs_sched_pick_count(s->pick) == 0)
    fatal(s, "every task waits, none has a timer, and the stuck hook woke "
             "none");
}

/* Locked: who runs next (its semaphore to post once unlocked: wake());
 * when no one can now, the clock moves to the next timer. Tasks outside
 * wait for those inside (bs_sched_outside), so the clock moves while they
 * are out; with no timer left, no one runs until every one of them is
 * back. */
static int dispatch(bs_sched *s) {
  for (;;) {
    if (bs_sched_pick_count(s->pick) > 0) {
      decide(s, bs_sched_pick_next(s->pick, s->steps + 1, s->last));
      return s->current;
    }
    if (s->quiet && s->sleeping == 0 && s->live > 0) {
      call_out(s, s->quiet, s->quiet_ctx);
      if (bs_sched_pick_count(s->pick) > 0)
        continue;
    }
    if (advance(s))
      continue;
    if (s->live == 0 || s->outside > 0) {
      s->current = NONE;
      pthread_cond_signal(&s->main_cv);
      return NONE;
    }
    unstick(s);
  }
}

/* Unlocked, after it stopped: task k sleeps until it holds the baton. */
static void await_turn(bs_sched *s, int k) {
  while (sem_wait(&s->t[k].go) != 0)
    ;
}

/* Locked: task k stopped (its state says how); who runs next. */
static int hand_on(bs_sched *s, int k) {
  s->last = k;
  return dispatch(s);
}

/* Unlocked, on fiber k (NONE: the thread's own): fiber next runs (NONE:
 * the thread's own), k for good when it ended. */
static void fiber_to(bs_sched *s, int k, int next, bool ended) {
  bs_fiber *from = &s->fiber[k == NONE ? s->n : k];
  bs_fiber *to = &s->fiber[next == NONE ? s->n : next];
  self_task = next;
  if (ended)
    bs_fiber_exit(from, to);
  bs_fiber_switch(from, to);
}

/* Locked: task k stopped (its state says how); the next runs, and k
 * sleeps, unlocked, until its turn comes back. */
static void stop(bs_sched *s, int k) {
  int next = hand_on(s, k);
  pthread_mutex_unlock(&s->mu);
  if (s->fiber) {
    if (next != k)
      fiber_to(s, k, next, false);
    return;
  }
  wake(s, next);
  await_turn(s, k);
}

/* On task's thread: it runs on the tasks' CPU, or (false) on the CPUs it
 * came with. */
static void pin(const bs_sched *s, bool on) {
  cpu_set_t one;
  if (!s->pin || s->fiber)
    return;
  CPU_ZERO(&one);
  CPU_SET(s->cpu, &one);
  pthread_setaffinity_np(pthread_self(), sizeof one, on ? &one : &s->mask);
}

/* ---- the tasks ---- */

void bs_sched_begin(bs_sched *s, int task) {
  if (s->fiber)
    return; /* it runs: its first turn began it */
  self = s;
  self_task = task;
  pin(s, true);
  bs_clock_set_virtual(&s->now);
  pthread_mutex_lock(&s->mu);
  s->t[task].state = T_READY;
  bs_sched_pick_set(s->pick, task, true);
  s->begun++;
  pthread_cond_signal(&s->main_cv);
  pthread_mutex_unlock(&s->mu);
  await_turn(s, task);
}

void bs_sched_end(bs_sched *s) {
  int k = self_task;
  pin(s, false); /* s may be gone once the baton is handed on */
  pthread_mutex_lock(&s->mu);
  s->t[k].state = T_DONE;
  bs_sched_pick_set(s->pick, k, false);
  s->live--;
  int next = hand_on(s, k);
  pthread_mutex_unlock(&s->mu);
  if (s->fiber)
    fiber_to(s, k, next, true);
  wake(s, next);
  self = NULL;
  self_task = NONE;
  bs_clock_set_virtual(NULL);
}

void bs_sched_absent(bs_sched *s, int task) {
  pthread_mutex_lock(&s->mu);
  s->t[task].state = T_DONE;
  s->live--;
  s->begun++;
  pthread_cond_signal(&s->main_cv);
  pthread_mutex_unlock(&s->mu);
}

void bs_sched_wait(bs_sched *s, const void *on, uint64_t until_ns) {
  int k = self_task;
  pthread_mutex_lock(&s->mu);
  task *t = &s->t[k];
  t->state = T_WAIT;
  t->on = on;
  if (on)
    link_waiter(s, k);
  else
    s->sleeping++;
  if (until_ns != NEVER)
    bs_sched_heap_set(&s->timers, k, until_ns);
  bs_sched_pick_set(s->pick, k, false);
  stop(s, k);
}

void bs_sched_sleep(bs_sched *s, uint64_t ns) {
  uint64_t now = bs_sched_now(s);
  bs_sched_wait(s, NULL, ns < NEVER - now ? now + ns : NEVER - 1);
}

void bs_sched_yield(bs_sched *s) {
  int k = self_task;
  pthread_mutex_lock(&s->mu);
  stop(s, k);
}

void bs_sched_notify(bs_sched *s, const void *on) {
  pthread_mutex_lock(&s->mu);
  for (int k = s->bucket[bucket_of(on)], next; k != NONE; k = next) {
    next = s->t[k].next;
    if (s->t[k].on == on)
      ready(s, k);
  }
  pthread_mutex_unlock(&s->mu);
}

/* Locked: back from outside, it waits for its turn. When no one runs, the
 * last one back decides, so that the choice is among every task that went
 * out. */
static int come_back(bs_sched *s, int k) {
  s->outside--;
  s->comebacks++;
  s->t[k].state = T_READY;
  bs_sched_pick_set(s->pick, k, true);
  return s->current == NONE && s->outside == 0 ? dispatch(s) : NONE;
}

void bs_sched_outside(bs_sched *s, bool out) {
  int k = self_task, next = NONE;
  if (s->fiber)
    fatal(s, "a fiber cannot step outside: its thread runs the others");
  pthread_mutex_lock(&s->mu);
  if (!out) {
    next = come_back(s, k);
  } else {
    s->t[k].state = T_OUT;
    bs_sched_pick_set(s->pick, k, false);
    s->outside++;
    next = hand_on(s, k);
  }
  pthread_mutex_unlock(&s->mu);
  wake(s, next);
  if (!out)
    await_turn(s, k);
}

/* ---- the starting thread ---- */

/* Locked: waits on the starting thread's condition up to 1 s; false when
 * nothing moved (no decision, no task begun or back) for the guard. */
static bool wait_progress(bs_sched *s, uint64_t *mark, uint64_t *since) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += 1;
  pthread_cond_timedwait(&s->main_cv, &s->mu, &ts);
  uint64_t m = s->steps + s->comebacks + (uint64_t)s->begun;
  uint64_t now = bs_clock_real_ns();
  if (m != *mark) {
    *mark = m;
    *since = now;
  }
  return now - *since < (uint64_t)s->guard_ms * 1000000ull;
}

/* ---- fibers ---- */

/* Fiber k's task-locals while it does not run (k == n: the thread's). */
static void *locals_of(const bs_sched *s, int k) {
  return (char *)(s->fiber + s->n + 1) + (size_t)k * bs_task_local_bytes();
}

/* A fiber's first turn: the task's function, which ends it. */
static void fiber_entry(void) {
  bs_fiber_started();
  bs_sched *s = self;
  s->entry(s->t[self_task].arg);
  bs_sched_end(s);
}

bs_status bs_sched_spawn(bs_sched *s, int task, void *(*fn)(void *), void *arg,
                         void *stack, size_t size) {
  bs_status st = BS_OK;
  if (task < 0 || task >= s->n || s->t[task].state != T_NEW ||
      (s->entry && s->entry != fn))
    BS_FAIL(BS_ERR_INVALID, NULL,
            "scheduler: task %d of %d not new, or another function than "
            "its peers'",
            task, s->n);
  if (!s->fiber &&
      !(s->fiber =
            calloc((size_t)s->n + 1, sizeof *s->fiber + bs_task_local_bytes())))
    BS_FAIL(BS_ERR_NOMEM, NULL, "scheduler: fibers of %d tasks", s->n);
  if (!bs_fiber_make(&s->fiber[task], stack, size, fiber_entry,
                     locals_of(s, task)))
    BS_FAIL(BS_ERR_INTERNAL, NULL, "scheduler: fiber of task %d", task);
  s->entry = fn;
  s->t[task].arg = arg;
  pthread_mutex_lock(&s->mu);
  s->t[task].state = T_READY;
  bs_sched_pick_set(s->pick, task, true);
  s->begun++;
  pthread_mutex_unlock(&s->mu);
out:
  return st;
}

/* The fibers' guard: a thread of its own, since theirs runs them. */
static void *guard_main(void *p) {
  bs_sched *s = p;
  uint64_t mark = 0, since = bs_clock_real_ns();
  pthread_mutex_lock(&s->mu);
  while (!s->finished)
    if (!wait_progress(s, &mark, &since))
      fatal(s, "no decision");
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

static void run_fibers(bs_sched *s) {
  pthread_t guard;
  bool guarded = pthread_create(&guard, NULL, guard_main, s) == 0;
  bs_fiber_thread(&s->fiber[s->n], locals_of(s, s->n));
  self = s;
  bs_clock_set_virtual(&s->now);
  pthread_mutex_lock(&s->mu);
  if (s->begun < s->n)
    fatal(s, "tasks were not all spawned");
  int first = s->live > 0 ? dispatch(s) : NONE;
  pthread_mutex_unlock(&s->mu);
  if (first != NONE)
    fiber_to(s, NONE, first, false);
  pthread_mutex_lock(&s->mu); /* back when no one can run: all ended */
  if (s->live > 0)
    fatal(s, "fibers wait and none can run");
  s->finished = true;
  pthread_cond_signal(&s->main_cv);
  pthread_mutex_unlock(&s->mu);
  if (guarded)
    pthread_join(guard, NULL);
  self = NULL;
  self_task = NONE;
  bs_clock_set_virtual(NULL);
}

void bs_sched_run(bs_sched *s) {
  uint64_t mark = 0, since = bs_clock_real_ns();
  if (s->fiber) {
    run_fibers(s);
    return;
  }
  pthread_mutex_lock(&s->mu);
  while (s->begun < s->n)
    if (!wait_progress(s, &mark, &since))
      fatal(s, "tasks did not begin");
  if (s->live > 0 && s->current == NONE) {
    int first = dispatch(s);
    pthread_mutex_unlock(&s->mu);
    wake(s, first);
    pthread_mutex_lock(&s->mu);
  }
  while (s->live > 0)
    if (!wait_progress(s, &mark, &since))
      fatal(s, "no decision");
  pthread_mutex_unlock(&s->mu);
}

/* A counter of s's, read under its lock. */
static uint64_t read_locked(const bs_sched *s, const uint64_t *field) {
  bs_sched *m = (bs_sched *)s;
  pthread_mutex_lock(&m->mu);
  uint64_t v = *field;
  pthread_mutex_unlock(&m->mu);
  return v;
}

uint64_t bs_sched_steps(const bs_sched *s) {
  return read_locked(s, &s->steps);
}

uint64_t bs_sched_hash(const bs_sched *s) {
  return read_locked(s, &s->hash);
}

size_t bs_sched_trace(const bs_sched *s, int *out, size_t n) {
  bs_sched *m = (bs_sched *)s;
  pthread_mutex_lock(&m->mu);
  size_t k = m->ntrace < n ? m->ntrace : n;
  memcpy(out, m->trace, k * sizeof *out);
  pthread_mutex_unlock(&m->mu);
  return k;
}
