/* The TensorBackuper interface (docs/behavior.md §4) as a small vtable, and the
 * Normal backuper.
 *
 * The wrappers below validate the tag (BS_ERR_INVALID naming it) before an
 * implementation sees it, so implementations may index by bs_backup_tag. */
#ifndef BS_BACKUPER_H
#define BS_BACKUPER_H

#include <stdbool.h>
#include <stddef.h>

#include "backup/bs_backup_tag.h"
#include "backup/bs_tensor_map.h"
#include "model/bs_params.h"

typedef struct bs_backuper bs_backuper;

typedef struct bs_backuper_ops {
  const char *kind; /* "normal", "maincast" */
  bs_status (*backup)(bs_backuper *b, bs_backup_tag tag);
  bs_status (*restore)(bs_backuper *b, bs_backup_tag tag);
  bs_status (*get)(bs_backuper *b, bs_backup_tag tag, bs_tensor_map *out);
  bs_status (*copy)(bs_backuper *b, bs_backup_tag src, bs_backup_tag dst);
  /* Drops the tag's snapshot and its pinned memory. */
  void (*release)(bs_backuper *b, bs_backup_tag tag);
  /* The tag holds a complete snapshot. */
  bool (*has_backup)(const bs_backuper *b, bs_backup_tag tag);
  /* The tags switch_model may switch to (see bs_backuper_backup_tags). */
  size_t (*backup_tags)(const bs_backuper *b, const char **tags, size_t max);
  void (*destroy)(bs_backuper *b);
} bs_backuper_ops;

/* Implementations embed this as their first member. */
struct bs_backuper {
  const bs_backuper_ops *ops;
  bs_params *src;
};

bs_status bs_backuper_backup(bs_backuper *b, const char *tag);
bs_status bs_backuper_restore(bs_backuper *b, const char *tag);
/* out is only written on success; free it with bs_tensor_map_free. */
bs_status bs_backuper_get(bs_backuper *b, const char *tag, bs_tensor_map *out);
bs_status bs_backuper_copy(bs_backuper *b, const char *src_tag,
                           const char *dst_tag);
/* release(tag) (docs/behavior.md §4): drops the tag's snapshot and its pinned
 * memory; has_backup(tag) is then false, get and restore of it fail with
 * BS_ERR_MISSING_BACKUP "never backed up", and a later backup(tag) works
 * again. A tag without a snapshot is left alone. */
bs_status bs_backuper_release(bs_backuper *b, const char *tag);
/* Whether the tag holds a complete snapshot (false for an unknown tag). */
bool bs_backuper_has_backup(const bs_backuper *b, const char *tag);
/* backup_tags: the tags that hold a snapshot, in bs_backup_tag order; for
 * MainCast "actor" always comes first (it can always be rebuilt from the
 * masters), then the delegated tags. Writes up to max names, returns how
 * many there are. */
size_t bs_backuper_backup_tags(const bs_backuper *b, const char **tags,
                               size_t max);
/* tag is one of backup_tags (what switch_model checks). */
bool bs_backuper_has_tag(const bs_backuper *b, const char *tag);
void bs_backuper_destroy(bs_backuper *b);

/* Normal (docs/behavior.md §4): a pinned host copy of every source tensor per
 * tag, allocated at the first backup of that tag (owner BS_PIN_BACKUPER)
 * and reused across cycles.
 *   backup(tag):  D2H copy of every source tensor, one sync at the end.
 *   restore(tag): every source tensor must have a backup of the tag (else
 *                 BS_ERR_MISSING_BACKUP naming tensor and tag); H2D, sync.
 *   get(tag):     the host copies, source order; BS_ERR_MISSING_BACKUP
 *                 without a backup.
 *   copy(s, d):   host to host, only for names already present in d.
 * A backup that fails midway invalidates the tag until the next complete
 * backup, so a restore never mixes two cycles' bytes.
 * The source is every synced tensor of src (spec order); the subset form
 * takes an explicit list (tensors of src), e.g. for MainCast's extras. */
bs_status bs_backuper_normal_create(bs_params *src, bs_backuper **out);
bs_status bs_backuper_normal_create_subset(bs_params *src,
                                           const bs_tensor *const *list,
                                           size_t n, bs_backuper **out);

#endif
