/* The scheduler's choice among its runnable tasks (bs_sched_pick.h). */
#include "bs_sched_pick.h"

#include <stdlib.h>

/* A Fenwick tree of 0/1 counts over slots 1..n. */
typedef struct fenwick {
  int n, top; /* top: the highest power of two <= n */
  int *t;
} fenwick;

struct bs_sched_pick {
  bs_sched_policy policy;
  uint64_t rng;
  int ntasks;
  bool *in;    /* by task: in the runnable set */
  fenwick set; /* random: by task + 1; pct: by priority */
  /* pct: priorities 1..depth-1 are the change points', depth.. the
   * initial ones (higher runs first); prio[task], task_at[priority]. */
  int depth;
  int *prio, *task_at;
  uint64_t *change; /* depth-1 decision numbers, ascending */
  int next_change;
};

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A draw in 0..n-1 (n > 0). */
static uint64_t draw(bs_sched_pick *p, uint64_t n) {
  return splitmix(&p->rng) % n;
}

static bool fenwick_init(fenwick *f, int n) {
  f->n = n;
  f->top = 1;
  while (f->top * 2 <= n)
    f->top *= 2;
  f->t = calloc((size_t)n + 1, sizeof *f->t);
  return f->t != NULL;
}

static void fenwick_add(fenwick *f, int i, int d) {
  for (; i <= f->n; i += i & -i)
    f->t[i] += d;
}

static int fenwick_total(const fenwick *f) {
  int s = 0;
  for (int i = f->n; i > 0; i -= i & -i)
    s += f->t[i];
  return s;
}

/* The slot of the k-th set one (1-based, k <= the total). */
static int fenwick_select(const fenwick *f, int k) {
  int at = 0;
  for (int step = f->top; step > 0; step /= 2)
    if (at + step <= f->n && f->t[at + step] < k) {
      at += step;
      k -= f->t[at];
    }
  return at + 1;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* A seeded permutation of the tasks as the initial priorities, and the
 * change points among the first horizon decisions. */
static bool pct_init(bs_sched_pick *p, const bs_sched_spec *spec) {
  int n = p->ntasks, d = p->depth;
  uint64_t k = spec->horizon ? spec->horizon : BS_SCHED_PCT_HORIZON;
  p->prio = calloc((size_t)n, sizeof *p->prio);
  p->task_at = calloc((size_t)(n + d), sizeof *p->task_at);
  p->change = calloc((size_t)d, sizeof *p->change);
  if (!p->prio || !p->task_at || !p->change)
    return false;
  for (int i = 0; i < n; i++)
    p->task_at[d + i] = i;
  for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
    int j = (int)draw(p, (uint64_t)i + 1), t = p->task_at[d + i];
    p->task_at[d + i] = p->task_at[d + j];
    p->task_at[d + j] = t;
  }
  for (int i = 0; i < n; i++)
    p->prio[p->task_at[d + i]] = d + i;
  for (int i = 0; i < d - 1; i++)
    p->change[i] = 1 + draw(p, k);
  qsort(p->change, (size_t)(d - 1), sizeof *p->change, cmp_u64);
  return true;
}

bs_status bs_sched_pick_create(int ntasks, const bs_sched_spec *spec,
                               bs_sched_pick **out) {
  bs_status st = BS_OK;
  bs_sched_pick *p = calloc(1, sizeof *p);
  bool pct = spec->policy == BS_SCHED_PCT;
  if (!p)
    BS_FAIL(BS_ERR_NOMEM, NULL, "scheduler of %d tasks", ntasks);
  p->policy = spec->policy;
  p->rng = spec->seed;
  p->ntasks = ntasks;
  p->depth = pct ? (spec->depth > 0 ? spec->depth : 1) : 0;
  if (!(p->in = calloc((size_t)ntasks, sizeof *p->in)) ||
      !fenwick_init(&p->set, pct ? ntasks + p->depth : ntasks) ||
      (pct && !pct_init(p, spec)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "scheduler of %d tasks", ntasks);
  *out = p;
  p = NULL;
out:
  bs_sched_pick_destroy(p);
  return st;
}

void bs_sched_pick_destroy(bs_sched_pick *p) {
  if (!p)
    return;
  free(p->in);
  free(p->set.t);
  free(p->prio);
  free(p->task_at);
  free(p->change);
  free(p);
}

/* The slot a task has in the tree. */
static int slot_of(const bs_sched_pick *p, int task) {
  return p->policy == BS_SCHED_PCT ? p->prio[task] : task + 1;
}

void bs_sched_pick_set(bs_sched_pick *p, int task, bool runnable) {
  if (p->in[task] == runnable)
    return;
  p->in[task] = runnable;
  fenwick_add(&p->set, slot_of(p, task), runnable ? 1 : -1);
}

int bs_sched_pick_count(const bs_sched_pick *p) {
  return fenwick_total(&p->set);
}

/* PCT's change point: the task that just ran drops below every task that
 * has not dropped yet (priority i at the i-th change point). */
static void pct_change(bs_sched_pick *p, uint64_t step, int last) {
  while (p->next_change < p->depth - 1 && p->change[p->next_change] <= step) {
    int to = ++p->next_change;
    if (last < 0)
      continue;
    bool in = p->in[last];
    bs_sched_pick_set(p, last, false);
    p->task_at[p->prio[last]] = -1;
    p->prio[last] = to;
    p->task_at[to] = last;
    bs_sched_pick_set(p, last, in);
  }
}

int bs_sched_pick_next(bs_sched_pick *p, uint64_t step, int last) {
  int total = bs_sched_pick_count(p);
  if (p->policy != BS_SCHED_PCT)
    return fenwick_select(&p->set, 1 + (int)draw(p, (uint64_t)total)) - 1;
  pct_change(p, step, last);
  return p->task_at[fenwick_select(&p->set, bs_sched_pick_count(p))];
}
