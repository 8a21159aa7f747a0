/* A folder of dumps read into the model: every regular file is looked at
 * (in name order, so the read does not depend on the file system's); a
 * pickle or a JSON object with entries is a dump; a file that does not
 * read but is one (a pickle, or JSON that names Flight Recorder keys) is
 * its rank's unreadable dump; anything else (a train.log of JSON lines, a
 * script, a report) is skipped and listed. Backstop's own JSON copies of
 * its pickles are read from their sub-folder (BS_DUMPS_JSON_DIR). A folder
 * with no dump of its own is read with its sub-folders, as torchfrtrace
 * walks them (a multi-node job's dumps gathered a folder per node). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bs_buf.h"
#include "bs_dumps.h"
#include "bs_dumps_many.h"
#include "bs_dval.h"
#include "bs_file.h"
#include "bs_vec.h"

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* How deep a walk of sub-folders goes (a folder per node, per job). */
#define WALK_DEPTH 8

static bs_status add_name(const char *dir, const char *name, char ***names,
                          size_t *n) {
  if (!bs_vec_grow(names, NULL, *n + 1, sizeof **names) ||
      !((*names)[*n] = strdup(name)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "%s: out of memory", dir);
  (*n)++;
  return BS_OK;
}

/* Appends the regular files of dir/sub (sub "": dir itself), named
 * "sub/<file>", and (depth > 0) those of its sub-folders down to depth
 * more levels (not through links: a link back up would never end); a
 * sub-folder that is not there has none. */
static bs_status list_in(const char *dir, const char *sub, int depth,
                         char ***names, size_t *n) {
  bs_status st = BS_OK;
  char at[4096], path[8192], name[4096];
  struct stat sb;
  struct dirent *de;
  DIR *dh = NULL;
  int k = snprintf(at, sizeof at, "%s%s%s", dir, sub[0] ? "/" : "", sub);
  if (k < 0 || (size_t)k >= sizeof at) /* past PATH_MAX: cannot be opened */
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: a path below it is too long", dir);
  dh = opendir(at);
  if (!dh && sub[0])
    return BS_OK;
  if (!dh)
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: cannot open the folder: %s", dir,
            strerror(errno));
  while ((de = readdir(dh))) {
    int lp = snprintf(path, sizeof path, "%s/%s", at, de->d_name);
    int ln = snprintf(name, sizeof name, "%s%s%s", sub, sub[0] ? "/" : "",
                      de->d_name);
    if (lp < 0 || (size_t)lp >= sizeof path || ln < 0 ||
        (size_t)ln >= sizeof name)
      BS_FAIL(BS_ERR_INVALID, NULL, "%s: a path below it is too long", dir);
    if (de->d_name[0] == '.' || lstat(path, &sb) != 0)
      continue;
    if (S_ISDIR(sb.st_mode) && depth > 0)
      BS_CHECK(list_in(dir, name, depth - 1, names, n));
    else if (S_ISREG(sb.st_mode) ||
             (S_ISLNK(sb.st_mode) && stat(path, &sb) == 0 &&
              S_ISREG(sb.st_mode)))
      BS_CHECK(add_name(dir, name, names, n));
  }
out:
  if (dh)
    closedir(dh);
  return st;
}

static void names_free(char **names, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
}

typedef enum file_kind { F_OTHER = 0, F_PICKLE, F_JSON } file_kind;

/* What a file looks like from its first bytes (read without the rest: a
 * checkpoint beside the dumps is not read to be skipped). */
static file_kind kind_of(const char *path) {
  char data[64];
  FILE *f = fopen(path, "rb");
  size_t n = f ? fread(data, 1, sizeof data, f) : 0, i = 0;
  if (f)
    fclose(f);
  while (i < n && strchr(" \t\r\n", data[i]))
    i++;
  if (n && (unsigned char)data[0] == 0x80)
    return F_PICKLE;
  return i < n && data[i] == '{' ? F_JSON : F_OTHER;
}

/* JSON that did not parse is a torn dump when it names the keys only a
 * Flight Recorder dump has. */
static bool dump_keys(const char *data, size_t n) {
  static const char *const keys[] = {"\"profiling_name\"", "\"pg_config\"",
                                     "\"collective_seq_id\""};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    size_t len = strlen(keys[k]);
    for (size_t i = 0; i + len <= n && i < 65536; i++)
      if (data[i] == '"' && !memcmp(data + i, keys[k], len))
        return true;
  }
  return false;
}

