/* The scheduler alone (base/bs_sched.h): one task runs at a time; a seed is
 * a schedule (the same decisions and hash every time), another seed
 * another; PCT's priorities; waits, notifies and timers on a virtual clock
 * that jumps to the next timer when every task waits (a 10 s sleep costs
 * no wall time); a deadline's hook before the clock passes it; a deadlock is
 * handed to the stuck hook at once; a quiet world (every task waits for
 * another) to the quiet hook before the clock jumps to a bound; tasks
 * outside; the guard against a
 * scheduler that makes no decision. Each of those but the tasks outside
 * runs again with the tasks as fibers on one thread (bs_sched_spawn): the
 * same seed gives the same decisions on fibers as on threads, and each
 * fiber keeps its own thread-locals (bs_task_local.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bs_clock.h"
#include "bs_err.h"
#include "bs_sched.h"
#include "bs_test_sanitized.h"
#include "bs_test_split.h"

enum { MAX_TASKS = 64, ORIGIN_NS = 1000000000 };

/* A run: n tasks, each its body on its own thread. */
typedef struct run {
  bs_sched *s;
  int n;
  void (*body)(struct run *r, int task);
  atomic_int running, most; /* tasks between two scheduling points */
  atomic_int order[MAX_TASKS * 8];
  atomic_int norder;
  atomic_int stuck_calls;
  uint64_t woke_at[MAX_TASKS]; /* virtual time a task's wait ended */
  pthread_mutex_t mu;          /* outside waits */
  pthread_cond_t cv;
  int at_line;
  void *user;
  void (*prepare)(struct run *r); /* after the scheduler is made: hooks */
} run;

typedef struct task_arg {
  run *r;
  int task;
} task_arg;

static void note_order(run *r, int task) {
  int k = atomic_fetch_add(&r->norder, 1);
  if (k < MAX_TASKS * 8)
    atomic_store(&r->order[k], task);
}

/* Counts the tasks inside a stretch between scheduling points. */
static void enter(run *r) {
  int now = atomic_fetch_add(&r->running, 1) + 1;
  int was = atomic_load(&r->most);
  while (now > was && !atomic_compare_exchange_weak(&r->most, &was, now))
    ;
}

static void leave(run *r) {
  atomic_fetch_sub(&r->running, 1);
}

static void *task_main(void *p) {
  task_arg *a = p;
  bs_sched_begin(a->r->s, a->task);
  a->r->body(a->r, a->task);
  bs_sched_end(a->r->s);
  return NULL;
}

static double wall_ms(void) {
  return (double)bs_clock_real_ns() / 1e6;
}

/* Tasks as fibers on the thread that runs them (set by the _fibers tests'
 * setup), else threads. */
static bool fibers;
#define FIBER_STACK ((size_t)(BS_TEST_SANITIZED ? 1024 : 256) << 10)

static int fibers_on(void **state) {
  (void)state;
  fibers = true;
  return 0;
}

static int fibers_off(void **state) {
  (void)state;
  fibers = false;
  return 0;
}

