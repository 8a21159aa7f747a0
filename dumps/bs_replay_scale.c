/* Counts replaced (bs_replay_int.h): when the recorded buffers would not
 * fit, each distinct count becomes a distinct smaller one. */
#include <stdlib.h>
#include <string.h>

#include "bs_replay_int.h"

/* By text, not address: the order (and so the replayed counts and the
 * list of them) is the same from run to run. NULL (one tensor) first. */
static int by_text(const char *x, const char *y) {
  if (x == y) /* interned: the same text */
    return 0;
  if (!x || !y)
    return x ? 1 : -1;
  return strcmp(x, y);
}

static int by_key(const void *a, const void *b) {
  const bs_replay_count_key *x = a, *y = b;
  if (x->orig != y->orig)
    return x->orig > y->orig ? 1 : -1;
  int c = by_text(x->shape, y->shape);
  return c ? c : by_text(x->shape_dt, y->shape_dt);
}

bs_status bs_replay_scale_keys(const bs_replay_state *r,
                               bs_replay_count_key **distinct, size_t *nd) {
  size_t total = 0, k = 0;
  for (int i = 0; i < r->n; i++)
    total += r->plan[i].n;
  bs_replay_count_key *v = malloc((total ? total : 1) * sizeof *v);
  if (!v)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu counts", total);
  for (int i = 0; i < r->n; i++)
    for (size_t j = 0; j < r->plan[i].n; j++) {
      const bs_replay_step *s = &r->plan[i].s[j];
      if (s->orig)
        v[k++] = (bs_replay_count_key){s->orig, s->shape, s->shape_dt};
    }
  qsort(v, k, sizeof *v, by_key);
  size_t m = 0;
  for (size_t j = 0; j < k; j++)
    if (m == 0 || by_key(&v[j], &v[m - 1]) != 0)
      v[m++] = v[j];
  *distinct = v;
  *nd = m;
  return BS_OK;
}

/* Two shapes of one total (coalesced tensors of 4+5 and 4+2+3): as
 * recorded, their counts would match. */
bool bs_replay_scale_collide(const bs_replay_count_key *v, size_t m) {
  for (size_t j = 1; j < m; j++)
    if (v[j].orig == v[j - 1].orig)
      return true;
  return false;
}

/* Each distinct count (with its shape) becomes its rank among them (1, 2,
 * ...): equal ones stay equal, different ones different. */
void bs_replay_scale_apply(bs_replay_state *r, const bs_replay_count_key *v,
                           size_t m) {
  for (int i = 0; i < r->n; i++)
    for (size_t j = 0; j < r->plan[i].n; j++) {
      bs_replay_step *s = &r->plan[i].s[j];
      bs_replay_count_key key = {s->orig, s->shape, s->shape_dt};
      const bs_replay_count_key *at =
          s->orig ? bsearch(&key, v, m, sizeof *v, by_key) : NULL;
      s->count = at ? (size_t)(at - v) + 1 : 0;
    }
}
