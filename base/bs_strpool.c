#include "bs_strpool.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct bs_strpool {
  char **slot; /* open addressing; NULL: free */
  size_t cap, n;
  bs_strpool *shared; /* a view's: the pool that owns its strings */
  pthread_mutex_t mu; /* a pool's: its views add to it from their threads */
};

static bs_strpool *make(bs_strpool *shared) {
  bs_strpool *p = calloc(1, sizeof *p);
  if (p && !(p->slot = calloc(p->cap = 64, sizeof *p->slot))) {
    free(p);
    return NULL;
  }
  if (p) {
    p->shared = shared;
    pthread_mutex_init(&p->mu, NULL);
  }
  return p;
}

bs_strpool *bs_strpool_create(void) {
  return make(NULL);
}

bs_strpool *bs_strpool_view(bs_strpool *shared) {
  return make(shared);
}

void bs_strpool_destroy(bs_strpool *p) {
  if (!p)
    return;
  for (size_t i = 0; !p->shared && i < p->cap; i++)
    free(p->slot[i]);
  pthread_mutex_destroy(&p->mu);
  free(p->slot);
  free(p);
}

static uint64_t hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* Where s[0..n) is, or the free slot it would take. */
static char **find(char **slot, size_t cap, const char *s, size_t n) {
  size_t i = (size_t)hash(s, n) & (cap - 1);
  while (slot[i] && (strncmp(slot[i], s, n) != 0 || slot[i][n]))
    i = (i + 1) & (cap - 1);
  return &slot[i];
}

/* Doubles the table (kept at most half full). Not bs_vec: the strings
 * are hashed again into a new, empty table, not kept where they were. */
static int grow(bs_strpool *p) {
  size_t cap = p->cap * 2;
  char **slot = calloc(cap, sizeof *slot);
  if (!slot)
    return 0;
  for (size_t i = 0; i < p->cap; i++)
    if (p->slot[i])
      *find(slot, cap, p->slot[i], strlen(p->slot[i])) = p->slot[i];
  free(p->slot);
  p->slot = slot;
  p->cap = cap;
  return 1;
}

/* s[0..n) in p: found, or added as have (a view's: the shared pool's
 * copy) or as a copy of its own. */
static const char *put(bs_strpool *p, const char *s, size_t n,
                       const char *have) {
  char **at = find(p->slot, p->cap, s, n);
  if (*at)
    return *at;
  if (2 * (p->n + 1) > p->cap) {
    if (!grow(p))
      return NULL;
    at = find(p->slot, p->cap, s, n);
  }
  if (have)
    *at = (char *)have;
  else if ((*at = malloc(n + 1))) {
    memcpy(*at, s, n);
    (*at)[n] = '\0';
  }
  p->n += *at != NULL;
  return *at;
}

/* The shared pool's copy of s[0..n), under its lock. */
static const char *locked(bs_strpool *p, const char *s, size_t n) {
  pthread_mutex_lock(&p->mu);
  const char *got = put(p, s, n, NULL);
  pthread_mutex_unlock(&p->mu);
  return got;
}

const char *bs_strpool_getn(bs_strpool *p, const char *s, size_t n) {
  if (!p->shared)
    return locked(p, s, n);
  char **at = find(p->slot, p->cap, s, n);
  if (*at)
    return *at;
  const char *have = locked(p->shared, s, n);
  return have ? put(p, s, n, have) : NULL;
}

const char *bs_strpool_get(bs_strpool *p, const char *s) {
  return bs_strpool_getn(p, s, strlen(s));
}
