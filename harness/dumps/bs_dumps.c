/* Reading a folder of Flight Recorder dumps into one process group's
 * per-rank collective sequences. PyTorch and Backstop write the same keys;
 * where they differ (Backstop's dumps name their rank, PyTorch's files
 * do), both are read. */
#include "dumps/bs_dumps.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bs_file.h"
#include "dumps/bs_pickle.h"
#include "dumps/bs_strpool.h"
#include "util/bs_buf.h"

static bs_status bad(const char *name, const char *what) {
  return bs_err_fail(BS_ERR_INVALID, NULL, "%s: %s", name, what);
}

/* ---- the process group ---- */

/* "[0, 1, 2]" (as PyTorch writes it) or a list of integers. */
static bs_status parse_members(const bs_json *v, const char *name, int **out,
                               int *n) {
  bs_status st = BS_OK;
  int *m = calloc(BS_DUMPS_MAX_RANKS, sizeof *m);
  int k = 0;
  if (!m)
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: process group members", name);
  if (v && v->type == BS_JARR) {
    for (size_t i = 0; i < v->n && k < BS_DUMPS_MAX_RANKS; i++)
      if (v->items[i].type == BS_JNUM && v->items[i].integral)
        m[k++] = (int)v->items[i].i;
  } else if (v && v->type == BS_JSTR) {
    const char *p = v->str + strspn(v->str, "[ ");
    char *end;
    while (*p && *p != ']' && k < BS_DUMPS_MAX_RANKS) {
      long r = strtol(p, &end, 10);
      if (end == p)
        BS_FAIL(BS_ERR_INVALID, NULL, "%s: pg_config ranks '%.60s'", name,
                v->str);
      m[k++] = (int)r;
      p = end + strspn(end, ", ");
    }
  }
  for (int i = 0; i < k; i++)
    if (m[i] < 0 || m[i] >= BS_DUMPS_MAX_RANKS || (i && m[i] <= m[i - 1]))
      BS_FAIL(BS_ERR_INVALID, NULL,
              "%s: pg_config ranks must rise within 0..%d", name,
              BS_DUMPS_MAX_RANKS - 1);
  if (k == 0)
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: a process group without ranks", name);
  *n = k;
  *out = m;
  m = NULL;
out:
  free(m);
  return st;
}

/* The group asked for (its key, name or description), else the default
 * group, else the first. */
static const bs_json *pick_group(const bs_json *cfg, const char *want,
                                 const char **key) {
  const bs_json *first = NULL;
  for (size_t i = 0; cfg && cfg->type == BS_JOBJ && i < cfg->n; i++) {
    const bs_json *g = &cfg->items[i];
    const char *name = bs_json_get_str(g, "name", cfg->keys[i]);
    const char *desc = bs_json_get_str(g, "desc", "");
    bool hit = want ? !strcmp(want, cfg->keys[i]) || !strcmp(want, name) ||
                          !strcmp(want, desc)
                    : !strcmp(desc, "default_pg");
    if (hit) {
      *key = cfg->keys[i];
      return g;
    }
    if (!want && !first) { /* no default_pg: the first group */
      *key = cfg->keys[i];
      first = g;
    }
  }
  return want ? NULL : first;
}

