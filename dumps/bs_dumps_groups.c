/* The job's process groups as its dumps name them. A group is its name
 * (the entries' process_group[0], pg_config's key and name); its members
 * come from pg_config where a dump lists them. torch 2.15's gloo writes a
 * pg_config that names no group the entries are in ({"": {"name": ""}}):
 * then a group's members are the ranks whose dumps hold its entries, and
 * the default group's every rank the folder has a dump of. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_dumps_int.h"
#include "bs_dumps_members.h"
#include "bs_num.h"
#include "bs_strpool.h"
#include "bs_vec.h"

struct bs_dumps_groups {
  bs_dump_group *g;
  size_t n, cap;
  /* g's indices by name (interned: hashed by address), open addressing,
   * -1 free, nidx a power of two above 2n: every entry of every dump asks,
   * and a job of thousands of ranks has thousands of groups. */
  int *idx;
  size_t nidx;
  int64_t comm_size; /* the largest a dump said */
  int *nameless;     /* ranks pg_config gives a group named "" (gloo) */
  int nnameless;
};

static bs_dumps_groups *table(bs_dumps *d) {
  if (!d->priv)
    d->priv = calloc(1, sizeof(bs_dumps_groups));
  return d->priv;
}

/* name's place in idx: where it is, or the free one it would take. */
static size_t place(const bs_dumps_groups *t, const char *name) {
  size_t h = (size_t)((uintptr_t)name * 0x9E3779B97F4A7C15ull >> 20);
  for (size_t k = h & (t->nidx - 1);; k = (k + 1) & (t->nidx - 1))
    if (t->idx[k] < 0 || t->g[t->idx[k]].name == name)
      return k;
}

static int find(const bs_dumps_groups *t, const char *name) {
  return t->nidx ? t->idx[place(t, name)] : -1;
}

static void reindex(bs_dumps_groups *t) {
  for (size_t k = 0; k < t->nidx; k++)
    t->idx[k] = -1;
  for (size_t i = 0; i < t->n; i++)
    t->idx[place(t, t->g[i].name)] = (int)i;
}

/* Room for one more group in g and idx (made again, twice the size, when
 * it would be half full). */
static bool room(bs_dumps_groups *t) {
  if (!bs_vec_grow(&t->g, &t->cap, t->n + 1, sizeof *t->g))
    return false;
  if (2 * (t->n + 1) < t->nidx)
    return true;
  size_t nidx = t->nidx ? 2 * t->nidx : 16;
  if (!bs_vec_grow(&t->idx, NULL, nidx, sizeof *t->idx))
    return false;
  t->nidx = nidx;
  reindex(t);
  return true;
}

int bs_dumps_groups_of(bs_dumps *d, const char *name, const char *desc) {
  bs_dumps_groups *t = table(d);
  if (!t)
    return -1;
  int i = find(t, name);
  if (i >= 0) {
    if (!t->g[i].desc[0] && desc[0])
      t->g[i].desc = desc;
    return i;
  }
  if (!room(t))
    return -1;
  t->g[t->n] = (bs_dump_group){.name = name, .desc = desc};
  t->idx[place(t, name)] = (int)t->n;
  return (int)t->n++;
}

/* The ranks of "[0, 1, 2]" (a list as Python prints it) into m[*k...]
 * (one past the bound: -1). */
static bs_status text_ranks(const char *s, const char *file, int *m, int *k) {
  const char *p = s + strspn(s, "[( ");
  long r;
  while (*p && *p != ']' && *p != ')' && *k < BS_DUMPS_MAX_RANKS) {
    size_t len = strcspn(p, ", ])");
    if (!bs_num_longn(p, len, 0, LONG_MAX, &r))
      return bs_err_fail(BS_ERR_INVALID, NULL, "%s: pg_config ranks '%.60s'",
                         file, s);
    m[(*k)++] = r >= BS_DUMPS_MAX_RANKS ? -1 : (int)r;
    p += len;
    p += strspn(p, ", ");
  }
  return BS_OK;
}

/* "[0, 1, 2]" (as PyTorch writes it) or a list of integers: distinct
 * global ranks. */
