/* The MainCast backuper (docs/behavior.md §4; contract in bs_maincast_plan.h):
 * for "actor" only the extras get a pinned copy, the DDP buffer params are
 * rebuilt from the fp32 master shards plus an all-gather. Other tags have
 * no master weights and delegate to a Normal backuper with full copies. */
#include <stdlib.h>
#include <string.h>

#include "backup/bs_backup_testing.h"
#include "backup/bs_maincast_plan.h"
#include "backup/bs_restore_check.h"
#include "bs_fault.h"
#include "bs_kernels.h"
#include "train/bs_param_sync.h"

#define ACTOR "actor"

typedef struct maincast {
  bs_backuper base;
  bs_maincast_plan *mc;
  bs_backuper *extras; /* Normal over the extras: only its "actor" is used */
  bs_backuper *full;   /* Normal over every synced tensor: the other tags */
  bs_restore_check *check;
  bool backed; /* "actor" holds a complete backup */
} maincast;

static maincast *as_mc(bs_backuper *b) {
  return (maincast *)b;
}

static bs_dev *dev_of(const maincast *m) {
  return m->mc->p->dev;
}

/* Fault backup/corrupt: a bit of the first pinned extra flips after the
 * backup. The copy is host memory, so the host kernel flips it. */
static bs_status corrupt_extra(maincast *m) {
  bs_status st = BS_OK;
  bs_tensor_map em = {0};
  uint64_t bit = 0;
  if (m->mc->nextras == 0 || !bs_fault_hit(BS_FP_BACKUP_CORRUPT, &bit))
    goto out;
  BS_CHECK(bs_backuper_get(m->extras, ACTOR, &em));
  bs_k_bitflip(em.e[0].ptr, em.e[0].bytes, bit);
out:
  bs_tensor_map_free(&em);
  return st;
}

/* The check of the source as it is now (hashes or comparison). */
static bs_status
check_source(maincast *m, bs_status (*fn)(bs_restore_check *,
                                          const bs_tensor *const *, size_t)) {
  bs_status st = BS_OK;
  const bs_tensor **src = NULL;
  size_t n = 0;
  BS_CHECK(bs_source_list(m->mc->src, &src, &n));
  BS_CHECK(fn(m->check, src, n));
out:
  free(src);
  return st;
}

static bs_status backup_actor(maincast *m) {
  bs_status st = BS_OK;
  m->backed = false;
  BS_CHECK(bs_backuper_backup(m->extras, ACTOR));
  BS_CHECK(check_source(m, bs_restore_check_take));
  BS_CHECK(corrupt_extra(m));
  m->backed = true;
  BS_CHECK(bs_source_after_backup(m->mc->src));
out:
  return st;
}

static bs_status mc_backup(bs_backuper *b, bs_backup_tag tag) {
  maincast *m = as_mc(b);
  if (tag == BS_BT_ACTOR)
    return backup_actor(m);
  return bs_backuper_backup(m->full, bs_backup_tag_name(tag));
}

static bs_status require_actor(const maincast *m, const char *op) {
  if (m->backed)
    return BS_OK;
  return bs_err_fail(BS_ERR_MISSING_BACKUP, NULL,
                     "%s('actor'): never backed up", op);
}

/* Fault master/corrupt: a bit of the first inner optimizer's device
 * master flips before the cast (its host master when HDO keeps it all). */
static void corrupt_master(maincast *m) {
  bs_dev *dev = dev_of(m);
  bs_optimizer_view v;
  float *master = NULL;
  size_t n = 0;
  uint64_t bit = 0;
  if (bs_optimizer_num_inner(m->mc->opt) == 0 ||
      !bs_fault_hit(BS_FP_MASTER_CORRUPT, &bit))
    return;
  if (bs_optimizer_master_ptr(m->mc->opt, 0, &master, &n) == BS_OK && n > 0)
    bs_dev_bitflip(dev, master, n * sizeof(float), bit);
  else if (bs_optimizer_view_get(m->mc->opt, 0, &v) == BS_OK && v.host_n > 0)
    bs_k_bitflip(v.host, v.host_n * sizeof(float), bit);
}

