/* Members of groups no pg_config lists (bs_dumps_members.h). */
#include "bs_dumps_members.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "bs_dumps_family.h"
#include "bs_dumps_mesh.h"
#include "bs_dumps_nodes.h"
#include "bs_num.h"
#include "bs_vec.h"

/* A group name torch made ("4"), as its number; -1: another name. */
static long number(const char *name) {
  long n;
  return bs_num_long(name, 0, LONG_MAX, &n) ? n : -1;
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

static bool join(bs_dump_group *g, int r) {
  if (!bs_vec_grow(&g->ranks, NULL, (size_t)g->n + 1, sizeof *g->ranks))
    return false;
  g->ranks[g->n++] = r;
  qsort(g->ranks, (size_t)g->n, sizeof *g->ranks, by_int);
  return true;
}

bool bs_dumps_members_add(bs_dump_group *g, int r) {
  return has(g, r) || join(g, r);
}

/* The group named number n (-1: none). */
static int named(const bs_dumps *d, long n) {
  for (size_t k = 0; k < d->ngroups; k++)
    if (number(d->groups[k].name) == n)
      return (int)k;
  return -1;
}

/* Rank r's dump and its entries of group k (NULL: none), found here: the
 * reader's own lookups (bs_dumps.c) call into this file's caller. */
static int rank_cmp(const void *key, const void *dump) {
  int r = *(const int *)key, x = ((const bs_dump *)dump)->rank;
  return (r > x) - (r < x);
}

static const bs_dump *dump_of(const bs_dumps *d, int r) {
  return d->n ? bsearch(&r, d->d, d->n, sizeof *d->d, rank_cmp) : NULL;
}

static const bs_dump_pg *pg_of(const bs_dump *dp, int k) {
  for (size_t i = 0; dp && i < dp->npg; i++)
    if (dp->pg[i].group == k)
      return &dp->pg[i];
  return NULL;
}

/* Whether every member must issue op before any completes it (a
 * broadcast's root may finish before its peers issue theirs). */
static bool all_issue(const char *op) {
  return strstr(op, "all") || strstr(op, "barrier") ||
         strstr(op, "reduce_scatter");
}

/* Whether group k completed such a collective on a member. */
static bool completed_one(const bs_dumps *d, int k) {
  const bs_dump_group *g = &d->groups[k];
  for (int i = 0; i < g->n; i++) {
    const bs_dump_pg *p = pg_of(dump_of(d, g->ranks[i]), k);
    for (size_t c = 0; p && c < p->n; c++)
      if (!p->c[c].p2p && p->c[c].state == BS_DUMP_COMPLETED &&
          all_issue(p->c[c].op))
        return true;
  }
  return false;
}

/* The name number of dump dp's group of pg_id id (the default group's
 * is 0), -1: none it holds. */
static long name_of_id(const bs_dumps *d, const bs_dump *dp, int64_t id) {
  for (size_t k = 0; id > 0 && k < dp->npg; k++)
    if (dp->pg[k].pg_id == id)
      return number(d->groups[dp->pg[k].group].name);
  return id == 0 ? 0 : -1;
}

/* Whether dp numbers two groups one after the other, made before and
 * after the group named n: it is in no group made between. */
static bool bracketed(const bs_dumps *d, const bs_dump *dp, long n) {
  for (size_t k = 0; k < dp->npg; k++) {
    long after = number(d->groups[dp->pg[k].group].name);
    long before =
        dp->pg[k].pg_id > 0 ? name_of_id(d, dp, dp->pg[k].pg_id - 1) : -1;
    if (after > n && before >= 0 && before < n)
      return true;
  }
  return false;
}

/* bs_dumps_members_out, whether group k completed such a collective
 * (completed_one) asked once: done, -1 not yet. */
static bool out_of(const bs_dumps *d, int r, int k, int *done) {
  const bs_dump *dp = dump_of(d, r);
  long n = number(d->groups[k].name);
  if (!dp || n < 0 || pg_of(dp, k))
    return false;
  if (bracketed(d, dp, n))
    return true;
  if (dp->lost)
    return false;
  if (*done < 0)
    *done = completed_one(d, k);
  return *done;
}

bool bs_dumps_members_out(const bs_dumps *d, int r, int k) {
  int done = -1;
  return out_of(d, r, k, &done);
}

/* Rank r is in every group made between names lo and hi that its dump
 * does not rule out when as many pg_ids lie between its pg_ids of them
 * (gap). */
static bool fill_gap(bs_dumps *d, int r, long lo, long hi, int64_t gap) {
  int64_t could = 0;
  if (gap <= 0 || hi - lo - 1 < gap)
    return true;
  for (long n = lo + 1; n < hi; n++) {
    int k = named(d, n);
    if (k < 0)
      return true; /* a group the dumps never name: no telling */
    could += !bs_dumps_members_out(d, r, k);
  }
  for (long n = lo + 1; could == gap && n < hi; n++) {
    bs_dump_group *g = &d->groups[named(d, n)];
    if (!g->ranks_known && !has(g, r) &&
        !bs_dumps_members_out(d, r, named(d, n)) && !join(g, r))
      return false;
  }
  return true;
}

/* Dump i's groups in pg_id order, each gap filled. */
static bool by_pg_ids(bs_dumps *d, size_t i) {
  const bs_dump *dp = &d->d[i];
  int64_t last_id = 0;
  long last_name = 0;
  for (int64_t id = 1; id <= (int64_t)dp->npg + 1; id++)
    for (size_t k = 0; k < dp->npg; k++) {
      const bs_dump_pg *p = &dp->pg[k];
      long n = number(d->groups[p->group].name);
      if (p->pg_id != id || n < 0)
        continue;
      if (n <= last_name ||
          !fill_gap(d, dp->rank, last_name, n, id - last_id - 1))
        return n <= last_name; /* out of order: names are not torch's */
      last_id = id;
      last_name = n;
    }
  return true;
}

/* Groups [from, to) split the job's ranks in groups of one size (a
 * DeviceMesh dimension's, a loop of new_group's): one of them short of
 * that size holds the ranks none of them holds, when as many are short. */
static bool fill_run(bs_dumps *d, size_t from, size_t to, bool *in) {
  int size = 0, short_one = -1, shorts = 0, missing = 0;
  memset(in, 0, (size_t)d->ranks * sizeof *in);
  for (size_t o = from; o < to; o++) {
    const bs_dump_group *x = &d->groups[o];
    size = x->n > size ? x->n : size;
    for (int i = 0; i < x->n; i++)
      in[x->ranks[i]] = true;
  }
  for (size_t o = from; o < to; o++)
    if (d->groups[o].n < size) {
      shorts++;
      short_one = (int)o;
    }
  for (int r = 0; r < d->ranks; r++)
    missing += !in[r];
  if (shorts != 1 || d->groups[short_one].ranks_known ||
      (int)(to - from) * size != d->ranks ||
      missing != size - d->groups[short_one].n)
    return true;
  for (int r = 0; r < d->ranks; r++)
    if (!in[r] && !join(&d->groups[short_one], r))
      return false;
  return true;
}

/* Whether groups [from, to) were named one after another. */
static bool consecutive(const bs_dumps *d, size_t from, size_t to) {
  for (size_t k = from + 1; k < to; k++)
    if (number(d->groups[k].name) != number(d->groups[k - 1].name) + 1 ||
        number(d->groups[k - 1].name) < 0)
      return false;
  return true;
}

/* How many groups a loop whose groups [from, to) the dumps name may have:
 * its last may be named after them and hold only ranks no dump names (a
 * lost node's), up to the next group named. */
static int room(const bs_dumps *d, size_t from, size_t to, int w) {
  long next = to < d->ngroups ? number(d->groups[to].name) : -1;
  long most = next > 0 ? next - number(d->groups[from].name) : w / 2;
  return most < w / 2 ? (int)most : w / 2;
}

/* How many layouts of a loop of new_group fit groups [from, to) in a job
 * of w ranks (bs_dumps_family.h), of any length the names leave room
 * for, and the one (x); -1: no memory. */
static int layouts(const bs_dumps *d, size_t from, size_t to, int w,
                   bs_dumps_family *x) {
  size_t n = (size_t)w;
  bool *out = calloc((to - from) * n + 1, sizeof *out);
  if (!out)
    return -1;
  for (size_t k = from; k < to; k++) {
    int done = -1;
    for (size_t r = 0; r < n; r++)
      out[(k - from) * n + r] = out_of(d, (int)r, (int)k, &done);
  }
  int found = 0, most = room(d, from, to, w);
  for (int f = (int)(to - from); f <= most && found < 2; f++)
    found += bs_dumps_family_find(d, from, to, f, w, out, x);
  free(out);
  return found < 2 ? found : 2;
}

/* Whether each of groups [from, to) holds its share of w ranks already. */
static bool full(const bs_dumps *d, size_t from, size_t to, int w) {
  for (size_t k = from; k < to; k++)
    if ((size_t)d->groups[k].n * (to - from) != (size_t)w)
      return false;
  return true;
}

/* Whether groups [from, to) are a loop whose members the dumps do not
 * list: named one after another, none listed by a pg_config (those are
 * as it says). */
static bool unlisted_loop(const bs_dumps *d, size_t from, size_t to) {
  for (size_t k = from; k < to; k++)
    if (d->groups[k].ranks_known)
      return false;
  return to - from > 1 && consecutive(d, from, to);
}

/* Groups [from, to), named one after another, get the lines of the one
 * layout of a loop of new_group that fits them. */
static bool lines_of_run(bs_dumps *d, size_t from, size_t to) {
  bs_dumps_family x;
  int found = unlisted_loop(d, from, to) && !full(d, from, to, d->ranks)
                  ? layouts(d, from, to, d->ranks, &x)
                  : 0;
  bool ok = found >= 0;
  for (size_t k = from; found == 1 && ok && k < to; k++)
    for (int j = 0; ok && j < x.s; j++) {
      ok = bs_dumps_members_add(&d->groups[k],
                                bs_dumps_family_rank(&x, (int)(k - from), j));
    }
  return ok;
}

/* Whether group o shares a rank with groups [from, o). */
static bool overlaps(const bs_dumps *d, size_t from, size_t o) {
  for (size_t k = from; k < o; k++)
    for (int i = 0; i < d->groups[o].n; i++)
      if (has(&d->groups[k], d->groups[o].ranks[i]))
        return true;
  return false;
}

/* The end of the run of groups from `from`: of one desc, made one after
 * another, sharing no rank (the groups are in name order: the order
 * torch made them). */
static size_t run_end(const bs_dumps *d, size_t from) {
  size_t o = from + 1;
  while (o < d->ngroups && d->groups[o].desc == d->groups[from].desc &&
         !overlaps(d, from, o))
    o++;
  return o;
}

static bool by_runs(bs_dumps *d, bool *in) {
  for (size_t from = 0, o; from < d->ngroups; from = o) {
    o = run_end(d, from);
    if (o - from > 1 &&
        (!lines_of_run(d, from, o) || !fill_run(d, from, o, in)))
      return false;
  }
  return true;
}

/* Whether a loop of groups [from, to), of a length the names leave room
 * for, divides w ranks. */
static bool divides(const bs_dumps *d, size_t from, size_t to, int w) {
  for (int f = (int)(to - from), most = room(d, from, to, w); f <= most; f++)
    if (w % f == 0)
      return true;
  return false;
}

/* Whether a loop's groups do not divide w ranks. */
static bool uneven(const bs_dumps *d, int w) {
  for (size_t from = 0, o; from < d->ngroups; from = o) {
    o = run_end(d, from);
    if (unlisted_loop(d, from, o) && !divides(d, from, o, w))
      return true;
  }
  return false;
}

/* Whether every loop has a layout in a job of w ranks (0: one does not,
 * 1: all do, -1: no memory). */
static int runs_fit(const bs_dumps *d, int w) {
  bs_dumps_family x;
  for (size_t from = 0, o; from < d->ngroups; from = o) {
    o = run_end(d, from);
    if (!unlisted_loop(d, from, o))
      continue;
    int found = full(d, from, o, w) ? 1 : layouts(d, from, o, w, &x);
    if (found <= 0)
      return found;
  }
  return 1;
}

/* Where a loop's groups do not divide the ranks named, the job's highest
 * ranks left no dump: the world grows to the smallest, up to twice the
 * ranks named (in jobs of some hundreds), in which every loop has a
 * layout (the default group grows with it: bs_dumps_groups.c). */
static bool grow_for_runs(bs_dumps *d, int per) {
  if (d->ranks > BS_DUMPS_SEARCH_RANKS || !uneven(d, d->ranks))
    return true;
  for (int w = d->ranks + 1; w <= 2 * d->ranks; w++) {
    int fit = per && w % per ? 0 : runs_fit(d, w);
    if (fit < 0)
      return false;
    if (fit) {
      d->ranks = w;
      break;
    }
  }
  return true;
}

/* A world of whole nodes, where the folders tell their size: the ranks
 * of a node that left no dump past the highest named. */
static void whole_nodes(bs_dumps *d, int per) {
  int w = per ? (d->ranks + per - 1) / per * per : d->ranks;
  d->ranks = w <= BS_DUMPS_MAX_RANKS ? w : d->ranks;
}

bs_status bs_dumps_members_infer(bs_dumps *d) {
  bool ok = true, any = false;
  for (size_t k = 0; k < d->ngroups; k++)
    any = any || !d->groups[k].ranks_known;
  if (!any)
    return BS_OK;
  int per = bs_dumps_nodes_ranks(d);
  bs_status st = bs_dumps_mesh_infer(d, bs_dumps_members_add, per);
  if (st != BS_OK)
    return st;
  if (!grow_for_runs(d, per))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "dumps: group members");
  whole_nodes(d, per);
  bool *in = calloc((size_t)d->ranks + 1, sizeof *in);
  ok = in != NULL;
  for (size_t i = 0; ok && i < d->n; i++)
    ok = by_pg_ids(d, i);
  ok = ok && by_runs(d, in);
  free(in);
  return ok ? BS_OK : bs_err_fail(BS_ERR_NOMEM, NULL, "dumps: group members");
}