static bs_status parse_ranks(const bs_dval *v, const char *file, int **out,
                             int *n) {
  bs_status st = BS_OK;
  int *m = calloc(BS_DUMPS_MAX_RANKS, sizeof *m);
  bool *dup = calloc(BS_DUMPS_MAX_RANKS, sizeof *dup);
  int k = 0;
  if (!m || !dup)
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: process group members", file);
  if (bs_dval_len(v) && v->kind != BS_DV_DICT) {
    for (size_t i = 0; i < v->n && k < BS_DUMPS_MAX_RANKS; i++)
      if (v->kids[i]->kind == BS_DV_INT)
        m[k++] = (int)v->kids[i]->i;
  } else if (v && v->kind == BS_DV_STR) {
    BS_CHECK(text_ranks(v->s, file, m, &k));
  }
  for (int i = 0; i < k; i++) {
    if (m[i] < 0 || m[i] >= BS_DUMPS_MAX_RANKS || dup[m[i]])
      BS_FAIL(BS_ERR_INVALID, NULL,
              "%s: pg_config ranks must be distinct, within 0..%d", file,
              BS_DUMPS_MAX_RANKS - 1);
    dup[m[i]] = true;
  }
  *n = k;
  *out = m;
  m = NULL;
out:
  free(m);
  free(dup);
  return st;
}

/* Whether the dump holds entries of the default group alone (pg_id 0). */
static bool world_only(const bs_dump *dump) {
  for (size_t k = 0; k < dump->npg; k++)
    if (dump->pg[k].pg_id > 0)
      return false;
  return true;
}

/* gloo's nameless pg_config: how many ranks it lists, and the world's
 * members where the dump holds the default group's entries alone. */
static bs_status nameless(bs_dumps_groups *t, const bs_dval *ranks,
                          bs_dump *dump) {
  bs_status st = BS_OK;
  int *m = NULL, n = 0;
  BS_CHECK(parse_ranks(ranks, dump->file, &m, &n));
  dump->cfg_ranks = n;
  if (world_only(dump) && !t->nameless) {
    t->nameless = m;
    t->nnameless = n;
    m = NULL;
  }
out:
  free(m);
  return st;
}

/* One pg_config group: {"name", "desc", "ranks"}, or its ranks alone. */
static bs_status config_one(bs_dumps *d, const char *key, const bs_dval *v,
                            bs_dump *dump) {
  const char *file = dump->file;
  bs_status st = BS_OK;
  bool obj = v->kind == BS_DV_DICT;
  const char *name = obj ? bs_dval_str(bs_dval_get(v, "name"), key) : key;
  const char *desc = obj ? bs_dval_str(bs_dval_get(v, "desc"), "") : "";
  const bs_dval *ranks = obj ? bs_dval_get(v, "ranks") : v;
  const char *iname = bs_strpool_get(d->pool, name[0] ? name : key);
  const char *idesc = bs_strpool_get(d->pool, desc);
  if (!iname || !idesc)
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: out of memory", file);
  bs_dumps_groups *t = d->priv;
  if (!iname[0] && ranks) /* gloo's {"": ...}: a hint */
    BS_CHECK(nameless(t, ranks, dump));
  if (!iname[0] || !ranks)
    goto out;
  int i = bs_dumps_groups_of(d, iname, idesc);
  if (i < 0)
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: out of memory", file);
  bs_dump_group *g = &t->g[i];
  if (g->ranks_known) /* thousands of dumps repeat it: read once */
    goto out;
  free(g->ranks);
  g->ranks = NULL;
  BS_CHECK(parse_ranks(ranks, file, &g->ranks, &g->n));
  g->ranks_known = g->n > 0;
out:
  return st;
}

bs_status bs_dumps_groups_config(bs_dumps *d, const bs_dval *root,
                                 bs_dump *dump) {
  const char *file = dump->file;
  bs_status st = BS_OK;
  const bs_dval *cfg = bs_dval_get(root, "pg_config");
  bs_dumps_groups *t = table(d);
  int64_t cs = bs_dval_int(bs_dval_get(root, "comm_size"), 0);
  if (!t)
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: out of memory", file);
  t->comm_size = cs > t->comm_size ? cs : t->comm_size;
  for (size_t i = 0; cfg && cfg->kind == BS_DV_DICT && i < bs_dval_len(cfg);
       i++) {
    char buf[24];
    const char *key = bs_dval_key(cfg->kids[2 * i], buf, sizeof buf);
    if (key)
      BS_CHECK(config_one(d, key, cfg->kids[2 * i + 1], dump));
  }
out:
  return st;
}

/* ---- settling ---- */

static bool is_default(const bs_dump_group *g) {
  return !strcmp(g->desc, "default_pg") ||
         (!g->desc[0] && !strcmp(g->name, "0"));
}

/* Numeric names in number order ("2" before "10"), then the others. */
static int by_name(const void *a, const void *b) {
  const bs_dump_group *x = a, *y = b;
  long nx = 0, ny = 0;
  bool numx = bs_num_long(x->name, 0, LONG_MAX, &nx);
  bool numy = bs_num_long(y->name, 0, LONG_MAX, &ny);
  if (numx && numy && nx != ny)
    return nx < ny ? -1 : 1;
  if (numx != numy)
    return numx ? -1 : 1;
  return strcmp(x->name, y->name);
}