/* The first dump fixes the group; every later one must agree on it. */
static bs_status group(bs_dumps *d, const bs_json *root, const char *name,
                       const char *want) {
  bs_status st = BS_OK;
  const char *key = "0";
  const bs_json *g = pick_group(bs_json_get(root, "pg_config"), want, &key);
  int *m = NULL, n = 0;
  if (!g && want)
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: no process group '%s' in pg_config",
            name, want);
  const bs_json *ranks = g ? bs_json_get(g, "ranks") : NULL;
  /* Thousands of dumps repeat one long list: parsed once. */
  if (ranks && ranks->type == BS_JSTR && d->members_text &&
      strcmp(ranks->str, d->members_text) == 0 &&
      strcmp(d->pg, bs_json_get_str(g, "name", key)) == 0)
    goto out;
  if (g) {
    BS_CHECK(parse_members(ranks, name, &m, &n));
  } else { /* a dump without pg_config: every rank of comm_size */
    int64_t cs = bs_json_get_int(root, "comm_size", 0);
    if (cs < 1 || cs > BS_DUMPS_MAX_RANKS)
      BS_FAIL(BS_ERR_INVALID, NULL, "%s: neither pg_config nor comm_size",
              name);
    if (!(m = calloc((size_t)cs, sizeof *m)))
      BS_FAIL(BS_ERR_NOMEM, NULL, "%s: %lld ranks", name, (long long)cs);
    for (n = 0; n < cs; n++)
      m[n] = n;
  }
  const char *pg = g ? bs_json_get_str(g, "name", key) : "0";
  const char *desc = g ? bs_json_get_str(g, "desc", "") : "default_pg";
  if (!d->members) {
    snprintf(d->pg, sizeof d->pg, "%s", pg);
    snprintf(d->pg_desc, sizeof d->pg_desc, "%s", desc);
    d->members = m;
    d->world = n;
    m = NULL;
    if (ranks && ranks->type == BS_JSTR &&
        !(d->members_text = strdup(ranks->str)))
      BS_FAIL(BS_ERR_NOMEM, NULL, "%s: out of memory", name);
  } else if (strcmp(d->pg, pg) != 0 || d->world != n ||
             memcmp(d->members, m, (size_t)n * sizeof *m) != 0) {
    BS_FAIL(BS_ERR_INVALID, NULL,
            "%s: process group %s (%s) has other ranks than in the dumps "
            "read before",
            name, pg, desc);
  }
out:
  free(m);
  return st;
}

/* ---- one collective ---- */

/* "[[56974]]", the element count and the tensors of a sizes list. */
static void sizes(const bs_json *v, bs_buf *b, uint64_t *numel, int *ntens) {
  *numel = 0;
  *ntens = 0;
  bs_buf_printf(b, "[");
  for (size_t i = 0; v && v->type == BS_JARR && i < v->n; i++) {
    const bs_json *t = &v->items[i];
    uint64_t p = 1;
    bs_buf_printf(b, "%s[", i ? ", " : "");
    for (size_t j = 0; t->type == BS_JARR && j < t->n; j++) {
      int64_t x = t->items[j].integral ? t->items[j].i : 0;
      bs_buf_printf(b, "%s%lld", j ? ", " : "", (long long)x);
      p *= x > 0 ? (uint64_t)x : 0;
    }
    bs_buf_printf(b, "]");
    *numel += p;
    (*ntens)++;
  }
  bs_buf_printf(b, "]");
}

static void dtypes(const bs_json *v, bs_buf *b) {
  for (size_t i = 0; v && v->type == BS_JARR && i < v->n; i++)
    if (v->items[i].type == BS_JSTR)
      bs_buf_printf(b, "%s%s", b->len ? ", " : "", v->items[i].str);
}

static void frame(const bs_json *e, bs_buf *b) {
  const bs_json *f = bs_json_get(e, "frames");
  if (!f || f->type != BS_JARR || f->n == 0)
    return;
  const bs_json *top = &f->items[0];
  bs_buf_printf(b, "%s at %s:%lld", bs_json_get_str(top, "name", "?"),
                bs_json_get_str(top, "filename", "?"),
                (long long)bs_json_get_int(top, "line", 0));
}

static bs_dump_state state_of(const char *s) {
  if (!strcmp(s, "completed"))
    return BS_DUMP_COMPLETED;
  return !strcmp(s, "started") ? BS_DUMP_STARTED : BS_DUMP_SCHEDULED;
}

/* Interns the buffer's text (and empties it). */
static const char *keep(bs_dumps *d, bs_buf *b, bool *oom) {
  const char *s = bs_strpool_get(d->pool, bs_buf_str(b));
  *oom = *oom || !s || b->oom;
  b->len = 0;
  if (b->s)
    b->s[0] = '\0';
  return s ? s : "";
}

