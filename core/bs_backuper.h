/* The TensorBackuper interface (behavior.md §4) as a small vtable, the
 * model tags it knows, and the Normal backuper.
 *
 * The wrappers below validate the tag (BS_ERR_INVALID naming it) before an
 * implementation sees it, so implementations may index by bs_backup_tag. */
#ifndef BS_BACKUPER_H
#define BS_BACKUPER_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_params.h"

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

/* One named tensor handed out by get(): a host copy (on_host) or a live
 * device tensor. name points into the model spec; ptr is not owned. */
typedef struct bs_named {
  const char *name;
  bs_dtype dtype;
  size_t bytes;
  void *ptr;
  bool on_host;
} bs_named;

typedef struct bs_tensor_map {
  bs_named *e;
  size_t n;
} bs_tensor_map;

bs_status bs_tensor_map_alloc(bs_tensor_map *m, size_t n);
/* Frees the entries array only (never the tensors). */
void bs_tensor_map_free(bs_tensor_map *m);
/* NULL when absent. */
const bs_named *bs_tensor_map_find(const bs_tensor_map *m, const char *name);

typedef struct bs_backuper bs_backuper;

typedef struct bs_backuper_ops {
  const char *kind; /* "normal", "maincast" */
  bs_status (*backup)(bs_backuper *b, bs_backup_tag tag);
  bs_status (*restore)(bs_backuper *b, bs_backup_tag tag);
  bs_status (*get)(bs_backuper *b, bs_backup_tag tag, bs_tensor_map *out);
  bs_status (*copy)(bs_backuper *b, bs_backup_tag src, bs_backup_tag dst);
  /* Tags holding a complete backup, in bs_backup_tag order. */
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
/* Writes up to max tag names, returns how many tags have a backup. */
size_t bs_backuper_backup_tags(const bs_backuper *b, const char **tags,
                               size_t max);
bool bs_backuper_has_tag(const bs_backuper *b, const char *tag);
void bs_backuper_destroy(bs_backuper *b);

/* Normal (behavior.md §4): a pinned host copy of every source tensor per
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