static int by_group(const void *a, const void *b) {
  int x = ((const bs_dump_pg *)a)->group, y = ((const bs_dump_pg *)b)->group;
  return (x > y) - (x < y);
}

static bool holds(const bs_dump *dp, int gi) {
  for (size_t k = 0; k < dp->npg; k++)
    if (dp->pg[k].group == gi)
      return true;
  return false;
}

/* The members of a group no pg_config listed: the ranks whose dumps hold
 * it (every rank of the job for the default group). */
static bs_status infer(bs_dumps *d, int gi, bs_dump_group *g, int ranks) {
  bool all = is_default(g);
  if (!(g->ranks = calloc(all ? (size_t)ranks : d->n + 1, sizeof *g->ranks)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "dumps: group members");
  g->n = 0;
  for (int r = 0; all && r < ranks; r++)
    g->ranks[g->n++] = r;
  for (size_t i = 0; !all && i < d->n; i++)
    if (holds(&d->d[i], gi))
      g->ranks[g->n++] = d->d[i].rank;
  return BS_OK;
}

/* torch 2.15's gloo writes, under the name "", the ranks of the last
 * group the rank is in by that group's own numbering (a 12-rank job's
 * group of 6 writes [0, ..., 5]): the world's where the rank is in no
 * other (read only from a dump of the default group's entries alone),
 * taken for the default group when they hold every rank the folder has
 * a dump of. */
static bool hint_fits(const bs_dumps *d, const bs_dumps_groups *t) {
  bool *in = t->nnameless ? calloc(BS_DUMPS_MAX_RANKS, sizeof *in) : NULL;
  bool fits = in != NULL;
  for (int k = 0; in && k < t->nnameless; k++)
    in[t->nameless[k]] = true;
  for (size_t i = 0; fits && i < d->n; i++)
    fits = in[d->d[i].rank];
  for (size_t i = 0; fits && i < d->nbad; i++)
    fits = in[d->bad[i].rank];
  free(in);
  return fits;
}

static void take_hint(const bs_dumps *d, bs_dumps_groups *t) {
  for (size_t i = 0; i < t->n; i++) {
    bs_dump_group *g = &t->g[i];
    if (g->ranks_known || !is_default(g) || !hint_fits(d, t))
      continue;
    free(g->ranks);
    g->ranks = t->nameless;
    g->n = t->nnameless;
    g->ranks_known = true;
    t->nameless = NULL;
    t->nnameless = 0;
    return;
  }
}

/* The last group made is the last of each of its members: one whose
 * dump's nameless pg_config counts every rank of the job has them all. */
static bs_status last_hint(const bs_dumps *d, bs_dumps_groups *t) {
  int last = -1;
  long top = 0;
  for (size_t i = 0; i < t->n; i++) {
    long n = 0;
    if (bs_num_long(t->g[i].name, 1, LONG_MAX, &n) && n > top &&
        !is_default(&t->g[i])) {
      top = n;
      last = (int)i;
    }
  }
  bs_dump_group *g = last >= 0 ? &t->g[last] : NULL;
  bool all = false;
  for (size_t i = 0; g && !g->ranks_known && g->n < d->ranks && i < d->n; i++)
    all = all || (d->d[i].cfg_ranks == d->ranks && holds(&d->d[i], last));
  if (!all)
    return BS_OK;
  int *m = malloc((size_t)d->ranks * sizeof *m);
  if (!m)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "dumps: group members");
  for (int r = 0; r < d->ranks; r++)
    m[r] = r;
  free(g->ranks);
  g->ranks = m;
  g->n = d->ranks;
  return BS_OK;
}

/* The job's ranks: every rank a dump, a bad dump or a group names. */
static int job_ranks(const bs_dumps *d, const bs_dumps_groups *t,
                     int64_t comm_size) {
  int r = comm_size > 0 && comm_size <= BS_DUMPS_MAX_RANKS ? (int)comm_size : 0;
  for (size_t i = 0; i < d->n; i++)
    r = d->d[i].rank >= r ? d->d[i].rank + 1 : r;
  for (size_t i = 0; i < d->nbad; i++)
    r = d->bad[i].rank >= r ? d->bad[i].rank + 1 : r;
  for (size_t i = 0; i < t->n; i++)
    for (int k = 0; t->g[i].ranks_known && k < t->g[i].n; k++)
      r = t->g[i].ranks[k] >= r ? t->g[i].ranks[k] + 1 : r;
  return r;
}

