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

/* Doubles the table (kept at most half full). */
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

const char *bs_strpool_getn(bs_strpool *p, const char *s, size_t n) {
  char **at = find(p->slot, p->cap, s, n);
  if (*at)
    return *at;
  if (2 * (p->n + 1) > p->cap) {
    if (!grow(p))
      return NULL;
    at = find(p->slot, p->cap, s, n);
  }
  if (!(*at = malloc(n + 1)))
    return NULL;
  memcpy(*at, s, n);
  (*at)[n] = '\0';
  p->n++;
  return *at;
}

const char *bs_strpool_get(bs_strpool *p, const char *s) {
  return bs_strpool_getn(p, s, strlen(s));
}