static void entry(bs_dumps *d, const bs_json *e, bs_dump_coll *c, bool *oom) {
  bs_buf b = {0};
  const char *name = bs_json_get_str(e, "profiling_name", "?");
  c->p2p = bs_json_get_bool(e, "is_p2p", false);
  c->seq = (uint64_t)bs_json_get_int(
      e, c->p2p ? "p2p_seq_id" : "collective_seq_id", 0);
  bs_buf_printf(&b, "%s", bs_dumps_op_name(name));
  c->op = keep(d, &b, oom);
  sizes(bs_json_get(e, "input_sizes"), &b, &c->in_numel, &c->in_tensors);
  c->in = keep(d, &b, oom);
  sizes(bs_json_get(e, "output_sizes"), &b, &c->out_numel, &c->out_tensors);
  c->out = keep(d, &b, oom);
  dtypes(bs_json_get(e, "input_dtypes"), &b);
  c->in_dt = keep(d, &b, oom);
  dtypes(bs_json_get(e, "output_dtypes"), &b);
  c->out_dt = keep(d, &b, oom);
  bs_buf_printf(&b, "%s", bs_json_get_str(e, "label", ""));
  c->label = keep(d, &b, oom);
  frame(e, &b);
  c->frame = keep(d, &b, oom);
  c->state = state_of(bs_json_get_str(e, "state", "scheduled"));
  bs_buf_free(&b);
}

/* Whether entry e belongs to the group kept (a dump without groups: yes). */
static bool in_group(const bs_dumps *d, const bs_json *e) {
  const bs_json *pg = bs_json_get(e, "process_group");
  if (!pg || pg->type != BS_JARR || pg->n == 0 || pg->items[0].type != BS_JSTR)
    return true;
  return strcmp(pg->items[0].str, d->pg) == 0;
}

/* ---- one dump ---- */

/* Backstop's dumps say their rank; PyTorch's files end in it. */
static int rank_of(const bs_json *root, const char *name) {
  if (bs_json_get(root, "rank"))
    return (int)bs_json_get_int(root, "rank", -1);
  size_t stem = strcspn(name, ".");
  size_t k = stem;
  while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9')
    k--;
  if (k == stem || stem - k > 4)
    return -1;
  return atoi(name + k);
}

static void lib_of(bs_dumps *d, const bs_json *root, const bs_json *es) {
  const char *lib = bs_json_get_str(root, "comm_lib_version", NULL);
  const char *v = bs_json_get_str(root, "version", "?");
  if (!d->version[0])
    snprintf(d->version, sizeof d->version, "%s", v);
  if (d->lib[0])
    return;
  if (lib) {
    snprintf(d->lib, sizeof d->lib, "%s", lib);
  } else if (es && es->n) {
    const char *name = bs_json_get_str(&es->items[0], "profiling_name", "");
    snprintf(d->lib, sizeof d->lib, "%.*s", (int)strcspn(name, ":"), name);
  }
}

static bs_status fill_dump(bs_dumps *d, const bs_json *es, bs_dump *dump) {
  bool oom = false;
  size_t n = 0;
  for (size_t i = 0; i < es->n; i++)
    n += es->items[i].type == BS_JOBJ && in_group(d, &es->items[i]);
  if (n && !(dump->c = calloc(n, sizeof *dump->c)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "%s: %zu collectives", dump->file,
                       n);
  for (size_t i = 0; i < es->n; i++) {
    const bs_json *e = &es->items[i];
    if (e->type != BS_JOBJ || !in_group(d, e))
      continue;
    entry(d, e, &dump->c[dump->n++], &oom);
    dump->timeout_ms = (int)bs_json_get_int(e, "timeout_ms", 0);
  }
  return oom ? bs_err_fail(BS_ERR_NOMEM, NULL, "%s: out of memory", dump->file)
             : BS_OK;
}

bs_status bs_dumps_add(bs_dumps *d, const bs_json *root, const char *name,
                       const char *pg) {
  bs_status st = BS_OK;
  const bs_json *es = bs_json_get(root, "entries");
  int rank = rank_of(root, name);
  if (!es || es->type != BS_JARR)
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: not a Flight Recorder dump (no entries)",
            name);
  if (rank < 0 || rank >= BS_DUMPS_MAX_RANKS)
    BS_CHECK(bad(name, "no rank: neither a \"rank\" key nor a name ending "
                       "in the rank (<prefix><rank>)"));
  if (!d->pool && (!(d->pool = bs_strpool_create()) ||
                   !(d->seen = calloc(BS_DUMPS_MAX_RANKS, sizeof *d->seen))))
    BS_FAIL(BS_ERR_NOMEM, NULL, "dumps: out of memory");
  if (d->seen[rank])
    goto out; /* the JSON copy beside a pickle, say */
  BS_CHECK(group(d, root, name, pg));
  lib_of(d, root, es);
  bs_dump *grown = realloc(d->d, (d->n + 1) * sizeof *grown);
  if (!grown)
    BS_FAIL(BS_ERR_NOMEM, NULL, "dumps: %zu ranks", d->n + 1);
  d->d = grown;
  bs_dump *dump = &d->d[d->n++];
  memset(dump, 0, sizeof *dump);
  dump->rank = rank;
  d->seen[rank] = true;
  snprintf(dump->file, sizeof dump->file, "%s", name);
  BS_CHECK(fill_dump(d, es, dump));
out:
  return st;
}

