/* Per (key, rank) counters for the fault filters: how often a rank reached
 * a point in its current cycle, and whether a onetime spec already fired on
 * it. Global rather than thread-local because "by that rank" is what the
 * filters mean, whichever thread runs the rank. */
#include "bs_fault_control.h"

#include <pthread.h>
#include <string.h>

/* Points x ranks; 64 ranks of every point take a quarter of it. */
#define COUNT_SLOTS 4096

typedef struct count_slot {
  bool used;
  int key, rank, cycle;
  long count;
} count_slot;

static pthread_mutex_t count_mu = PTHREAD_MUTEX_INITIALIZER;
static count_slot slots[COUNT_SLOTS];

static size_t slot_hash(int key, int rank) {
  uint64_t h = ((uint64_t)(uint32_t)key << 32) | (uint32_t)rank;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return (size_t)(h % COUNT_SLOTS);
}

/* Linear probing; NULL when the table is full. Call with count_mu held. */
static count_slot *slot_find(int key, int rank) {
  size_t at = slot_hash(key, rank);
  for (size_t i = 0; i < COUNT_SLOTS; i++) {
    count_slot *s = &slots[(at + i) % COUNT_SLOTS];
    if (!s->used)
      *s = (count_slot){.used = true, .key = key, .rank = rank};
    if (s->key == key && s->rank == rank)
      return s;
  }
  return NULL;
}

long bs_fault_count_add(int key, int rank, int cycle, long delta) {
  pthread_mutex_lock(&count_mu);
  count_slot *s = slot_find(key, rank);
  long n = -1;
  if (s) {
    if (s->cycle != cycle)
      s->count = 0;
    s->cycle = cycle;
    s->count += delta;
    n = s->count;
  }
  pthread_mutex_unlock(&count_mu);
  return n;
}

void bs_fault_count_reset(void) {
  pthread_mutex_lock(&count_mu);
  memset(slots, 0, sizeof slots);
  pthread_mutex_unlock(&count_mu);
}
