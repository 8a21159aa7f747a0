/* The members of a DeviceMesh's groups (bs_dumps_mesh.h). */
#include "bs_dumps_mesh.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "bs_num.h"
#include "bs_vec.h"

enum { MESH_DIMS = 6 };

typedef struct seen {
  int g; /* in d->groups */
  long name;
  int dim;
} seen;

/* A grid: its world, its dimensions' sizes, which order a dimension's
 * lines are made in (torch's DeviceMesh has made them in row-major order
 * of the other dimensions; swapdims(-1, dim) puts the last one first),
 * and the name of its first group. */
typedef struct grid {
  int w, s[MESH_DIMS];
  bool swapped;
  long first;
} grid;

typedef struct mesh {
  bs_dumps *d;
  seen *g;
  size_t n;
  int k;     /* dimensions */
  long next; /* the name of the first group made after them (0: none) */
  grid at, kept;
  int found; /* grids that fit with the smallest world: 0, 1, 2 (several) */
} mesh;

static bool is_mesh(const bs_dump_group *g) {
  return g->desc && !strncmp(g->desc, "mesh_", 5);
}

/* The mesh's groups in name order, each with its dimension (its desc's
 * place among them); false where they are not one mesh's. */
static bool collect(mesh *m) {
  const char *desc[MESH_DIMS];
  for (size_t k = 0; k < m->d->ngroups; k++) {
    const bs_dump_group *x = &m->d->groups[k];
    long name;
    if (!is_mesh(x))
      continue;
    if (!bs_num_long(x->name, 0, LONG_MAX, &name))
      return false;
    int dim = m->k - 1;
    if (m->k == 0 || strcmp(desc[dim], x->desc)) {
      for (int e = 0; e < m->k; e++)
        if (!strcmp(desc[e], x->desc))
          return false; /* a dimension made again: two meshes */
      if (m->k == MESH_DIMS)
        return false;
      desc[dim = m->k++] = x->desc;
    }
    if (!bs_vec_grow(&m->g, NULL, m->n + 1, sizeof *m->g))
      return false;
    m->g[m->n++] = (seen){.g = (int)k, .name = name, .dim = dim};
  }
  for (size_t k = 0; m->n && k < m->d->ngroups && !m->next; k++) {
    long name;
    if (!is_mesh(&m->d->groups[k]) &&
        bs_num_long(m->d->groups[k].name, 0, LONG_MAX, &name) &&
        name > m->g[m->n - 1].name)
      m->next = name;
  }
  return m->k >= 2 && m->g[0].dim == 0;
}

/* The other dimensions of dim, in the order its lines are made (major
 * first). */
static int others(const mesh *m, const grid *x, int dim, int *o) {
  int n = 0, last = m->k - 1;
  if (x->swapped && dim != last) {
    for (int e = 0; e < last; e++)
      o[n++] = e == dim ? last : e;
    return n;
  }
  for (int e = 0; e < m->k; e++)
    if (e != dim)
      o[n++] = e;
  return n;
}

static long stride(const grid *x, int k, int e) {
  long t = 1;
  for (int f = e + 1; f < k; f++)
    t *= x->s[f];
  return t;
}

/* The line of dimension dim that rank r is on. */
static long line_of(const mesh *m, const grid *x, int dim, int r) {
  int o[MESH_DIMS];
  int n = others(m, x, dim, o);
  long j = 0;
  for (int i = 0; i < n; i++)
    j = j * x->s[o[i]] + (r / stride(x, m->k, o[i])) % x->s[o[i]];
  return j;
}

/* The i-th rank of line j of dimension dim. */
static int line_rank(const mesh *m, const grid *x, int dim, long j, int i) {
  int o[MESH_DIMS];
  int n = others(m, x, dim, o);
  long r = (long)i * stride(x, m->k, dim);
  for (int q = n - 1; q >= 0; q--) {
    r += (j % x->s[o[q]]) * stride(x, m->k, o[q]);
    j /= x->s[o[q]];
  }
  return (int)r;
}

static long lines(const mesh *m, const grid *x) {
  long n = 0;
  for (int e = 0; e < m->k; e++)
    n += x->w / x->s[e];
  return n;
}

