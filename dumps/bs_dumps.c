/* The dumps' model (bs_dumps.h): each dump's entries split by process
 * group and folded into ops, the groups settled once every dump is in,
 * and the look-ups analyze and replay make. PyTorch and Backstop write the
 * same keys; where they differ (Backstop's dumps name their rank, PyTorch's
 * files do), both are read. */
#include "bs_dumps.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_dumps_int.h"
#include "bs_num.h"
#include "bs_strpool.h"
#include "bs_vec.h"

/* ---- one dump ---- */

/* Backstop's dumps say their rank; PyTorch's files end in it. */
static int rank_of(const bs_dval *root, const char *name) {
  const bs_dval *r = root ? bs_dval_get(root, "rank") : NULL;
  if (r)
    return (int)bs_dval_int(r, -1);
  const char *base = strrchr(name, '/');
  name = base ? base + 1 : name; /* node1/rank_2: its file's name */
  size_t stem = strcspn(name, ".");
  size_t k = stem;
  long rank;
  while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9')
    k--;
  return bs_num_longn(name + k, stem - k, 0, 99999, &rank) ? (int)rank : -1;
}

static void lib_of(bs_dumps *d, const bs_dval *root, const bs_dval *es) {
  const char *lib = bs_dval_str(bs_dval_get(root, "comm_lib_version"), "");
  const char *v = bs_dval_str(bs_dval_get(root, "version"), "?");
  if (!d->version[0])
    snprintf(d->version, sizeof d->version, "%s", v);
  if (d->lib[0])
    return;
  if (lib[0]) {
    snprintf(d->lib, sizeof d->lib, "%s", lib);
  } else if (bs_dval_len(es)) {
    const char *name =
        bs_dval_str(bs_dval_get(bs_dval_item(es, 0), "profiling_name"), "");
    snprintf(d->lib, sizeof d->lib, "%.*s", (int)strcspn(name, ":"), name);
  }
}

/* pg_status: {"<pg_id>": {"last_completed_collective": 3 or "3", ...}};
 * a string not a count ("-1" too) is none, -1. */
static int64_t int_of(const bs_dval *o, const char *key) {
  const bs_dval *v = bs_dval_get(o, key);
  long x;
  if (v && v->kind == BS_DV_INT)
    return v->i;
  if (v && v->kind == BS_DV_STR && bs_num_long(v->s, 0, LONG_MAX, &x))
    return x;
  return -1;
}

static bs_dumps_status *statuses(const bs_dval *root, size_t *n) {
  const bs_dval *s = bs_dval_get(root, "pg_status");
  size_t m = bs_dval_len(s);
  bs_dumps_status *out;
  *n = 0;
  if (!s || s->kind != BS_DV_DICT || m == 0 || !(out = calloc(m, sizeof *out)))
    return NULL;
  for (size_t i = 0; i < m; i++) {
    const bs_dval *g = s->kids[2 * i + 1];
    char buf[24];
    const char *key = bs_dval_key(s->kids[2 * i], buf, sizeof buf);
    long id; /* a negative one no entry names (status_of) */
    if (!key || !bs_num_long(key, 0, LONG_MAX, &id) || g->kind != BS_DV_DICT)
      continue;
    out[(*n)++] =
        (bs_dumps_status){.pg_id = id,
                          .enqueued = int_of(g, "last_enqueued_collective"),
                          .started = int_of(g, "last_started_collective"),
                          .completed = int_of(g, "last_completed_collective")};
  }
  return out;
}

static const bs_dumps_status *status_of(const bs_dumps_status *s, size_t n,
                                        const bs_dval *const *f) {
  int64_t id = bs_dval_int(f[BS_DK_PG_ID], -1);
  for (size_t i = 0; id >= 0 && i < n; i++)
    if (s[i].pg_id == id)
      return &s[i];
  return NULL;
}

/* An entry's group: its process_group (name, desc), a dump of older
 * versions without one is the default group's; as an index into the
 * dump's own groups (p->name, p->desc). -1: out of memory. */