#define ON_FIBERS(test)                                                        \
  { #test "_fibers", test, fibers_on, fibers_off, NULL }

/* Every task a fiber, run on this thread. */
static void run_fibers(run *r, task_arg *a) {
  char *stacks = malloc((size_t)r->n * FIBER_STACK);
  assert_non_null(stacks);
  for (int i = 0; i < r->n; i++)
    assert_int_equal(bs_sched_spawn(r->s, i, task_main, &a[i],
                                    stacks + (size_t)i * FIBER_STACK,
                                    FIBER_STACK),
                     BS_OK);
  bs_sched_run(r->s);
  free(stacks);
}

/* Runs body on n tasks under spec; returns the wall time it took. */
static double run_tasks(run *r, int n, const bs_sched_spec *spec,
                        void (*body)(run *, int)) {
  pthread_t t[MAX_TASKS];
  task_arg a[MAX_TASKS];
  assert_true(n <= MAX_TASKS);
  r->n = n;
  r->body = body;
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  assert_int_equal(bs_sched_create(n, spec, ORIGIN_NS, &r->s), BS_OK);
  if (r->prepare)
    r->prepare(r);
  double t0 = wall_ms();
  for (int i = 0; i < n; i++)
    a[i] = (task_arg){r, i};
  if (fibers) {
    run_fibers(r, a);
    goto done;
  }
  for (int i = 0; i < n; i++)
    assert_int_equal(pthread_create(&t[i], NULL, task_main, &a[i]), 0);
  bs_sched_run(r->s);
  for (int i = 0; i < n; i++)
    pthread_join(t[i], NULL);
done:
  pthread_cond_destroy(&r->cv);
  pthread_mutex_destroy(&r->mu);
  return wall_ms() - t0;
}

static bs_sched_spec spec_of(const char *text, uint64_t seed) {
  bs_sched_spec s = {.seed = seed};
  assert_int_equal(bs_sched_spec_parse(text, &s), BS_OK);
  return s;
}

/* ---- one at a time, and a seed is a schedule ---- */

/* Five turns a task, each (work) 200 us of real work in which the others
 * would run, were they let. */
static void take_turns(run *r, int task, bool work) {
  for (int i = 0; i < 5; i++) {
    enter(r);
    note_order(r, task);
    struct timespec ts = {0, 200000};
    if (work)
      nanosleep(&ts, NULL);
    leave(r);
    bs_sched_yield(r->s);
  }
}

static void yields(run *r, int task) {
  take_turns(r, task, true);
}

/* The order of turns only (no overlap looked for): no real work. */
static void turns(run *r, int task) {
  take_turns(r, task, false);
}

static void test_one_task_at_a_time(void **state) {
  (void)state;
  run r = {0};
  bs_sched_spec s = spec_of("random", 1);
  run_tasks(&r, 8, &s, yields);
  assert_int_equal(atomic_load(&r.most), 1);
  assert_int_equal(atomic_load(&r.norder), 8 * 5);
  bs_sched_destroy(r.s);
}

/* Runs turns on 6 tasks; their order as a string ("0 3 1 ..."). */
static uint64_t order_of(const char *policy, uint64_t seed, char *out,
                         size_t n) {
  run r = {0};
  bs_sched_spec s = spec_of(policy, seed);
  run_tasks(&r, 6, &s, turns);
  size_t at = 0;
  out[0] = '\0';
  for (int i = 0; i < atomic_load(&r.norder) && at + 4 < n; i++)
    at += (size_t)snprintf(out + at, n - at, "%d ", atomic_load(&r.order[i]));
  uint64_t h = bs_sched_hash(r.s);
  assert_true(bs_sched_steps(r.s) > 30);
  bs_sched_destroy(r.s);
  return h;
}

static void test_same_seed_same_schedule(void **state) {
  (void)state;
  char a[512], b[512], c[512];
  const char *policies[] = {"random", "pct:3"};
  for (size_t p = 0; p < 2; p++) {
    uint64_t ha = order_of(policies[p], 7, a, sizeof a);
    uint64_t hb = order_of(policies[p], 7, b, sizeof b);
    assert_string_equal(a, b);
    assert_true(ha == hb);
    /* Of eight other seeds, most give another interleaving. */
    int other = 0;
    for (uint64_t seed = 8; seed < 16; seed++)
      other +=
          order_of(policies[p], seed, c, sizeof c) != ha && strcmp(a, c) != 0;
    if (other < 6)
      fail_msg("%s: only %d of 8 seeds gave another order", policies[p], other);
  }
}

/* PCT of depth 1 runs the task of highest priority to its end, task after
 * task (a yield keeps it first): 5 runs of each in a row. Depth 4 has up to
 * 3 change points more. */
static int switches(const char *policy, uint64_t seed) {
  run r = {0};
  bs_sched_spec s = spec_of(policy, seed);
  run_tasks(&r, 6, &s, turns);
  int k = 0;
  for (int i = 1; i < atomic_load(&r.norder); i++)
    k += atomic_load(&r.order[i]) != atomic_load(&r.order[i - 1]);
  bs_sched_destroy(r.s);
  return k;
}

static void test_pct_priorities(void **state) {
  (void)state;
  for (uint64_t seed = 0; seed < 5; seed++) {
    assert_int_equal(switches("pct:1", seed), 5);
    int k = switches("pct:4:40", seed);
    assert_true(k >= 5 && k <= 5 + 2 * 3);
  }
  /* Random switches far more often. */
  assert_true(switches("random", 3) > 10);
}

/* ---- the clock ---- */

/* Task i sleeps (n - i) seconds: they wake in the order of their ends,
 * each at exactly its time, and the 6 s cost no wall time. */
static void sleeps(run *r, int task) {
  bs_sched_sleep(r->s, (uint64_t)(r->n - task) * 1000000000ull);
  r->woke_at[task] = bs_clock_mono_ns();
  note_order(r, task);
}

static void test_clock_jumps_to_next_timer(void **state) {
  (void)state;
  run r = {0};
  bs_sched_spec s = spec_of("random", 3);
  double ms = run_tasks(&r, 6, &s, sleeps);
  for (int i = 0; i < 6; i++) {
    assert_int_equal(atomic_load(&r.order[i]), 5 - i);
    uint64_t want = ORIGIN_NS + (uint64_t)(6 - i) * 1000000000ull;
    /* Its own clock: the time it woke, and a tick for the read. */
    assert_true(r.woke_at[i] >= want && r.woke_at[i] < want + 100000);
  }
  assert_true(bs_sched_now(r.s) >= ORIGIN_NS + 6000000000ull);
  assert_true(ms < 2000.0);
  bs_sched_destroy(r.s);
}

/* A deadline at 2.5 s of virtual time, tasks sleeping 1, 2 and 3 s: when
 * the clock would move past it, the hook runs once, with the first two
 * woken and every task parked; when it returns the clock moves on. */
static atomic_int woken;
static uint64_t hook_now;
static int hook_woken, hook_running; /* asserted on the main thread */

static void past_hook(void *ctx) {
  run *r = ctx;
  atomic_fetch_add(&r->stuck_calls, 1);
  hook_now = bs_sched_now(r->s);
  hook_woken = atomic_load(&woken);
  hook_running = atomic_load(&r->running);
}

static void sleeps_past(run *r, int task) {
  if (task == 0)
    bs_sched_set_deadline(r->s, ORIGIN_NS + 2500000000ull, past_hook, r);
  bs_sched_sleep(r->s, (uint64_t)(task + 1) * 1000000000ull);
  enter(r);
  atomic_fetch_add(&woken, 1);
  leave(r);
}

static void test_deadline_before_the_clock_passes_it(void **state) {
  (void)state;
  run r = {0};
  atomic_store(&woken, 0);
  bs_sched_spec s = spec_of("random", 4);
  double ms = run_tasks(&r, 3, &s, sleeps_past);
  assert_int_equal(atomic_load(&r.stuck_calls), 1);
  assert_true(hook_now == ORIGIN_NS + 2000000000ull);
  assert_int_equal(hook_woken, 2);
  assert_int_equal(hook_running, 0);
  assert_int_equal(atomic_load(&woken), 3);
  assert_true(bs_sched_now(r.s) == ORIGIN_NS + 3000000000ull);
  assert_true(ms < 2000.0);
  bs_sched_destroy(r.s);
}

/* Task 0 waits on a word with no bound; task 1 sleeps 1 s, then notifies:
 * task 0 runs again at 1 s. A wait with a bound no one notifies ends at
 * its bound. */
static atomic_uint word;

static void waits(run *r, int task) {
  if (task == 0) {
    bs_sched_wait(r->s, &word, UINT64_MAX);
    r->woke_at[0] = bs_sched_now(r->s);
    assert_int_equal(atomic_load(&word), 1);
  } else if (task == 1) {
    bs_sched_sleep(r->s, 1000000000ull);
    atomic_store(&word, 1);
    bs_sched_notify(r->s, &word);
  } else {
    bs_sched_wait(r->s, &r->user, bs_sched_now(r->s) + 10000000000ull);
    r->woke_at[2] = bs_sched_now(r->s);
  }
}

static void test_wait_notify_and_bound(void **state) {
  (void)state;
  run r = {0};
  atomic_store(&word, 0);
  bs_sched_spec s = spec_of("random", 5);
  double ms = run_tasks(&r, 3, &s, waits);
  assert_true(r.woke_at[0] == ORIGIN_NS + 1000000000ull);
  assert_true(r.woke_at[2] == ORIGIN_NS + 10000000000ull);
  assert_true(ms < 2000.0);
  bs_sched_destroy(r.s);
}

/* Every task waits on a word of its own and none has a timer: the stuck
 * hook runs at once (once) and its notifies end the waits. */
static atomic_uint words[4];

static void stuck_hook(void *ctx) {
  run *r = ctx;
  atomic_fetch_add(&r->stuck_calls, 1);
  for (int i = 0; i < r->n; i++) {
    atomic_store(&words[i], 1);
    bs_sched_notify(r->s, &words[i]);
  }
}

static void deadlocks(run *r, int task) {
  while (!atomic_load(&words[task]))
    bs_sched_wait(r->s, &words[task], UINT64_MAX);
}

static void set_stuck(run *r) {
  bs_sched_set_stuck(r->s, stuck_hook, r);
}

static void test_deadlock_to_stuck_hook(void **state) {
  (void)state;
  run r = {.prepare = set_stuck};
  for (int i = 0; i < 4; i++)
    atomic_store(&words[i], 0);
  bs_sched_spec s = spec_of("random", 2);
  double ms = run_tasks(&r, 4, &s, deadlocks);
  assert_int_equal(atomic_load(&r.stuck_calls), 1);
  assert_true(bs_sched_now(r.s) == ORIGIN_NS); /* no time passed */
  assert_true(ms < 2000.0);
  bs_sched_destroy(r.s);
}

/* Tasks 1-3 wait on words of their own, bounded at 10 s; task 0 sleeps 1
 * s and ends. While it sleeps nothing is quiet; then every task waits for
 * another: the quiet hook runs at 1 s (not at the bounds' 10 s), and its
 * notifies end the waits then. */
static uint64_t quiet_at;

static void quiet_hook(void *ctx) {
  run *r = ctx;
  if (atomic_fetch_add(&r->stuck_calls, 1) == 0)
    quiet_at = bs_sched_now(r->s);
  for (int i = 1; i < r->n; i++) {
    atomic_store(&words[i], 1);
    bs_sched_notify(r->s, &words[i]);
  }
}

static void quiets(run *r, int task) {
  if (task == 0) {
    bs_sched_sleep(r->s, 1000000000ull);
    return;
  }
  uint64_t bound = bs_sched_now(r->s) + 10000000000ull;
  while (!atomic_load(&words[task]) && bs_sched_now(r->s) < bound)
    bs_sched_wait(r->s, &words[task], bound);
  r->woke_at[task] = bs_sched_now(r->s);
}

static void set_quiet(run *r) {
  bs_sched_set_quiet(r->s, quiet_hook, r);
}

static void test_quiet_hook_before_bounds(void **state) {
  (void)state;
  run r = {.prepare = set_quiet};
  for (int i = 0; i < 4; i++)
    atomic_store(&words[i], 0);
  bs_sched_spec s = spec_of("random", 4);
  run_tasks(&r, 4, &s, quiets);
  assert_true(atomic_load(&r.stuck_calls) >= 1);
  assert_true(quiet_at == ORIGIN_NS + 1000000000ull);
  for (int i = 1; i < 4; i++)
    assert_true(r.woke_at[i] == ORIGIN_NS + 1000000000ull);
  bs_sched_destroy(r.s);
}

/* Tasks step outside to wait on a condition of their own until every task
 * reached the line; task 0 first sleeps 1 s (inside). Every one comes back
 * and runs on. */
static void line_up(run *r, int task) {
  if (task == 0)
    bs_sched_sleep(r->s, 1000000000ull);
  bs_sched_outside(r->s, true);
  pthread_mutex_lock(&r->mu);
  if (++r->at_line == r->n)
    pthread_cond_broadcast(&r->cv);
  while (r->at_line < r->n)
    pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
  bs_sched_outside(r->s, false);
  enter(r);
  note_order(r, task);
  leave(r);
}

static void test_outside_and_back(void **state) {
  (void)state;
  run r = {0};
  bs_sched_spec s = spec_of("random", 9);
  run_tasks(&r, 5, &s, line_up);
  assert_int_equal(atomic_load(&r.norder), 5);
  assert_int_equal(atomic_load(&r.most), 1);
  assert_true(bs_sched_now(r.s) >= ORIGIN_NS + 1000000000ull);
  bs_sched_destroy(r.s);
}

/* A task blocks on a real condition no one signals, inside the schedule:
 * no decision comes, and the guard ends the process saying why (in a
 * child, with a 300 ms guard). */
static void blocks_for_real(run *r, int task) {
  if (task != 0)
    return;
  pthread_mutex_lock(&r->mu);
  pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
}

static void test_guard_ends_a_stalled_scheduler(void **state) {
  (void)state;
  int err[2];
  assert_int_equal(pipe(err), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(err[1], 2);
    run r = {0};
    bs_sched_spec s = spec_of("random", 1);
    s.guard_ms = 300;
    run_tasks(&r, 2, &s, blocks_for_real);
    _exit(0);
  }
  close(err[1]);
  char buf[1024] = "";
  ssize_t n = 0, k;
  while ((k = read(err[0], buf + n, sizeof buf - 1 - (size_t)n)) > 0)
    n += k;
  buf[n > 0 ? n : 0] = '\0';
  close(err[0]);
  int ws = 0;
  waitpid(pid, &ws, 0);
  assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGABRT);
  if (!strstr(buf, "scheduler guard: no decision"))
    fail_msg("stderr: %s", buf);
}