/* Group g's dimension and line in grid x (false: none of its). */
static bool place(const mesh *m, const grid *x, const seen *g, long *j) {
  long idx = g->name - x->first;
  for (int e = 0; e < m->k && idx >= 0; e++) {
    long n = x->w / x->s[e];
    if (idx < n) {
      *j = idx;
      return e == g->dim;
    }
    idx -= n;
  }
  return false;
}

/* Whether every member the dumps name in each mesh group is on its line,
 * and the group made after the mesh is named right after its last. */
static bool fits(mesh *m, grid *x) {
  const bs_dump_group *g0 = &m->d->groups[m->g[0].g];
  if (!g0->n)
    return false;
  x->first = m->g[0].name - line_of(m, x, 0, g0->ranks[0]);
  /* The groups made next are named right after the grid's. */
  if (m->next && x->first + lines(m, x) != m->next)
    return false;
  for (size_t k = 0; k < m->n; k++) {
    const bs_dump_group *g = &m->d->groups[m->g[k].g];
    long j;
    if (!place(m, x, &m->g[k], &j))
      return false;
    for (int i = 0; i < g->n; i++)
      if (g->ranks[i] >= x->w || line_of(m, x, m->g[k].dim, g->ranks[i]) != j)
        return false;
  }
  return true;
}

/* Whether grids a and b give every mesh group the same members. */
static bool same_lines(const mesh *m, const grid *a, const grid *b) {
  for (size_t k = 0; k < m->n; k++) {
    int dim = m->g[k].dim;
    long ja = 0, jb = 0;
    if (a->s[dim] != b->s[dim] || !place(m, a, &m->g[k], &ja) ||
        !place(m, b, &m->g[k], &jb))
      return false;
    for (int i = 0; i < a->s[dim]; i++)
      if (line_rank(m, a, dim, ja, i) != line_rank(m, b, dim, jb, i))
        return false;
  }
  return true;
}

static void consider(mesh *m) {
  for (int sw = 0; sw <= (m->k > 2); sw++) {
    m->at.swapped = sw;
    if (!fits(m, &m->at))
      continue;
    if (!m->found)
      m->kept = m->at;
    if (!m->found || !same_lines(m, &m->kept, &m->at))
      m->found++;
  }
}

/* Every grid of world w: dimension e's size a divisor of what is left. */
static void shapes(mesh *m, int e, int rest) {
  if (e == m->k - 1) {
    m->at.s[e] = rest;
    consider(m);
    return;
  }
  for (int s = 1; s <= rest && m->found < 2; s++)
    if (rest % s == 0) {
      m->at.s[e] = s;
      shapes(m, e + 1, rest / s);
    }
}

/* Each mesh group its grid places gets the ranks of its line (add). */
static bool apply(mesh *m, bs_dumps_add_fn add) {
  const grid *x = &m->kept;
  bool ok = true;
  for (size_t k = 0; ok && k < m->n; k++) {
    bs_dump_group *g = &m->d->groups[m->g[k].g];
    int dim = m->g[k].dim;
    long j;
    if (g->ranks_known || !place(m, x, &m->g[k], &j))
      continue;
    for (int i = 0; ok && i < x->s[dim]; i++)
      ok = add(g, line_rank(m, x, dim, j, i));
  }
  if (x->w > m->d->ranks) /* its default group grows with it (settle) */
    m->d->ranks = x->w;
  return ok;
}

bs_status bs_dumps_mesh_infer(bs_dumps *d, bs_dumps_add_fn add, int per) {
  bs_status st = BS_OK;
  mesh m = {.d = d};
  bool known = true;
  if (!collect(&m))
    goto out;
  for (size_t k = 0; k < m.n; k++)
    known = known && d->groups[m.g[k].g].ranks_known;
  /* The smallest world any grid fits (its highest ranks may have left no
   * dump): searched up to twice the ranks named, in jobs of some hundreds. */
  int top = d->ranks <= BS_DUMPS_SEARCH_RANKS ? 2 * d->ranks : d->ranks;
  top = per ? (top + per - 1) / per * per : top; /* whole nodes */
  for (int w = d->ranks; !known && w <= top && !m.found; w++) {
    if (per && w % per)
      continue;
    m.at.w = w;
    shapes(&m, 0, w);
  }
  if (m.found == 1 && !apply(&m, add))
    BS_FAIL(BS_ERR_NOMEM, NULL, "dumps: a DeviceMesh's groups");
out:
  free(m.g);
  return st;
}