static int group_of(bs_strpool *pool, bs_dumps_prep *p,
                    const bs_dval *const *f) {
  const bs_dval *pg = f[BS_DK_PROCESS_GROUP];
  const char *name = bs_dval_str(bs_dval_item(pg, 0), NULL);
  const char *desc = bs_dval_str(bs_dval_item(pg, 1), NULL);
  if (!name) { /* interned: the document's strings are the pool's */
    name = bs_strpool_get(pool, "0");
    desc = bs_strpool_get(pool, "default_pg");
  } else if (!desc) {
    desc = bs_strpool_get(pool, "");
  }
  if (!name || !desc)
    return -1;
  for (size_t k = 0; k < p->ng; k++)
    if (p->name[k] == name && p->desc[k] == desc)
      return (int)k;
  size_t capn = p->cap, capd = p->cap; /* name and desc grow alike */
  if (!bs_vec_grow(&p->name, &capn, p->ng + 1, sizeof *p->name) ||
      !bs_vec_grow(&p->desc, &capd, p->ng + 1, sizeof *p->desc))
    return -1;
  p->cap = capn;
  p->name[p->ng] = name;
  p->desc[p->ng] = desc;
  return (int)p->ng++;
}

/* The slot of group g in dump's pg, made on first sight. */
static bs_dump_pg *slot(bs_dump *dump, int g, size_t *cap) {
  for (size_t k = 0; k < dump->npg; k++)
    if (dump->pg[k].group == g)
      return &dump->pg[k];
  if (!bs_vec_grow(&dump->pg, cap, dump->npg + 1, sizeof *dump->pg))
    return NULL;
  dump->pg[dump->npg] = (bs_dump_pg){.group = g,
                                     .last_enqueued = -1,
                                     .last_started = -1,
                                     .last_completed = -1,
                                     .pg_id = -1};
  return &dump->pg[dump->npg++];
}

/* Each entry's group (gi), and how many each group holds (in nraw). */
static bs_status split(bs_strpool *pool, bs_dumps_reader *rd, const bs_dval *es,
                       bs_dumps_prep *pr, int *gi) {
  size_t cap = 0;
  bs_dump *dump = &pr->dump;
  const bs_dval *f[BS_DK_COUNT];
  for (size_t i = 0; i < bs_dval_len(es); i++) {
    const bs_dval *e = bs_dval_item(es, i);
    gi[i] = -2; /* not an object: skipped */
    if (e->kind != BS_DV_DICT)
      continue;
    bs_dump_pg *p = NULL;
    bs_dumps_entry_fields(rd, e, f);
    if ((gi[i] = group_of(pool, pr, f)) < 0 || !(p = slot(dump, gi[i], &cap)))
      return bs_err_fail(BS_ERR_NOMEM, NULL, "%s: out of memory", dump->file);
    p->nraw++;
  }
  for (size_t k = 0; k < dump->npg; k++) {
    bs_dump_pg *p = &dump->pg[k];
    if (!(p->raw = calloc(p->nraw, sizeof *p->raw)))
      return bs_err_fail(BS_ERR_NOMEM, NULL, "%s: %zu entries", dump->file,
                         p->nraw);
    p->nraw = 0;
  }
  return BS_OK;
}

static void take_status(bs_dump_pg *p, const bs_dumps_status *st) {
  if (!st)
    return;
  p->last_enqueued = st->enqueued;
  p->last_started = st->started;
  p->last_completed = st->completed;
}

