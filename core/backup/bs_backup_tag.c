#include "backup/bs_backup_tag.h"

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
