/* The lines of a loop of new_group (bs_dumps_family.h). */
#include "bs_dumps_family.h"

/* Line l's (a, c). */
static void coords(const bs_dumps_family *x, int l, int *a, int *c) {
  *a = x->c_major ? l % x->a : l / x->c;
  *c = x->c_major ? l / x->a : l % x->c;
}

int bs_dumps_family_rank(const bs_dumps_family *x, int l, int j) {
  int a, c;
  coords(x, l, &a, &c);
  return a * x->s * x->c + j * x->c + c;
}

static bool on_line(const bs_dumps_family *x, int l, int r) {
  int a, c;
  coords(x, l, &a, &c);
  return r / (x->s * x->c) == a && r % x->c == c;
}

/* Whether layout x holds every member named of groups [from, to) on its
 * line, and no line puts a rank in a group its dump rules out. */
static bool fits(const bs_dumps *d, size_t from, size_t to, int w,
                 const bool *out, const bs_dumps_family *x) {
  for (size_t k = from; k < to; k++) {
    int l = (int)(k - from);
    const bs_dump_group *g = &d->groups[k];
    for (int i = 0; i < g->n; i++)
      if (!on_line(x, l, g->ranks[i]))
        return false;
    for (int j = 0; j < x->s; j++) {
      size_t r = (size_t)bs_dumps_family_rank(x, l, j);
      if (out[(size_t)l * (size_t)w + r])
        return false;
    }
  }
  return true;
}

int bs_dumps_family_find(const bs_dumps *d, size_t from, size_t to, int f,
                         int w, const bool *out, bs_dumps_family *x) {
  int found = 0;
  if (f < 2 || f < (int)(to - from) || w % f || w / f < 2)
    return 0;
  for (int a = 1; a <= f && found < 2; a++) {
    if (f % a)
      continue;
    for (int cm = 0; cm <= (a > 1 && a < f) && found < 2; cm++) {
      bs_dumps_family at = {.a = a, .s = w / f, .c = f / a, .c_major = cm};
      if (fits(d, from, to, w, out, &at) && !found++)
        *x = at;
    }
  }
  return found;
}