/* Step (1): the rank's shard of every param buffer from its masters. */
static bs_status cast_shards(maincast *m) {
  bs_status st = BS_OK;
  BS_CHECK(require_actor(m, "restore"));
  corrupt_master(m);
  BS_CHECK(bs_optimizer_cast_to_params(m->mc->opt));
out:
  return st;
}

/* Fault restore/bitflip: a bit of the first restored buffer param flips
 * after the restore, before the verification. */
static void corrupt_restored(maincast *m) {
  bs_dev *dev = dev_of(m);
  const bs_params *p = m->mc->p;
  uint64_t bit = 0;
  for (size_t i = 0; i < p->n; i++) {
    const bs_tensor *t = &p->t[i];
    if (!bs_tensor_is_synced(t->spec) || !bs_maincast_plan_rematerializable(t))
      continue;
    if (bs_fault_hit(BS_FP_RESTORE_BITFLIP, &bit))
      bs_dev_bitflip(dev, t->ptr, t->bytes, bit);
    return;
  }
}

static bs_status restore_actor(maincast *m) {
  bs_status st = BS_OK;
  bs_status local = cast_shards(m);
  /* Always: a rank that failed locally still joins the all-gathers, so
   * its peers are not left waiting; the caller's agree reports it. */
  BS_CHECK(bs_param_sync_params(m->mc->comm, m->mc->p));
  BS_CHECK(local);
  BS_CHECK(bs_backuper_restore(m->extras, ACTOR));
  BS_CHECK(bs_dev_sync(dev_of(m)));
  corrupt_restored(m);
  BS_CHECK(bs_dev_sync(dev_of(m)));
  BS_CHECK(check_source(m, bs_restore_check_verify));
out:
  return st;
}

static bs_status mc_restore(bs_backuper *b, bs_backup_tag tag) {
  maincast *m = as_mc(b);
  if (tag == BS_BT_ACTOR)
    return restore_actor(m);
  return bs_backuper_restore(m->full, bs_backup_tag_name(tag));
}

/* Index of t among the extras, or -1. */
static long extra_index(const bs_maincast_plan *mc, const bs_tensor *t) {
  for (size_t i = 0; i < mc->nextras; i++)
    if (mc->extras[i] == t)
      return (long)i;
  return -1;
}

static bs_status get_actor(maincast *m, bs_tensor_map *out) {
  bs_status st = BS_OK;
  bs_tensor_map em = {0}, res = {0};
  const bs_maincast_plan *mc = m->mc;
  const bs_tensor **src = NULL;
  size_t n = 0;
  BS_CHECK(require_actor(m, "get"));
  BS_CHECK(bs_backuper_get(m->extras, ACTOR, &em));
  BS_CHECK(bs_source_list(mc->src, &src, &n));
  BS_CHECK(bs_tensor_map_alloc(&res, n));
  for (size_t i = 0; i < n; i++) {
    const bs_tensor *t = src[i];
    long x = extra_index(mc, t);
    if (x >= 0)
      res.e[i] = em.e[x]; /* the pinned copy: its region is paused now */
    else if (bs_maincast_plan_rematerializable(t))
      res.e[i] = (bs_named){.name = t->spec->name,
                            .dtype = t->spec->dtype,
                            .bytes = t->bytes,
                            .ptr = t->ptr,
                            .on_host = false};
    else
      BS_FAIL(BS_ERR_COVERAGE, t->spec->name,
              "get('actor'): %s is neither in the DDP param buffers nor in "
              "the extras backup",
              t->spec->name);
  }
  *out = res;
  res = (bs_tensor_map){0};
out:
  free(src);
  bs_tensor_map_free(&em);
  bs_tensor_map_free(&res);
  return st;
}