/* A file of the folder that is a dump by its first bytes: a pickle, or
 * JSON naming Flight Recorder keys early on (not a log of JSON lines). */
static bool looks_like_dump(const char *dir, const char *name) {
  char path[8192], head[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  file_kind k = kind_of(path);
  if (k != F_JSON)
    return k == F_PICKLE;
  FILE *f = fopen(path, "rb");
  size_t got = f ? fread(head, 1, sizeof head, f) : 0;
  if (f)
    fclose(f);
  return dump_keys(head, got);
}

/* The sub-folders of dir (not Backstop's JSON copies') holding a file
 * that looks like a dump, ", "-separated, into *out (NULL: none): a
 * folder with dumps of its own is read without them, and says so. */
static bs_status unread_folders(const char *dir, char **out) {
  bs_status st = BS_OK;
  char **names = NULL;
  const char *last = "";
  size_t n = 0, last_at = 0, len = strlen(BS_DUMPS_JSON_DIR);
  bs_buf b = {0};
  BS_CHECK(list_in(dir, "", WALK_DEPTH, &names, &n));
  if (n) /* NULL when none: no qsort; sorted, a folder's files together */
    qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    const char *slash = strrchr(names[i], '/');
    size_t at = slash ? (size_t)(slash - names[i]) : 0;
    if (!slash || (at == len && !strncmp(names[i], BS_DUMPS_JSON_DIR, len)) ||
        (at == last_at && !strncmp(names[i], last, at)) ||
        !looks_like_dump(dir, names[i]))
      continue;
    bs_buf_printf(&b, "%s%.*s", b.len ? ", " : "", (int)at, names[i]);
    last = names[i];
    last_at = at;
  }
  if (b.len && !(*out = strdup(bs_buf_str(&b))))
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: out of memory", dir);
out:
  names_free(names, n);
  bs_buf_free(&b);
  return st;
}

/* The regular files in dir and in its sub-folder of Backstop's JSON
 * copies (BS_DUMPS_JSON_DIR), or, none of them a dump, those of the whole
 * tree below dir (*walked), sorted. */
static bs_status list(const char *dir, char ***names, size_t *n, bool *walked,
                      char **unread) {
  bs_status st = BS_OK;
  bool any = false;
  *names = NULL;
  *n = 0;
  BS_CHECK(list_in(dir, "", 0, names, n));
  BS_CHECK(list_in(dir, BS_DUMPS_JSON_DIR, 0, names, n));
  for (size_t i = 0; i < *n && !any; i++)
    any = looks_like_dump(dir, (*names)[i]);
  *walked = !any;
  if (any)
    BS_CHECK(unread_folders(dir, unread));
  if (!any) {
    names_free(*names, *n);
    *names = NULL;
    *n = 0;
    BS_CHECK(list_in(dir, "", WALK_DEPTH, names, n));
  }
  if (*n) /* NULL when none: no qsort */
    qsort(*names, *n, sizeof **names, by_name);
out:
  return st;
}

typedef struct folder {
  const char *dir;
  bs_dumps *d;
  bs_buf skipped;
  char **bad, **why; /* unreadable, added once every good dump is in */
  size_t nbad;
} folder;

static void skip(folder *f, const char *name) {
  bs_buf_printf(&f->skipped, "%s%s", f->skipped.len ? ", " : "", name);
  f->d->nskipped++;
}