static bs_status fill(bs_strpool *pool, bs_dumps_reader *rd,
                      const bs_dval *root, const bs_dval *es,
                      bs_dumps_prep *pr) {
  bs_status st = BS_OK;
  bool oom = false;
  bs_dump *dump = &pr->dump;
  size_t nst = 0, n = bs_dval_len(es);
  bs_dumps_status *sts = statuses(root, &nst);
  const bs_dval *f[BS_DK_COUNT];
  int *gi = calloc(n ? n : 1, sizeof *gi);
  if (!gi)
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: %zu entries", dump->file, n);
  BS_CHECK(split(pool, rd, es, pr, gi));
  size_t cap = dump->npg;
  for (size_t i = 0; i < n; i++) {
    if (gi[i] < 0)
      continue;
    bs_dumps_entry_fields(rd, bs_dval_item(es, i), f);
    const bs_dumps_status *s = status_of(sts, nst, f);
    bs_dump_pg *p = slot(dump, gi[i], &cap);
    bs_dump_coll *c = &p->raw[p->nraw++];
    if (p->pg_id < 0)
      p->pg_id = bs_dval_int(f[BS_DK_PG_ID], -1);
    bs_dumps_entry_read(pool, rd, f, s, c, &oom);
    c->rid = i;
    dump->retires_at_issue |= s && !c->p2p &&
                              bs_dval_bool(f[BS_DK_RETIRED], false) &&
                              (int64_t)c->cseq > s->completed;
    if (dump->lost == 0 && pr->entries == 0) /* its first entry's */
      dump->lost = (uint64_t)bs_dval_int(f[BS_DK_RECORD_ID], 0);
    take_status(p, s);
    dump->timeout_ms = (int)bs_dval_int(f[BS_DK_TIMEOUT_MS], 0);
    pr->entries++;
  }
  for (size_t k = 0; k < dump->npg && !oom; k++) {
    bs_dump_pg *p = &dump->pg[k];
    /* Not zeroed: the fold writes each op it returns whole. */
    if (!(p->c = malloc((p->nraw ? p->nraw : 1) * sizeof *p->c)))
      BS_FAIL(BS_ERR_NOMEM, NULL, "%s: %zu entries", dump->file, p->nraw);
    p->n = bs_dumps_entry_fold(pool, p->raw, p->nraw, p->c, &oom);
  }
  if (oom)
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: out of memory", dump->file);
out:
  free(sts);
  free(gi);
  return st;
}

static void dump_free(bs_dump *dump) {
  for (size_t k = 0; k < dump->npg; k++) {
    free(dump->pg[k].c);
    free(dump->pg[k].raw);
  }
  free(dump->pg);
}

/* The keys a reader looks entries up by, interned in pool. */
bs_status bs_dumps_reader_init(bs_dumps_reader *rd, bs_strpool *pool) {
  static const char *const keys[] = {
#define BS_DUMPS_KEY(id, key) key,
#include "bs_dumps_keys.def"
#undef BS_DUMPS_KEY
  };
  for (int k = 0; k < BS_DK_COUNT; k++)
    if (!(rd->key[k] = bs_strpool_get(pool, keys[k])))
      return bs_err_fail(BS_ERR_NOMEM, NULL, "dumps: out of memory");
  return BS_OK;
}

/* The pool, the reader, the ranks seen. */
bs_status bs_dumps_start(bs_dumps *d) {
  if (d->pool)
    return BS_OK;
  if (!(d->pool = bs_strpool_create()) ||
      !(d->seen = calloc(BS_DUMPS_MAX_RANKS, sizeof *d->seen)) ||
      !(d->reader = calloc(1, sizeof *d->reader)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "dumps: out of memory");
  return bs_dumps_reader_init(d->reader, d->pool);
}

bs_status bs_dumps_doc(bs_dumps *d, bs_dval_doc **doc, bs_strpool **pool) {
  bs_status st = bs_dumps_start(d);
  *doc = st == BS_OK ? &d->reader->doc : NULL;
  *pool = d->pool;
  return st;
}

bs_status bs_dumps_prepare(bs_strpool *pool, bs_dumps_reader *rd,
                           const bs_dval *root, const char *name,
                           bs_dumps_prep *p) {
  bs_status st = BS_OK;
  const bs_dval *es = bs_dval_get(root, "entries");
  memset(p, 0, sizeof *p);
  p->dump.rank = rank_of(root, name);
  snprintf(p->dump.file, sizeof p->dump.file, "%s", name);
  if (!es || (es->kind != BS_DV_LIST && es->kind != BS_DV_TUPLE))
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: not a Flight Recorder dump (no entries)",
            name);
  if (p->dump.rank < 0 || p->dump.rank >= BS_DUMPS_MAX_RANKS)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "%s: no rank: neither a \"rank\" key nor a name ending in the "
            "rank (<prefix><rank>)",
            name);
  BS_CHECK(fill(pool, rd, root, es, p));
out:
  return st;
}

void bs_dumps_prep_free(bs_dumps_prep *p) {
  dump_free(&p->dump);
  free(p->name);
  free(p->desc);
  memset(p, 0, sizeof *p);
}