/* ---- fibers ---- */

/* The same seed on fibers and on threads: the same decisions, turn for
 * turn, and the same hash. */
static void test_fibers_same_schedule_as_threads(void **state) {
  (void)state;
  char on_threads[512], on_fibers[512];
  const char *policies[] = {"random", "pct:3"};
  for (size_t p = 0; p < 2; p++) {
    fibers = false;
    uint64_t ht = order_of(policies[p], 11, on_threads, sizeof on_threads);
    fibers = true;
    uint64_t hf = order_of(policies[p], 11, on_fibers, sizeof on_fibers);
    assert_string_equal(on_threads, on_fibers);
    assert_true(ht == hf);
  }
  fibers = false;
}

/* Each fiber sets its own error record, rank and phase and reads them
 * back after every turn, as a thread would: the switches swap them. */
static void keeps_locals(run *r, int task) {
  char phase[16];
  snprintf(phase, sizeof phase, "phase%d", task);
  bs_err_set_rank(task);
  bs_err_set_phase(phase);
  bs_err_fail(BS_ERR_INTERNAL, NULL, "task %d", task);
  for (int i = 0; i < 4; i++) {
    bs_sched_yield(r->s);
    char want[32];
    snprintf(want, sizeof want, "task %d", task);
    if (bs_err_rank() != task || strcmp(bs_err_phase(), phase) != 0 ||
        strcmp(bs_err()->message, want) != 0 || bs_err()->rank != task)
      atomic_fetch_add(&r->stuck_calls, 1); /* a wrong view, counted */
    note_order(r, task);
  }
}

