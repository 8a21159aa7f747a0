/* A process group's ranks and names (bs_pg.h). */
#include "comm/front/bs_pg.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

/* By halves (members ascending): the report asks it of every member of
 * every waiting rank's group, thousands by thousands. */
int bs_pg_rank_of(const bs_pg *pg, int r) {
  int lo = 0, hi = pg->n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (pg->members[mid] < r)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < pg->n && pg->members[lo] == r ? lo : -1;
}

int bs_pg_global(const bs_pg *pg, int i) {
  return pg ? pg->members[i] : i;
}

const char *bs_pg_of_text(const bs_pg *pg, char *buf, size_t n) {
  if (pg)
    snprintf(buf, n, " of group %s", pg->name);
  else if (n)
    buf[0] = '\0';
  return buf;
}

void bs_pg_free(bs_pg *pg) {
  if (!pg)
    return;
  free(pg->members);
  free(pg->last_done);
  free(pg);
}

void bs_pg_file(const bs_pg *pg, const char *base, char *out, size_t n) {
  if (!pg) {
    snprintf(out, n, "%s", base);
    return;
  }
  int k = snprintf(out, n, "%s.pg.", base);
  for (const char *c = pg->name; *c && k >= 0 && (size_t)k + 1 < n; c++)
    out[k++] = isalnum((unsigned char)*c) ? *c : '_';
  if (k >= 0 && (size_t)k < n)
    out[k] = '\0';
}