/* The dump's own groups made the folder's: pg[].group renumbered. */
static bs_status adopt_groups(bs_dumps *d, bs_dumps_prep *p) {
  for (size_t k = 0; k < p->dump.npg; k++) {
    int local = p->dump.pg[k].group;
    int g = bs_dumps_groups_of(d, p->name[local], p->desc[local]);
    if (g < 0)
      return bs_err_fail(BS_ERR_NOMEM, NULL, "dumps: out of memory");
    p->dump.pg[k].group = g;
  }
  return BS_OK;
}

/* The length of the job folder dump file path is in: its folder's, less
 * a last BS_DUMPS_JSON_DIR (Backstop's JSON copies beside its pickles):
 * "run/json/rank0.flight.json" and "run/rank_0" are both in "run". */
static size_t job_len(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 0;
  size_t jl = strlen(BS_DUMPS_JSON_DIR);
  if (n >= jl && !strncmp(path + n - jl, BS_DUMPS_JSON_DIR, jl) &&
      (n == jl || path[n - jl - 1] == '/'))
    return n > jl ? n - jl - 1 : 0;
  return n;
}

/* Two files of one job's dumps. */
static bool one_job(const char *a, const char *b) {
  size_t la = job_len(a);
  return la == job_len(b) && !strncmp(a, b, la);
}

/* A second dump of a rank read already: the same job's (its JSON copy),
 * or, in a tree of folders (d->walked), another job's: refused. */
static bs_status second_of(const bs_dumps *d, const bs_dumps_prep *p) {
  for (size_t i = 0; d->walked && i < d->n; i++)
    if (d->d[i].rank == p->dump.rank && !one_job(d->d[i].file, p->dump.file))
      return bs_err_fail(BS_ERR_INVALID, NULL,
                         "rank %d has two dumps, %s and %s: the folders hold "
                         "more than one job's (point at one job's folder)",
                         p->dump.rank, d->d[i].file, p->dump.file);
  return BS_OK;
}

bs_status bs_dumps_commit(bs_dumps *d, const bs_dval *root, bs_dumps_prep *p) {
  bs_status st = BS_OK;
  BS_CHECK(bs_dumps_start(d));
  if (d->seen[p->dump.rank]) {
    st = second_of(d, p); /* else the JSON copy beside a pickle, say */
    goto out;
  }
  BS_CHECK(bs_dumps_groups_config(d, root, &p->dump));
  lib_of(d, root, bs_dval_get(root, "entries"));
  BS_CHECK(adopt_groups(d, p));
  if (!bs_vec_grow(&d->d, NULL, d->n + 1, sizeof *d->d))
    BS_FAIL(BS_ERR_NOMEM, NULL, "dumps: %zu ranks", d->n + 1);
  d->d[d->n++] = p->dump;
  memset(&p->dump, 0, sizeof p->dump); /* the folder's now */
  d->seen[d->d[d->n - 1].rank] = true;
  d->entries += p->entries;
out:
  bs_dumps_prep_free(p);
  return st;
}

bs_status bs_dumps_add_doc(bs_dumps *d, const bs_dval *root, const char *name) {
  bs_status st = BS_OK;
  bs_dumps_prep p = {0};
  BS_CHECK(bs_dumps_start(d));
  BS_CHECK(bs_dumps_prepare(d->pool, d->reader, root, name, &p));
  st = bs_dumps_commit(d, root, &p);
out:
  bs_dumps_prep_free(&p);
  return st;
}

bs_status bs_dumps_add(bs_dumps *d, const bs_json *root, const char *name) {
  bs_status st = BS_OK;
  bs_dval_doc *doc;
  bs_strpool *pool;
  bs_dval *v = NULL;
  BS_CHECK(bs_dumps_doc(d, &doc, &pool));
  bs_dval_reset(doc);
  BS_CHECK(bs_dval_from_json(root, pool, doc, &v));
  st = bs_dumps_add_doc(d, v, name);
out:
  return st;
}

