#include "dumps/bs_strpool.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct bs_strpool {
  char **slot; /* open addressing; NULL: free */
  size_t cap, n;
};

bs_strpool *bs_strpool_create(void) {
  bs_strpool *p = calloc(1, sizeof *p);
  if (p && !(p->slot = calloc(p->cap = 64, sizeof *p->slot))) {
    free(p);
    p = NULL;
  }
  return p;
}

void bs_strpool_destroy(bs_strpool *p) {
  if (!p)
    return;
  for (size_t i = 0; i < p->cap; i++)
    free(p->slot[i]);
  free(p->slot);
  free(p);
}

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Where s is, or the free slot it would take. */
static char **find(char **slot, size_t cap, const char *s) {
  size_t i = (size_t)hash(s) & (cap - 1);
  while (slot[i] && strcmp(slot[i], s) != 0)
    i = (i + 1) & (cap - 1);
  return &slot[i];
}

/* Doubles the table (kept at most half full). */
static int grow(bs_strpool *p) {
  size_t cap = p->cap * 2;
  char **slot = calloc(cap, sizeof *slot);
  if (!slot)
    return 0;
  for (size_t i = 0; i < p->cap; i++)
    if (p->slot[i])
      *find(slot, cap, p->slot[i]) = p->slot[i];
  free(p->slot);
  p->slot = slot;
  p->cap = cap;
  return 1;
}

const char *bs_strpool_get(bs_strpool *p, const char *s) {
  char **at = find(p->slot, p->cap, s);
  if (*at)
    return *at;
  if (2 * (p->n + 1) > p->cap) {
    if (!grow(p))
      return NULL;
    at = find(p->slot, p->cap, s);
  }
  if (!(*at = strdup(s)))
    return NULL;
  p->n++;
  return *at;
}
