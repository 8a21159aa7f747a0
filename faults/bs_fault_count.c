/* Per (key, rank, cycle) counters for the fault filters: how often a rank
 * reached a point in a cycle (what nth counts and what a vacuous verdict
 * reports), and whether a onetime spec already fired on a rank (cycle -1).
 * Global rather than thread-local because "by that rank" is what the filters
 * mean, whichever thread runs the rank. An open-addressing table that
 * doubles when half full, so a world of thousands of ranks still counts. */
#include "bs_fault_control.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define COUNT_SLOTS_MIN 1024

typedef struct count_slot {
  bool used;
  int key, rank, cycle;
  long count;
} count_slot;

static pthread_mutex_t count_mu = PTHREAD_MUTEX_INITIALIZER;
static count_slot *slots;
static size_t nslots, nused;

static size_t slot_hash(int key, int rank, int cycle) {
  uint64_t h = ((uint64_t)(uint32_t)key << 32) | (uint32_t)rank;
  h ^= (uint64_t)(uint32_t)cycle * 0x9e3779b97f4a7c15ULL;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return (size_t)h;
}

/* The slot of (key, rank, cycle) in t, or the free one where it goes. */
static count_slot *probe(count_slot *t, size_t n, int key, int rank,
                         int cycle) {
  size_t at = slot_hash(key, rank, cycle) & (n - 1);
  for (;; at = (at + 1) & (n - 1)) {
    count_slot *s = &t[at];
    if (!s->used || (s->key == key && s->rank == rank && s->cycle == cycle))
      return s;
  }
}

/* Doubles the table (or makes the first); false when out of memory. Call
 * with count_mu held. */
static bool rehash(void) {
  size_t n = nslots ? 2 * nslots : COUNT_SLOTS_MIN;
  count_slot *t = calloc(n, sizeof *t);
  if (!t)
    return false;
  for (size_t i = 0; i < nslots; i++)
    if (slots[i].used)
      *probe(t, n, slots[i].key, slots[i].rank, slots[i].cycle) = slots[i];
  free(slots);
  slots = t;
  nslots = n;
  return true;
}

/* NULL when the table cannot grow. Call with count_mu held. */
static count_slot *slot_find(int key, int rank, int cycle) {
  if (2 * (nused + 1) > nslots && !rehash())
    return NULL;
  count_slot *s = probe(slots, nslots, key, rank, cycle);
  if (!s->used) {
    *s = (count_slot){.used = true, .key = key, .rank = rank, .cycle = cycle};
    nused++;
  }
  return s;
}

long bs_fault_count_add(int key, int rank, int cycle, long delta) {
  pthread_mutex_lock(&count_mu);
  count_slot *s = slot_find(key, rank, cycle);
  long n = -1;
  if (s) {
    s->count += delta;
    n = s->count;
  }
  pthread_mutex_unlock(&count_mu);
  return n;
}

static int by_reach(const void *a, const void *b) {
  const bs_fault_reach *x = a, *y = b;
  int c = (int)x->point - (int)y->point;
  if (c)
    return c;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  return (x->cycle > y->cycle) - (x->cycle < y->cycle);
}

size_t bs_fault_count_reaches(bs_fault_reach *out, size_t max) {
  size_t n = 0;
  pthread_mutex_lock(&count_mu);
  for (size_t i = 0; i < nslots; i++) {
    const count_slot *s = &slots[i];
    const bs_fault_point *p = bs_fault_catalogue_get(s->key);
    if (!s->used || !p || s->count <= 0)
      continue;
    if (n < max) {
      out[n] = (bs_fault_reach){.point = p->id,
                                .rank = s->rank,
                                .cycle = s->cycle,
                                .count = s->count};
    }
    n++;
  }
  pthread_mutex_unlock(&count_mu);
  bs_fault_count_sort(out, n < max ? n : max);
  return n;
}

void bs_fault_count_sort(bs_fault_reach *r, size_t n) {
  if (r && n > 1)
    qsort(r, n, sizeof *r, by_reach);
}

void bs_fault_count_reset(void) {
  pthread_mutex_lock(&count_mu);
  if (slots)
    memset(slots, 0, nslots * sizeof *slots);
  nused = 0;
  pthread_mutex_unlock(&count_mu);
}