bs_status bs_dumps_add_unreadable(bs_dumps *d, const char *name,
                                  const char *why) {
  bs_status st = BS_OK;
  int rank = rank_of(NULL, name);
  if (rank < 0 || rank >= BS_DUMPS_MAX_RANKS)
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: %s", name, why);
  BS_CHECK(bs_dumps_start(d));
  if (d->seen[rank])
    goto out;
  if (!bs_vec_grow(&d->bad, NULL, d->nbad + 1, sizeof *d->bad))
    BS_FAIL(BS_ERR_NOMEM, NULL, "dumps: %zu ranks", d->nbad + 1);
  bs_dump_bad *b = &d->bad[d->nbad++];
  b->rank = rank;
  d->seen[rank] = true;
  snprintf(b->file, sizeof b->file, "%s", name);
  snprintf(b->why, sizeof b->why, "%s", why);
out:
  return st;
}

/* ---- the folder's dumps together ---- */

static int by_rank(const void *a, const void *b) {
  int x = ((const bs_dump *)a)->rank, y = ((const bs_dump *)b)->rank;
  return (x > y) - (x < y);
}

static int bad_by_rank(const void *a, const void *b) {
  int x = ((const bs_dump_bad *)a)->rank, y = ((const bs_dump_bad *)b)->rank;
  return (x > y) - (x < y);
}

static bool is_default(const bs_dump_group *g) {
  return !strcmp(g->desc, "default_pg") ||
         (!g->desc[0] && !strcmp(g->name, "0"));
}

/* The group single-group callers get: pg's, else the default one, else
 * the first. */
static bs_status pick(bs_dumps *d, const char *pg) {
  d->group = pg ? bs_dumps_group_find(d, pg) : -1;
  if (pg && d->group < 0)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "no process group '%s' in the dumps (%zu groups; "
                       "give a name or a desc of pg_config or the entries)",
                       pg, d->ngroups);
  for (size_t i = 0; !pg && d->group < 0 && i < d->ngroups; i++)
    if (is_default(&d->groups[i]))
      d->group = (int)i;
  d->group = d->group < 0 ? 0 : d->group;
  const bs_dump_group *g = &d->groups[d->group];
  d->world = g->n;
  d->members = g->ranks;
  snprintf(d->pg, sizeof d->pg, "%s", g->name);
  snprintf(d->pg_desc, sizeof d->pg_desc, "%s", g->desc);
  for (size_t i = 0; i < d->n; i++) {
    const bs_dump_pg *p = bs_dumps_pg_of(&d->d[i], d->group);
    d->d[i].c = p ? p->c : NULL;
    d->d[i].n = p ? p->n : 0;
  }
  return BS_OK;
}

/* "rank_0: pickle: truncated" of the first unreadable dump, for the error
 * when nothing read. */
static const char *first_bad(const bs_dumps *d, char *buf, size_t n) {
  if (!d->nbad)
    return "";
  snprintf(buf, n, "; %zu unreadable (%.60s: %.160s)", d->nbad, d->bad[0].file,
           d->bad[0].why);
  return buf;
}

/* A rank the default group's pg_config leaves out cannot be the job's. */
static bs_status check_members(const bs_dumps *d) {
  for (size_t g = 0; g < d->ngroups; g++) {
    const bs_dump_group *grp = &d->groups[g];
    if (!is_default(grp) || !grp->ranks_known)
      continue;
    for (size_t i = 0; i < d->n; i++)
      if (bs_dumps_group_rank(d, (int)g, d->d[i].rank) < 0)
        return bs_err_fail(BS_ERR_INVALID, NULL,
                           "%s: rank %d is not in process group %s (%s)",
                           d->d[i].file, d->d[i].rank, grp->name, grp->desc);
  }
  return BS_OK;
}

bs_status bs_dumps_finish(bs_dumps *d, const char *pg) {
  bs_status st = BS_OK;
  char why[320];
  if (d->n == 0 && d->nbad == 0)
    BS_FAIL(BS_ERR_INVALID, NULL, "no Flight Recorder dump");
  if (d->n) /* NULL when none: no qsort */
    qsort(d->d, d->n, sizeof *d->d, by_rank);
  if (d->nbad)
    qsort(d->bad, d->nbad, sizeof *d->bad, bad_by_rank);
  BS_CHECK(bs_dumps_groups_settle(d));
  if (d->entries == 0 || d->ngroups == 0)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "no collectives read: %zu dump%s of %d rank%s hold%s no entry%s",
            d->n, d->n == 1 ? "" : "s", d->ranks, d->ranks == 1 ? "" : "s",
            d->n == 1 ? "s" : "", first_bad(d, why, sizeof why));
  BS_CHECK(check_members(d));
  BS_CHECK(pick(d, pg));