static bs_status note_bad(folder *f, const char *name, const char *why) {
  if (!bs_vec_grow(&f->bad, NULL, f->nbad + 1, sizeof *f->bad) ||
      !bs_vec_grow(&f->why, NULL, f->nbad + 1, sizeof *f->why) ||
      !(f->bad[f->nbad] = strdup(name)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "%s: out of memory", f->dir);
  if (!(f->why[f->nbad] = strdup(why))) {
    free(f->bad[f->nbad]);
    return bs_err_fail(BS_ERR_NOMEM, NULL, "%s: out of memory", f->dir);
  }
  f->nbad++;
  return BS_OK;
}

/* The files to read, in turn: JSON first (Backstop's JSON copy holds what
 * its pickle beside it leaves out: bs_dumps_pickle; a pickle then adds
 * only the ranks without one), each kind in name order. */
typedef struct files {
  folder *f;
  char **names;
  size_t *order, n;
  file_kind *kind;
} files;

static bs_status get(void *ctx, bs_dumps_many_item *it) {
  files *fs = ctx;
  char path[4096];
  size_t k = fs->order[it->i];
  it->name = fs->names[k];
  it->pickle = fs->kind[k] == F_PICKLE;
  snprintf(path, sizeof path, "%s/%s", fs->f->dir, it->name);
  bs_status st = bs_file_read(path, &it->owned, &it->len);
  it->data = it->owned;
  return st;
}

/* One file, in turn: a dump added, a torn one noted, anything else
 * skipped. */
static bs_status take(void *ctx, bs_dumps *d, bs_dumps_many_item *it) {
  bs_status st = BS_OK;
  folder *f = ((files *)ctx)->f;
  if (it->parsed == BS_ERR_NOMEM)
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: out of memory", it->name);
  if (it->parsed != BS_OK) {
    if (it->pickle || dump_keys(it->data, it->len))
      BS_CHECK(note_bad(f, it->name, it->err.message));
    else
      skip(f, it->name);
    goto out;
  }
  const bs_dval *es = it->root ? bs_dval_get(it->root, "entries") : NULL;
  if (!es || (es->kind != BS_DV_LIST && es->kind != BS_DV_TUPLE)) {
    skip(f, it->name);
    goto out;
  }
  BS_CHECK(bs_dumps_many_add(d, it));
  d->pickle = d->pickle || it->pickle;
out:
  return st;
}

static bs_status read_all(folder *f, char **names, size_t n) {
  static const file_kind passes[] = {F_JSON, F_PICKLE};
  bs_status st = BS_OK;
  char path[4096];
  files fs = {.f = f, .names = names};
  fs.kind = calloc(n ? n : 1, sizeof *fs.kind);
  fs.order = calloc(n ? n : 1, sizeof *fs.order);
  if (!fs.kind || !fs.order)
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: %zu files", f->dir, n);
  for (size_t i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s", f->dir, names[i]);
    if ((fs.kind[i] = kind_of(path)) == F_OTHER)
      skip(f, names[i]);
  }
  for (int p = 0; p < 2; p++)
    for (size_t i = 0; i < n; i++)
      if (fs.kind[i] == passes[p])
        fs.order[fs.n++] = i;
  bs_dumps_many m = {.n = fs.n, .ctx = &fs, .get = get, .take = take};
  BS_CHECK(bs_dumps_many_read(f->d, &m));
  for (size_t i = 0; i < f->nbad && st == BS_OK; i++)
    if ((st = bs_dumps_add_unreadable(f->d, f->bad[i], f->why[i])) ==
        BS_ERR_INVALID) { /* no rank in its name: not a dump after all */
      bs_err_clear();
      skip(f, f->bad[i]);
      st = BS_OK;
    }
out:
  free(fs.kind);
  free(fs.order);
  return st;
}

static void folder_free(folder *f) {
  for (size_t i = 0; i < f->nbad; i++) {
    free(f->bad[i]);
    free(f->why[i]);
  }
  free(f->bad);
  free(f->why);
  bs_buf_free(&f->skipped);
}

/* A refusal of the folder's dumps, named with the folder. */
static bs_status in_folder(const char *dir, bs_status st) {
  char why[sizeof bs_err()->message];
  if (st == BS_OK || st == BS_ERR_NOMEM)
    return st;
  snprintf(why, sizeof why, "%s", bs_err()->message);
  bs_err_clear();
  return bs_err_fail(st, NULL, "%s: %s", dir, why);
}

bs_status bs_dumps_load(const char *dir, const char *pg, bs_dumps *out) {
  bs_status st = BS_OK;
  char **names = NULL;
  size_t n = 0;
  folder f = {.dir = dir, .d = out};
  memset(out, 0, sizeof *out);
  BS_CHECK(list(dir, &names, &n, &out->walked, &out->unread));
  BS_CHECK(in_folder(dir, read_all(&f, names, n)));
  if (f.skipped.len && !(out->skipped = strdup(bs_buf_str(&f.skipped))))
    BS_FAIL(BS_ERR_NOMEM, NULL, "%s: out of memory", dir);
  if (out->n == 0 && out->nbad == 0)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "%s: no Flight Recorder dump (PyTorch's <prefix><rank> pickles, "
            "their JSON, or Backstop's rank<R>.flight.json)%s%s",
            dir, f.skipped.len ? "; skipped: " : "", bs_buf_str(&f.skipped));
  st = in_folder(dir, bs_dumps_finish(out, pg));
out:
  names_free(names, n);
  folder_free(&f);
  if (st != BS_OK)
    bs_dumps_free(out);
  return st;
}
