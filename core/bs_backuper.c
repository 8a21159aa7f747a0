/* The backuper front: model tags, tag validation and the dispatch wrappers
 * every caller goes through (bs_backuper.h). */
#include "bs_backuper.h"

#include <stdlib.h>
#include <string.h>

static const char *const tag_names[BS_BT_COUNT] = {
    [BS_BT_ACTOR] = "actor",
    [BS_BT_REF] = "ref",
    [BS_BT_TEACHER] = "teacher",
    [BS_BT_OLD_ACTOR] = "old_actor",
    [BS_BT_ROLLOUT_ACTOR] = "rollout_actor",
};

const char *bs_backup_tag_name(bs_backup_tag t) {
  return (unsigned)t < BS_BT_COUNT ? tag_names[t] : "unknown";
}

int bs_backup_tag_parse(const char *tag) {
  for (int i = 0; tag && i < BS_BT_COUNT; i++)
    if (strcmp(tag, tag_names[i]) == 0)
      return i;
  return -1;
}

bs_status bs_backup_tag_check(const char *tag, bs_backup_tag *out) {
  bs_status st = BS_OK;
  int t = bs_backup_tag_parse(tag);
  if (t < 0)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "unknown model tag '%.48s' (expected actor, ref, teacher, "
            "old_actor or rollout_actor)",
            tag ? tag : "(null)");
  *out = (bs_backup_tag)t;
out:
  return st;
}

bs_status bs_tensor_map_alloc(bs_tensor_map *m, size_t n) {
  bs_status st = BS_OK;
  m->n = 0;
  if (!(m->e = calloc(n ? n : 1, sizeof *m->e)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "tensor map: out of memory");
  m->n = n;
out:
  return st;
}

void bs_tensor_map_free(bs_tensor_map *m) {
  if (!m)
    return;
  free(m->e);
  m->e = NULL;
  m->n = 0;
}

const bs_named *bs_tensor_map_find(const bs_tensor_map *m, const char *name) {
  for (size_t i = 0; m && name && i < m->n; i++)
    if (strcmp(m->e[i].name, name) == 0)
      return &m->e[i];
  return NULL;
}

static bs_status check(const bs_backuper *b, const char *tag,
                       bs_backup_tag *t) {
  bs_status st = BS_OK;
  if (!b || !b->ops)
    BS_FAIL(BS_ERR_INVALID, NULL, "backuper: none");
  BS_CHECK(bs_backup_tag_check(tag, t));
out:
  return st;
}

bs_status bs_backuper_backup(bs_backuper *b, const char *tag) {
  bs_status st = BS_OK;
  bs_backup_tag t = BS_BT_ACTOR;
  BS_CHECK(check(b, tag, &t));
  BS_CHECK(b->ops->backup(b, t));
out:
  return st;
}

bs_status bs_backuper_restore(bs_backuper *b, const char *tag) {
  bs_status st = BS_OK;
  bs_backup_tag t = BS_BT_ACTOR;
  BS_CHECK(check(b, tag, &t));
  BS_CHECK(b->ops->restore(b, t));
out:
  return st;
}

bs_status bs_backuper_get(bs_backuper *b, const char *tag, bs_tensor_map *out) {
  bs_status st = BS_OK;
  bs_backup_tag t = BS_BT_ACTOR;
  BS_CHECK(check(b, tag, &t));
  if (!out)
    BS_FAIL(BS_ERR_INVALID, NULL, "backuper get: no output map");
  BS_CHECK(b->ops->get(b, t, out));
out:
  return st;
}

bs_status bs_backuper_copy(bs_backuper *b, const char *src_tag,
                           const char *dst_tag) {
  bs_status st = BS_OK;
  bs_backup_tag s = BS_BT_ACTOR, d = BS_BT_ACTOR;
  BS_CHECK(check(b, src_tag, &s));
  BS_CHECK(check(b, dst_tag, &d));
  BS_CHECK(b->ops->copy(b, s, d));
out:
  return st;
}

size_t bs_backuper_backup_tags(const bs_backuper *b, const char **tags,
                               size_t max) {
  return b && b->ops ? b->ops->backup_tags(b, tags, max) : 0;
}

bool bs_backuper_has_tag(const bs_backuper *b, const char *tag) {
  const char *tags[BS_BT_COUNT];
  size_t n = bs_backuper_backup_tags(b, tags, BS_BT_COUNT);
  for (size_t i = 0; tag && i < n && i < BS_BT_COUNT; i++)
    if (strcmp(tags[i], tag) == 0)
      return true;
  return false;
}

void bs_backuper_destroy(bs_backuper *b) {
  if (b && b->ops)
    b->ops->destroy(b);
}