static void test_fiber_keeps_its_thread_locals(void **state) {
  (void)state;
  run r = {0};
  bs_sched_spec s = spec_of("random", 3);
  bs_err_clear();
  bs_err_set_rank(-1);
  bs_err_set_phase("main");
  run_tasks(&r, 8, &s, keeps_locals);
  assert_int_equal(atomic_load(&r.norder), 8 * 4);
  assert_int_equal(atomic_load(&r.stuck_calls), 0);
  /* The thread's own, after: untouched by its fibers. */
  assert_int_equal(bs_err_rank(), -1);
  assert_string_equal(bs_err_phase(), "main");
  assert_int_equal(bs_err()->code, BS_OK);
  bs_sched_destroy(r.s);
}

/* A task spawned twice, one out of range, or one with another function
 * than its peers' is refused, and a scheduler whose fibers never ran is
 * destroyed cleanly. */
static void *other_main(void *p) {
  return p;
}

static void test_spawn_refuses_bad_tasks(void **state) {
  (void)state;
  bs_sched *s = NULL;
  static char stack[2][64 << 10];
  task_arg a = {0};
  bs_sched_spec spec = spec_of("random", 1);
  assert_int_equal(bs_sched_create(2, &spec, ORIGIN_NS, &s), BS_OK);
  assert_int_equal(
      bs_sched_spawn(s, 0, task_main, &a, stack[0], sizeof stack[0]), BS_OK);
  assert_int_equal(
      bs_sched_spawn(s, 0, task_main, &a, stack[0], sizeof stack[0]),
      BS_ERR_INVALID);
  assert_int_equal(
      bs_sched_spawn(s, 2, task_main, &a, stack[1], sizeof stack[1]),
      BS_ERR_INVALID);
  assert_int_equal(
      bs_sched_spawn(s, 1, other_main, &a, stack[1], sizeof stack[1]),
      BS_ERR_INVALID);
  bs_err_clear();
  bs_sched_destroy(s);
}