out:
  return st;
}

void bs_dumps_free(bs_dumps *d) {
  for (size_t i = 0; i < d->n; i++)
    dump_free(&d->d[i]);
  free(d->d);
  free(d->bad);
  bs_dumps_groups_free(d);
  if (d->reader)
    bs_dval_doc_free(&d->reader->doc);
  free(d->reader);
  free(d->skipped);
  free(d->unread);
  free(d->seen);
  bs_strpool_destroy(d->pool);
  memset(d, 0, sizeof *d);
}

/* ---- look-ups ---- */

const bs_dump *bs_dumps_rank(const bs_dumps *d, int r) {
  bs_dump key = {.rank = r};
  return d->n ? bsearch(&key, d->d, d->n, sizeof *d->d, by_rank) : NULL;
}

const bs_dump_bad *bs_dumps_bad_rank(const bs_dumps *d, int r) {
  bs_dump_bad key = {.rank = r};
  return d->nbad ? bsearch(&key, d->bad, d->nbad, sizeof *d->bad, bad_by_rank)
                 : NULL;
}

int bs_dumps_group_find(const bs_dumps *d, const char *name) {
  for (size_t i = 0; i < d->ngroups; i++)
    if (!strcmp(d->groups[i].name, name))
      return (int)i;
  for (size_t i = 0; i < d->ngroups; i++)
    if (!strcmp(d->groups[i].desc, name))
      return (int)i;
  return -1;
}

int bs_dumps_group_rank(const bs_dumps *d, int g, int r) {
  const bs_dump_group *grp =
      g >= 0 && (size_t)g < d->ngroups ? &d->groups[g] : NULL;
  for (int i = 0; grp && i < grp->n; i++)
    if (grp->ranks[i] == r)
      return i;
  return -1;
}

static int pg_by_group(const void *a, const void *b) {
  int x = ((const bs_dump_pg *)a)->group, y = ((const bs_dump_pg *)b)->group;
  return (x > y) - (x < y);
}

const bs_dump_pg *bs_dumps_pg_of(const bs_dump *d, int g) {
  bs_dump_pg key = {.group = g};
  return d && d->npg ? bsearch(&key, d->pg, d->npg, sizeof *d->pg, pg_by_group)
                     : NULL;
}

const bs_dump_coll *bs_dumps_pg_find(const bs_dump_pg *p, uint64_t seq) {
  for (size_t i = 0; p && i < p->n; i++)
    if (p->c[i].seq == seq && !p->c[i].p2p)
      return &p->c[i];
  return NULL;
}

const bs_dump_coll *bs_dumps_pg_find_p2p(const bs_dump_pg *p, uint64_t seq,
                                         bs_dump_kind kind, int peer) {
  for (size_t i = 0; p && i < p->n; i++) {
    const bs_dump_coll *c = &p->c[i];
    if (c->p2p && c->seq == seq && c->kind == kind &&
        (peer < 0 || c->peer == peer))
      return c;
  }
  return NULL;
}

const bs_dump_coll *bs_dumps_find(const bs_dump *d, uint64_t seq) {
  for (size_t i = 0; d && i < d->n; i++)
    if (d->c[i].seq == seq && !d->c[i].p2p)
      return &d->c[i];
  return NULL;
}

uint64_t bs_dumps_coll_count(const bs_dump_coll *c) {
  return strstr(c->op, "reduce_scatter") ? c->out_numel : c->in_numel;
}

uint64_t bs_dumps_group_first_seq(const bs_dumps *d, int g) {
  uint64_t first = 0;
  for (size_t i = 0; i < d->n; i++) {
    const bs_dump_pg *p = bs_dumps_pg_of(&d->d[i], g);
    for (size_t k = 0; p && k < p->n; k++)
      if (!p->c[k].p2p) {
        first = p->c[k].seq > first ? p->c[k].seq : first;
        break;
      }
  }
  return first;
}

uint64_t bs_dumps_first_seq(const bs_dumps *d) {
  return bs_dumps_group_first_seq(d, d->group);
}