static int by_rank(const void *a, const void *b) {
  int x = ((const bs_dump *)a)->rank, y = ((const bs_dump *)b)->rank;
  return (x > y) - (x < y);
}

const bs_dump *bs_dumps_rank(const bs_dumps *d, int r) {
  bs_dump key = {.rank = r};
  return d->n ? bsearch(&key, d->d, d->n, sizeof *d->d, by_rank) : NULL;
}

static bool member(const bs_dumps *d, int rank) {
  for (int i = 0; i < d->world; i++)
    if (d->members[i] == rank)
      return true;
  return false;
}

bs_status bs_dumps_finish(bs_dumps *d) {
  if (d->n == 0)
    return bs_err_fail(BS_ERR_INVALID, NULL, "no Flight Recorder dump");
  qsort(d->d, d->n, sizeof *d->d, by_rank);
  for (size_t i = 0; i < d->n; i++)
    if (!member(d, d->d[i].rank))
      return bs_err_fail(BS_ERR_INVALID, NULL,
                         "%s: rank %d is not in process group %s (%s)",
                         d->d[i].file, d->d[i].rank, d->pg, d->pg_desc);
  return BS_OK;
}

void bs_dumps_free(bs_dumps *d) {
  for (size_t i = 0; i < d->n; i++)
    free(d->d[i].c);
  free(d->d);
  free(d->members);
  free(d->members_text);
  free(d->seen);
  bs_strpool_destroy(d->pool);
  memset(d, 0, sizeof *d);
}

uint64_t bs_dumps_coll_count(const bs_dump_coll *c) {
  return strstr(c->op, "reduce_scatter") ? c->out_numel : c->in_numel;
}

const bs_dump_coll *bs_dumps_find(const bs_dump *d, uint64_t seq) {
  for (size_t i = 0; d && i < d->n; i++)
    if (d->c[i].seq == seq && !d->c[i].p2p)
      return &d->c[i];
  return NULL;
}

uint64_t bs_dumps_first_seq(const bs_dumps *d) {
  uint64_t first = 0;
  for (size_t i = 0; i < d->n; i++)
    if (d->d[i].n && d->d[i].c[0].seq > first)
      first = d->d[i].c[0].seq;
  return first;
}

