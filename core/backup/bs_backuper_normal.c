/* The Normal backuper (docs/behavior.md §4): a full pinned host copy of its
 * source tensors per tag. Pinned memory is the scarce resource, so each
 * copy is allocated once per (tag, name), lazily, and reused every cycle. */
#include <stdlib.h>
#include <string.h>

#include "backup/bs_backuper.h"

typedef struct slot {
  void *host; /* pinned copy; NULL until the tag's first backup */
  bool valid; /* holds the bytes of the last complete backup (or copy) */
} slot;

typedef struct normal {
  bs_backuper base;
  const bs_tensor **src;
  size_t n;
  slot *slots;              /* [tag * n + i] */
  bool backed[BS_BT_COUNT]; /* a backup of the tag completed once */
} normal;

static normal *as_normal(bs_backuper *b) {
  return (normal *)b;
}

static slot *slot_of(const normal *nb, bs_backup_tag tag, size_t i) {
  return &nb->slots[(size_t)tag * nb->n + i];
}

static bs_dev *dev_of(const normal *nb) {
  return nb->base.src->dev;
}

/* Every source tensor of the tag holds a complete backup, else the error
 * names the first that does not. */
static bs_status require_backup(const normal *nb, bs_backup_tag tag,
                                const char *op) {
  bs_status st = BS_OK;
  if (!nb->backed[tag])
    BS_FAIL(BS_ERR_MISSING_BACKUP, nb->n ? nb->src[0]->spec->name : NULL,
            "%s('%s'): never backed up", op, bs_backup_tag_name(tag));
  for (size_t i = 0; i < nb->n; i++)
    if (!slot_of(nb, tag, i)->valid)
      BS_FAIL(BS_ERR_MISSING_BACKUP, nb->src[i]->spec->name,
              "%s('%s'): no backup of tensor %s", op, bs_backup_tag_name(tag),
              nb->src[i]->spec->name);
out:
  return st;
}

static void set_valid(normal *nb, bs_backup_tag tag, bool valid) {
  for (size_t i = 0; i < nb->n; i++)
    slot_of(nb, tag, i)->valid = valid;
}

static bs_status normal_backup(bs_backuper *b, bs_backup_tag tag) {
  bs_status st = BS_OK;
  normal *nb = as_normal(b);
  bs_dev *dev = dev_of(nb);
  /* Overwritten from here on: a failure midway leaves no valid backup. */
  set_valid(nb, tag, false);
  for (size_t i = 0; i < nb->n; i++) {
    slot *s = slot_of(nb, tag, i);
    const bs_tensor *t = nb->src[i];
    if (!s->host)
      BS_CHECK(bs_dev_pinned_alloc(dev, BS_PIN_BACKUPER, t->bytes, &s->host));
    BS_CHECK(bs_dev_copy(dev, s->host, t->ptr, t->bytes, BS_D2H));
  }
  BS_CHECK(bs_dev_sync(dev));
  set_valid(nb, tag, true);
  nb->backed[tag] = true;
out:
  return st;
}

static bs_status normal_restore(bs_backuper *b, bs_backup_tag tag) {
  bs_status st = BS_OK;
  normal *nb = as_normal(b);
  bs_dev *dev = dev_of(nb);
  BS_CHECK(require_backup(nb, tag, "restore"));
  for (size_t i = 0; i < nb->n; i++)
    BS_CHECK(bs_dev_copy(dev, nb->src[i]->ptr, slot_of(nb, tag, i)->host,
                         nb->src[i]->bytes, BS_H2D));
  BS_CHECK(bs_dev_sync(dev));
out:
  return st;
}

static bs_status normal_get(bs_backuper *b, bs_backup_tag tag,
                            bs_tensor_map *out) {
  bs_status st = BS_OK;
  normal *nb = as_normal(b);
  BS_CHECK(require_backup(nb, tag, "get"));
  BS_CHECK(bs_tensor_map_alloc(out, nb->n));
  for (size_t i = 0; i < nb->n; i++)
    out->e[i] = (bs_named){.name = nb->src[i]->spec->name,
                           .dtype = nb->src[i]->spec->dtype,
                           .bytes = nb->src[i]->bytes,
                           .ptr = slot_of(nb, tag, i)->host,
                           .on_host = true};
out:
  return st;
}

/* Host to host, for the names dst already holds (allocated by a backup of
 * dst); names dst never backed up are left alone. */
