/* Ranks a node, from the folders a job's dumps were gathered in
 * (bs_dumps_nodes.h). */
#include "bs_dumps_nodes.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct span {
  const char *file; /* its folder: the file's name up to its last '/' */
  size_t len;
  int lo, hi;
} span;

/* The span of file's folder, added or widened by rank r; false where the
 * file sits in no sub-folder. */
static bool widen(span *s, size_t *n, const char *file, int r) {
  const char *slash = strrchr(file, '/');
  if (!slash)
    return false;
  size_t len = (size_t)(slash - file);
  for (size_t k = 0; k < *n; k++)
    if (s[k].len == len && !memcmp(s[k].file, file, len)) {
      s[k].lo = r < s[k].lo ? r : s[k].lo;
      s[k].hi = r > s[k].hi ? r : s[k].hi;
      return true;
    }
  s[(*n)++] = (span){.file = file, .len = len, .lo = r, .hi = r};
  return true;
}

/* Whether the spans are nodes of per ranks: each inside one block of per
 * ranks, no two in one. */
static bool aligned(const span *s, size_t n, int per) {
  for (size_t k = 0; k < n; k++) {
    if (s[k].lo / per != s[k].hi / per)
      return false;
    for (size_t j = 0; j < k; j++)
      if (s[j].lo / per == s[k].lo / per)
        return false;
  }
  return true;
}

/* One folder is a node's only where its name says so ("node0", "node-3",
 * any case): a single sub-folder is otherwise where the dumps were put
 * ("job1234"), and a dead rank at its end would make its nodes short. */
static bool node_named(const span *s) {
  const char *name = s->file, *end = s->file + s->len;
  for (const char *c = s->file; c < end; c++)
    name = *c == '/' ? c + 1 : name;
  if (end - name < 5 || strncasecmp(name, "node", 4))
    return false;
  name += 4 + (name[4] == '-' || name[4] == '_');
  for (const char *c = name; c < end; c++)
    if (!isdigit((unsigned char)*c))
      return false;
  return name < end;
}

int bs_dumps_nodes_ranks(const bs_dumps *d) {
  size_t n = 0, all = d->n + d->nbad;
  int per = 0;
  span *s = d->walked && all ? calloc(all, sizeof *s) : NULL;
  bool ok = s != NULL;
  for (size_t i = 0; ok && i < d->n; i++)
    ok = widen(s, &n, d->d[i].file, d->d[i].rank);
  for (size_t i = 0; ok && i < d->nbad; i++)
    ok = widen(s, &n, d->bad[i].file, d->bad[i].rank);
  for (size_t k = 0; ok && k < n; k++)
    per = s[k].hi - s[k].lo + 1 > per ? s[k].hi - s[k].lo + 1 : per;
  ok = ok && (n > 1 || node_named(&s[0])) && aligned(s, n, per);
  free(s);
  return ok ? per : 0;
}
