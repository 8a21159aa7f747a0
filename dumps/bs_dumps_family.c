/* The lines of a loop of new_group (bs_dumps_family.h). */
#include "bs_dumps_family.h"

#include <stdlib.h>

#include "bs_vec.h"

/* A layout: A x S x C ranks, group l's (a, c) a-major or c-major. */
typedef struct layout {
  int a, s, c;
  bool c_major;
} layout;

/* Whether rank r is on line l of layout x. */
static bool on_line(const layout *x, int l, int r) {
  int a = x->c_major ? l % x->a : l / x->c;
  int c = x->c_major ? l / x->a : l % x->c;
  return r / (x->s * x->c) == a && r % x->c == c;
}

static int line_rank(const layout *x, int l, int j) {
  int a = x->c_major ? l % x->a : l / x->c;
  int c = x->c_major ? l / x->a : l % x->c;
  return a * x->s * x->c + j * x->c + c;
}

/* Whether layout x holds every member named of groups [from, to) on its
 * line, and no line puts a rank in a group its dump rules out. */
static bool fits(const bs_dumps *d, size_t from, size_t to, const bool *out,
                 const layout *x) {
  for (size_t k = from; k < to; k++) {
    int l = (int)(k - from);
    const bs_dump_group *g = &d->groups[k];
    for (int i = 0; i < g->n; i++)
      if (!on_line(x, l, g->ranks[i]))
        return false;
    for (int j = 0; j < x->s; j++)
      if (out[(size_t)l * (size_t)d->ranks + (size_t)line_rank(x, l, j)])
        return false;
  }
  return true;
}

static bool has(const bs_dump_group *g, int r) {
  for (int i = 0; i < g->n; i++)
    if (g->ranks[i] == r)
      return true;
  return false;
}

static int by_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Each group of [from, to) gets the ranks of its line it lacks. */
static bool apply(bs_dumps *d, size_t from, size_t to, const layout *x) {
  for (size_t k = from; k < to; k++) {
    bs_dump_group *g = &d->groups[k];
    for (int j = 0; j < x->s; j++) {
      int r = line_rank(x, (int)(k - from), j);
      if (has(g, r))
        continue;
      if (!bs_vec_grow(&g->ranks, NULL, (size_t)g->n + 1, sizeof *g->ranks))
        return false;
      g->ranks[g->n++] = r;
    }
    qsort(g->ranks, (size_t)g->n, sizeof *g->ranks, by_int);
  }
  return true;
}

bool bs_dumps_family_fill(bs_dumps *d, size_t from, size_t to,
                          const bool *out) {
  int f = (int)(to - from), w = d->ranks, found = 0;
  layout kept = {0};
  if (f < 2 || w % f || w / f < 2)
    return true;
  for (int a = 1; a <= f && found < 2; a++) {
    if (f % a)
      continue;
    for (int cm = 0; cm <= (a > 1 && a < f) && found < 2; cm++) {
      layout x = {.a = a, .s = w / f, .c = f / a, .c_major = cm};
      if (fits(d, from, to, out, &x) && !found++)
        kept = x;
    }
  }
  return found != 1 || apply(d, from, to, &kept);
}