static bs_status normal_copy(bs_backuper *b, bs_backup_tag src,
                             bs_backup_tag dst) {
  bs_status st = BS_OK;
  normal *nb = as_normal(b);
  bs_dev *dev = dev_of(nb);
  if (src == dst)
    goto out;
  for (size_t i = 0; i < nb->n; i++) {
    slot *s = slot_of(nb, src, i), *d = slot_of(nb, dst, i);
    if (!d->host)
      continue;
    if (!s->valid)
      BS_FAIL(BS_ERR_MISSING_BACKUP, nb->src[i]->spec->name,
              "copy('%s' -> '%s'): no backup of tensor %s in '%s'",
              bs_backup_tag_name(src), bs_backup_tag_name(dst),
              nb->src[i]->spec->name, bs_backup_tag_name(src));
    d->valid = false;
    BS_CHECK(bs_dev_copy(dev, d->host, s->host, nb->src[i]->bytes, BS_H2H));
  }
  BS_CHECK(bs_dev_sync(dev));
  for (size_t i = 0; i < nb->n; i++)
    if (slot_of(nb, dst, i)->host)
      slot_of(nb, dst, i)->valid = true;
out:
  return st;
}

static bool normal_has_backup(const bs_backuper *b, bs_backup_tag tag) {
  const normal *nb = (const normal *)b;
  bool complete = nb->backed[tag];
  for (size_t i = 0; complete && i < nb->n; i++)
    complete = slot_of(nb, tag, i)->valid;
  return complete;
}

static size_t normal_backup_tags(const bs_backuper *b, const char **tags,
                                 size_t max) {
  size_t n = 0;
  for (int t = 0; t < BS_BT_COUNT; t++) {
    if (!normal_has_backup(b, (bs_backup_tag)t))
      continue;
    if (n < max)
      tags[n] = bs_backup_tag_name((bs_backup_tag)t);
    n++;
  }
  return n;
}

static void free_slot(normal *nb, size_t k) {
  slot *s = &nb->slots[k];
  if (s->host)
    bs_dev_pinned_free(dev_of(nb), BS_PIN_BACKUPER, s->host,
                       nb->src[k % nb->n]->bytes);
  *s = (slot){0};
}

/* The pinned copies go: the next backup of the tag allocates them again. */
static void normal_release(bs_backuper *b, bs_backup_tag tag) {
  normal *nb = as_normal(b);
  for (size_t i = 0; i < nb->n; i++)
    free_slot(nb, (size_t)tag * nb->n + i);
  nb->backed[tag] = false;
}

static void normal_destroy(bs_backuper *b) {
  normal *nb = as_normal(b);
  for (size_t k = 0; nb->slots && k < (size_t)BS_BT_COUNT * nb->n; k++)
    free_slot(nb, k);
  free(nb->slots);
  free(nb->src);
  free(nb);
}

static const bs_backuper_ops normal_ops = {
    .kind = "normal",
    .backup = normal_backup,
    .restore = normal_restore,
    .get = normal_get,
    .copy = normal_copy,
    .release = normal_release,
    .has_backup = normal_has_backup,
    .backup_tags = normal_backup_tags,
    .destroy = normal_destroy,
};

static bool owned_by(const bs_params *p, const bs_tensor *t) {
  return t >= p->t && t < p->t + p->n;
}

bs_status bs_backuper_normal_create_subset(bs_params *src,
                                           const bs_tensor *const *list,
                                           size_t n, bs_backuper **out) {
  bs_status st = BS_OK;
  normal *nb = NULL;
  if (!src || !out || (n && !list))
    BS_FAIL(BS_ERR_INVALID, NULL, "normal backuper: NULL argument");
  for (size_t i = 0; i < n; i++)
    if (!list[i] || !owned_by(src, list[i]))
      BS_FAIL(BS_ERR_INVALID, NULL,
              "normal backuper: source entry %zu is not a tensor of the "
              "params",
              i);
  if (!(nb = calloc(1, sizeof *nb)) ||
      !(nb->src = calloc(n ? n : 1, sizeof *nb->src)) ||
      !(nb->slots = calloc((size_t)BS_BT_COUNT * (n ? n : 1), sizeof(slot))))
    BS_FAIL(BS_ERR_NOMEM, NULL, "normal backuper: out of memory");
  if (n)
    memcpy(nb->src, list, n * sizeof *list);
  nb->n = n;
  nb->base = (bs_backuper){.ops = &normal_ops, .src = src};
  *out = &nb->base;
  nb = NULL;
out:
  if (nb)
    normal_destroy(&nb->base);
  return st;
}

bs_status bs_backuper_normal_create(bs_params *src, bs_backuper **out) {
  bs_status st = BS_OK;
  const bs_tensor **list = NULL;
  size_t n = bs_params_synced(src, NULL, 0);
  if (!src)
    BS_FAIL(BS_ERR_INVALID, NULL, "normal backuper: no source params");
  if (!(list = calloc(n ? n : 1, sizeof *list)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "normal backuper: out of memory");
  bs_params_synced(src, list, n);
  BS_CHECK(bs_backuper_normal_create_subset(src, list, n, out));
out:
  free(list);
  return st;
}
