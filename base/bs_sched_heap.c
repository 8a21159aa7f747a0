/* The scheduler's timers (bs_sched_heap.h). */
#include "bs_sched_heap.h"

#include <stdlib.h>

bool bs_sched_heap_init(bs_sched_heap *h, int ntasks) {
  h->n = 0;
  h->task = calloc((size_t)ntasks, sizeof *h->task);
  h->pos = malloc((size_t)ntasks * sizeof *h->pos);
  h->when = calloc((size_t)ntasks, sizeof *h->when);
  for (int i = 0; h->pos && i < ntasks; i++)
    h->pos[i] = -1;
  return h->task && h->pos && h->when;
}

void bs_sched_heap_fini(bs_sched_heap *h) {
  free(h->task);
  free(h->pos);
  free(h->when);
}

static bool before(const bs_sched_heap *h, int a, int b) {
  return h->when[a] < h->when[b] || (h->when[a] == h->when[b] && a < b);
}

static void put(bs_sched_heap *h, int i, int t) {
  h->task[i] = t;
  h->pos[t] = i;
}

static void up(bs_sched_heap *h, int i) {
  int t = h->task[i];
  while (i > 0 && before(h, t, h->task[(i - 1) / 2])) {
    put(h, i, h->task[(i - 1) / 2]);
    i = (i - 1) / 2;
  }
  put(h, i, t);
}

static void down(bs_sched_heap *h, int i) {
  int t = h->task[i];
  for (;;) {
    int c = 2 * i + 1;
    if (c >= h->n)
      break;
    if (c + 1 < h->n && before(h, h->task[c + 1], h->task[c]))
      c++;
    if (!before(h, h->task[c], t))
      break;
    put(h, i, h->task[c]);
    i = c;
  }
  put(h, i, t);
}

void bs_sched_heap_set(bs_sched_heap *h, int t, uint64_t when) {
  if (h->pos[t] < 0)
    put(h, h->n++, t);
  h->when[t] = when;
  up(h, h->pos[t]);
  down(h, h->pos[t]);
}

void bs_sched_heap_drop(bs_sched_heap *h, int t) {
  int i = h->pos[t];
  if (i < 0)
    return;
  h->pos[t] = -1;
  if (i == --h->n)
    return;
  int moved = h->task[h->n];
  put(h, i, moved);
  up(h, i);
  down(h, h->pos[moved]);
}

int bs_sched_heap_top(const bs_sched_heap *h, uint64_t *when) {
  if (h->n == 0)
    return -1;
  *when = h->when[h->task[0]];
  return h->task[0];
}
