/* The backuper front: the dispatch wrappers every caller goes through
 * (bs_backuper.h), the tag validated before an implementation sees it. */
#include "backup/bs_backuper.h"
#include "backup/bs_backup_testing.h"

#include <stdlib.h>
#include <string.h>

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

bs_status bs_backuper_release(bs_backuper *b, const char *tag) {
  bs_status st = BS_OK;
  bs_backup_tag t = BS_BT_ACTOR;
  BS_CHECK(check(b, tag, &t));
  b->ops->release(b, t);
out:
  return st;
}

bool bs_backuper_has_backup(const bs_backuper *b, const char *tag) {
  int t = bs_backup_tag_parse(tag);
  return b && b->ops && t >= 0 && b->ops->has_backup(b, (bs_backup_tag)t);
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