/* ---- the schedule as text ---- */

static void test_spec_parse_and_format(void **state) {
  (void)state;
  static const char *const good[] = {"threads", "random", "pct:1",
                                     "pct:3",   "pct:64", "pct:2:100"};
  static const char *const bad[] = {"",       "pct",   "pct:0",    "pct:65",
                                    "pct:3:", "pct:x", "random:1", "Random"};
  char buf[32];
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    bs_sched_spec s = {.seed = 5};
    assert_int_equal(bs_sched_spec_parse(good[i], &s), BS_OK);
    assert_true(s.seed == 5);
    bs_sched_spec_format(&s, buf, sizeof buf);
    assert_string_equal(buf, good[i]);
  }
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    bs_sched_spec s = {0};
    assert_int_equal(bs_sched_spec_parse(bad[i], &s), BS_ERR_CONFIG);
  }
  bs_sched_spec s = {0};
  assert_int_equal(bs_sched_spec_parse("pct:3:4096", &s), BS_OK);
  bs_sched_spec_format(&s, buf, sizeof buf);
  assert_string_equal(buf, "pct:3");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_task_at_a_time),
      cmocka_unit_test(test_same_seed_same_schedule),
      cmocka_unit_test(test_pct_priorities),
      cmocka_unit_test(test_clock_jumps_to_next_timer),
      cmocka_unit_test(test_deadline_before_the_clock_passes_it),
      cmocka_unit_test(test_wait_notify_and_bound),
      cmocka_unit_test(test_deadlock_to_stuck_hook),
      cmocka_unit_test(test_quiet_hook_before_bounds),
      cmocka_unit_test(test_outside_and_back),
      cmocka_unit_test(test_guard_ends_a_stalled_scheduler),
      cmocka_unit_test(test_spec_parse_and_format),
      ON_FIBERS(test_one_task_at_a_time),
      ON_FIBERS(test_same_seed_same_schedule),
      ON_FIBERS(test_pct_priorities),
      ON_FIBERS(test_clock_jumps_to_next_timer),
      ON_FIBERS(test_deadline_before_the_clock_passes_it),
      ON_FIBERS(test_wait_notify_and_bound),
      ON_FIBERS(test_deadlock_to_stuck_hook),
      ON_FIBERS(test_quiet_hook_before_bounds),
      ON_FIBERS(test_guard_ends_a_stalled_scheduler),
      cmocka_unit_test(test_fibers_same_schedule_as_threads),
      ON_FIBERS(test_fiber_keeps_its_thread_locals),
      cmocka_unit_test(test_spawn_refuses_bad_tasks),
  };
  /* The guard looks each second of real time: label slow. */
  static const char *const slow[] = {
      "test_guard_ends_a_stalled_scheduler",
      "test_guard_ends_a_stalled_scheduler_fibers", NULL};
  return BS_TEST_RUN_SPLIT(tests, slow, NULL, NULL);
}