/* A p2p peer's group rank as a global rank (-1: not in the group). */
static void peers(bs_dump_pg *p, const bs_dump_group *g) {
  for (size_t k = 0; k < p->nraw; k++) {
    bs_dump_coll *c = &p->raw[k];
    c->peer = c->peer >= 0 && c->peer < g->n ? g->ranks[c->peer] : -1;
  }
  for (size_t k = 0; k < p->n; k++) {
    bs_dump_coll *c = &p->c[k];
    if (c->nparts || c->p2p)
      c->peer = c->peer >= 0 && c->peer < g->n ? g->ranks[c->peer] : -1;
  }
}

typedef struct slot {
  bs_dump_group g;
  int old; /* its index before sorting */
} slot;

static int by_slot(const void *a, const void *b) {
  return by_name(&((const slot *)a)->g, &((const slot *)b)->g);
}

/* The groups no entry is in (pg_config lists every group a rank made)
 * dropped, the others sorted; each dump's pg[].group renumbered and its
 * pg sorted by it. */
static bs_status renumber(bs_dumps *d, bs_dumps_groups *t) {
  bs_status st = BS_OK;
  size_t n = t->n ? t->n : 1, k = 0;
  slot *s = calloc(n, sizeof *s);
  int *to = calloc(n, sizeof *to);
  bool *used = calloc(n, sizeof *used);
  if (!s || !to || !used)
    BS_FAIL(BS_ERR_NOMEM, NULL, "dumps: %zu groups", t->n);
  for (size_t i = 0; i < d->n; i++)
    for (size_t j = 0; j < d->d[i].npg; j++)
      used[d->d[i].pg[j].group] = true;
  for (size_t i = 0; i < t->n; i++) {
    if (used[i])
      s[k++] = (slot){.g = t->g[i], .old = (int)i};
    else
      free(t->g[i].ranks);
  }
  qsort(s, k, sizeof *s, by_slot);
  for (size_t i = 0; i < k; i++) {
    t->g[i] = s[i].g;
    to[s[i].old] = (int)i;
  }
  t->n = k;
  reindex(t);
  for (size_t i = 0; i < d->n; i++) {
    for (size_t j = 0; j < d->d[i].npg; j++)
      d->d[i].pg[j].group = to[d->d[i].pg[j].group];
    if (d->d[i].npg) /* NULL when none: no qsort */
      qsort(d->d[i].pg, d->d[i].npg, sizeof *d->d[i].pg, by_group);
  }
out:
  free(s);
  free(to);
  free(used);
  return st;
}

/* The default group read as every rank named holds every rank of a
 * world the members' inference grew (a DeviceMesh's grid whose highest
 * ranks left no dump). */
static bs_status grow_default(bs_dumps *d, int named) {
  bs_status st = BS_OK;
  for (size_t k = 0; d->ranks > named && k < d->ngroups; k++) {
    bs_dump_group *g = &d->groups[k];
    if (g->ranks_known || !is_default(g))
      continue;
    free(g->ranks);
    BS_CHECK(infer(d, (int)k, g, d->ranks));
  }
out:
  return st;
}

bs_status bs_dumps_groups_settle(bs_dumps *d) {
  bs_status st = BS_OK;
  bs_dumps_groups *t = table(d);
  if (!t)
    BS_FAIL(BS_ERR_NOMEM, NULL, "dumps: out of memory");
  BS_CHECK(renumber(d, t));
  take_hint(d, t);
  d->ranks = job_ranks(d, t, t->comm_size);
  for (size_t i = 0; i < t->n; i++)
    if (!t->g[i].ranks_known)
      BS_CHECK(infer(d, (int)i, &t->g[i], d->ranks));
  BS_CHECK(last_hint(d, t));
  d->groups = t->g;
  d->ngroups = t->n;
  t->g = NULL;
  t->n = t->cap = t->nidx = 0;
  free(t->idx);
  t->idx = NULL;
  int named = d->ranks;
  BS_CHECK(bs_dumps_members_infer(d));
  BS_CHECK(grow_default(d, named));
  for (size_t i = 0; i < d->n; i++)
    for (size_t k = 0; k < d->d[i].npg; k++)
      peers(&d->d[i].pg[k], &d->groups[d->d[i].pg[k].group]);
out:
  return st;
}

void bs_dumps_groups_free(bs_dumps *d) {
  bs_dumps_groups *t = d->priv;
  for (size_t i = 0; t && i < t->n; i++)
    free(t->g[i].ranks);
  if (t) {
    free(t->g);
    free(t->idx);
    free(t->nameless);
  }
  free(t);
  d->priv = NULL;
  for (size_t i = 0; i < d->ngroups; i++)
    free(d->groups[i].ranks);
  free(d->groups);
  d->groups = NULL;
  d->ngroups = 0;
}