/* ---- the folder ---- */

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir, sorted (the read order must not depend on the file
 * system's). */
static bs_status list(const char *dir, char ***names, size_t *n) {
  bs_status st = BS_OK;
  DIR *dh = opendir(dir);
  struct dirent *de;
  *names = NULL;
  *n = 0;
  if (!dh)
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: cannot open the folder", dir);
  while ((de = readdir(dh))) {
    if (de->d_name[0] == '.')
      continue;
    char **grown = realloc(*names, (*n + 1) * sizeof *grown);
    if (!grown || !(grown[*n] = strdup(de->d_name))) {
      *names = grown ? grown : *names;
      BS_FAIL(BS_ERR_NOMEM, NULL, "%s: out of memory", dir);
    }
    *names = grown;
    (*n)++;
  }
  qsort(*names, *n, sizeof **names, by_name);
out:
  if (dh)
    closedir(dh);
  return st;
}

typedef enum file_kind { F_OTHER = 0, F_PICKLE, F_JSON } file_kind;

/* What a file looks like from its first byte (without reading it all). */
static file_kind kind_of(const char *path) {
  unsigned char c[64];
  struct stat sb;
  FILE *f =
      stat(path, &sb) == 0 && S_ISREG(sb.st_mode) ? fopen(path, "rb") : NULL;
  size_t n = f ? fread(c, 1, sizeof c, f) : 0;
  if (f)
    fclose(f);
  size_t i = 0;
  while (i < n && strchr(" \t\r\n", c[i]))
    i++;
  if (n && c[0] == 0x80)
    return F_PICKLE;
  return i < n && c[i] == '{' ? F_JSON : F_OTHER;
}

/* A pickle or a JSON file; *got: it is a dump. */
static bs_status parse_file(const char *path, const char *name, file_kind k,
                            bs_json *root, bool *got) {
  bs_status st = BS_OK;
  char *data = NULL;
  size_t n = 0;
  *got = false;
  BS_CHECK(bs_file_read(path, &data, &n));
  st = k == F_PICKLE ? bs_pickle_read(data, n, root)
                     : bs_json_parse(data, n, root);
  if (st != BS_OK) {
    char why[sizeof bs_err()->message];
    snprintf(why, sizeof why, "%s", bs_err()->message);
    bs_err_clear();
    BS_FAIL(st, NULL, "%s: %s", name, why);
  }
  *got = k == F_PICKLE || bs_json_get(root, "entries");
out:
  free(data);
  return st;
}

/* JSON first: Backstop's JSON copy holds what its pickle beside it leaves
 * out (bs_dumps_pickle); a pickle then adds only the ranks without one. */
static bs_status read_all(const char *dir, char **names, size_t n,
                          const char *pg, bs_dumps *d) {
  bs_status st = BS_OK;
  file_kind *kind = calloc(n ? n : 1, sizeof *kind);
  char path[4096];
  if (!kind)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "%s: %zu files", dir, n);
  for (size_t i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    kind[i] = kind_of(path);
  }
  static const file_kind passes[] = {F_JSON, F_PICKLE};
  for (int k = 0; k < 2 && st == BS_OK; k++)
    for (size_t i = 0; i < n && st == BS_OK; i++) {
      file_kind pass = passes[k];
      bs_json root = {0};
      bool got = false;
      if (kind[i] != pass)
        continue;
      snprintf(path, sizeof path, "%s/%s", dir, names[i]);
      st = parse_file(path, names[i], kind[i], &root, &got);
      if (st == BS_OK && got)
        st = bs_dumps_add(d, &root, names[i], pg);
      d->pickle = d->pickle || (got && pass == F_PICKLE);
      bs_json_free(&root);
    }
  free(kind);
  return st;
}

const char *bs_dumps_op_name(const char *profiling_name) {
  const char *colon = strrchr(profiling_name, ':');
  return colon ? colon + 1 : profiling_name;
}

bool bs_dumps_dtype(const char *torch, bs_dtype *out) {
  static const struct {
    const char *name;
    bs_dtype dt;
  } map[] = {{"BFloat16", BS_BF16}, {"Float", BS_F32}, {"Int", BS_I32},
             {"Long", BS_I64},      {"Byte", BS_U8},   {"UInt8", BS_U8}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(torch, map[i].name) == 0) {
      *out = map[i].dt;
      return true;
    }
  return false;
}

bs_status bs_dumps_load(const char *dir, const char *pg, bs_dumps *out) {
  bs_status st = BS_OK;
  char **names = NULL;
  size_t n = 0;
  memset(out, 0, sizeof *out);
  BS_CHECK(list(dir, &names, &n));
  BS_CHECK(read_all(dir, names, n, pg, out));
  if (out->n == 0)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "%s: no Flight Recorder dump (PyTorch's <prefix><rank> pickles, "
            "their JSON, or Backstop's rank<R>.flight.json)",
            dir);
  BS_CHECK(bs_dumps_finish(out));
out:
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
  if (st != BS_OK)
    bs_dumps_free(out);
  return st;
}