static bs_status mc_get(bs_backuper *b, bs_backup_tag tag, bs_tensor_map *out) {
  maincast *m = as_mc(b);
  if (tag == BS_BT_ACTOR)
    return get_actor(m, out);
  return bs_backuper_get(m->full, bs_backup_tag_name(tag), out);
}

static bs_status mc_copy(bs_backuper *b, bs_backup_tag src, bs_backup_tag dst) {
  maincast *m = as_mc(b);
  if (src == BS_BT_ACTOR || dst == BS_BT_ACTOR)
    return bs_err_fail(
        BS_ERR_UNSUPPORTED, NULL,
        "maincast copy('%s' -> '%s'): 'actor' keeps no full copy "
        "(its params are rebuilt from the master weights)",
        bs_backup_tag_name(src), bs_backup_tag_name(dst));
  return bs_backuper_copy(m->full, bs_backup_tag_name(src),
                          bs_backup_tag_name(dst));
}

/* "actor" drops the pinned extras and the check's hashes with them. */
static void mc_release(bs_backuper *b, bs_backup_tag tag) {
  maincast *m = as_mc(b);
  if (tag != BS_BT_ACTOR) {
    m->full->ops->release(m->full, tag);
    return;
  }
  m->extras->ops->release(m->extras, BS_BT_ACTOR);
  bs_restore_check_clear(m->check);
  m->backed = false;
}

static bool mc_has_backup(const bs_backuper *b, bs_backup_tag tag) {
  const maincast *m = (const maincast *)b;
  return tag == BS_BT_ACTOR ? m->backed
                            : m->full->ops->has_backup(m->full, tag);
}

/* "actor" always first: it can always be rebuilt from the masters; then
 * the Normal's tags (its "actor" is never backed up). */
static size_t mc_backup_tags(const bs_backuper *b, const char **tags,
                             size_t max) {
  const maincast *m = (const maincast *)b;
  if (max > 0)
    tags[0] = ACTOR;
  return 1 + bs_backuper_backup_tags(m->full, max > 1 ? tags + 1 : tags,
                                     max > 1 ? max - 1 : 0);
}

static void mc_destroy(bs_backuper *b) {
  maincast *m = as_mc(b);
  bs_backuper_destroy(m->extras);
  bs_backuper_destroy(m->full);
  bs_restore_check_destroy(m->check);
  free(m);
}

static const bs_backuper_ops maincast_ops = {
    .kind = "maincast",
    .backup = mc_backup,
    .restore = mc_restore,
    .get = mc_get,
    .copy = mc_copy,
    .release = mc_release,
    .has_backup = mc_has_backup,
    .backup_tags = mc_backup_tags,
    .destroy = mc_destroy,
};

bs_status bs_backuper_maincast_create(bs_maincast_plan *mc, bool check_armed,
                                      bs_backuper **out) {
  bs_status st = BS_OK;
  maincast *m = NULL;
  if (!mc || !out)
    BS_FAIL(BS_ERR_INVALID, NULL, "maincast backuper: NULL argument");
  if (!(m = calloc(1, sizeof *m)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "maincast backuper: out of memory");
  m->base = (bs_backuper){.ops = &maincast_ops, .src = mc->p};
  m->mc = mc;
  BS_CHECK(bs_backuper_normal_create_subset(mc->p, mc->extras, mc->nextras,
                                            &m->extras));
  BS_CHECK(bs_backuper_normal_create(mc->p, &m->full));
  BS_CHECK(bs_restore_check_create(mc->p->dev, check_armed, &m->check));
  *out = &m->base;
  m = NULL;
out:
  if (m)
    mc_destroy(&m->base);
  return st;
}

bs_restore_check *bs_backuper_maincast_check(bs_backuper *b) {
  if (!b || b->ops != &maincast_ops)
    return NULL;
  return as_mc(b)->check;
}
