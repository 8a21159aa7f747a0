/* The model tags a backuper knows (docs/behavior.md §4). */
#ifndef BS_BACKUP_TAG_H
#define BS_BACKUP_TAG_H

#include "bs_err.h"

typedef enum bs_backup_tag {
  BS_BT_ACTOR = 0,
  BS_BT_REF,
  BS_BT_TEACHER,
  BS_BT_OLD_ACTOR,
  BS_BT_ROLLOUT_ACTOR,
  BS_BT_COUNT
} bs_backup_tag;

/* "actor", "ref", "teacher", "old_actor", "rollout_actor". */
const char *bs_backup_tag_name(bs_backup_tag t);
/* -1 when unknown. */
int bs_backup_tag_parse(const char *tag);
/* BS_ERR_INVALID "unknown model tag 'X' (expected actor, ...)". */
bs_status bs_backup_tag_check(const char *tag, bs_backup_tag *out);

#endif
