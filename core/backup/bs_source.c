/* The sync source read afresh (bs_source.h). */
#include "backup/bs_source.h"

#include <stdlib.h>

#include "model/bs_params.h"

#include "bs_fault.h"

#define LATE_NUMEL 4

static const bs_tensor_spec late_spec = {
    .name = BS_SOURCE_LATE_NAME,
    .dtype = BS_F32,
    .ndim = 1,
    .shape = {LATE_NUMEL},
    .numel = LATE_NUMEL,
    .flags = BS_TF_BUFFER | BS_TF_EXPERT_BIAS,
};

struct bs_source {
  bs_params *p;
  bs_tensor late; /* joined the source (ptr set) */
  bool left;      /* the last synced tensor left it */
};

bs_status bs_source_create(bs_params *p, bs_source **out) {
  bs_status st = BS_OK;
  bs_source *s = NULL;
  if (!p || !out)
    BS_FAIL(BS_ERR_INVALID, NULL, "sync source: NULL argument");
  if (!(s = calloc(1, sizeof *s)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "sync source: out of memory");
  s->p = p;
  *out = s;
out:
  return st;
}

void bs_source_destroy(bs_source *s) {
  if (!s)
    return;
  if (s->late.ptr)
    bs_memsaver_free(s->p->ms, s->late.ptr);
  free(s);
}

/* The synced tensors with the fault's change: up to max written, how many
 * there are returned. */
static size_t source_get(const bs_source *s, const bs_tensor **out,
                         size_t max) {
  size_t n = bs_params_synced(s->p, out, max);
  if (s->left && n > 0)
    n--;
  if (s->late.ptr) {
    if (n < max)
      out[n] = &s->late;
    n++;
  }
  return n;
}

bs_status bs_source_list(const bs_source *s, const bs_tensor ***out,
                         size_t *n) {
  bs_status st = BS_OK;
  size_t cap = 0;
  if (!s || !out || !n)
    BS_FAIL(BS_ERR_INVALID, NULL, "sync source: NULL argument");
  /* Room for the whole model: source_get may shrink it by one. */
  cap = bs_params_synced(s->p, NULL, 0) + 1;
  if (!(*out = calloc(cap, sizeof **out)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "sync source: %zu tensors", cap);
  *n = source_get(s, *out, cap);
out:
  return st;
}

/* Its own deterministic values: whatever reads it reads real bytes. */
static bs_status join_late(bs_source *s) {
  bs_status st = BS_OK;
  float v[LATE_NUMEL] = {0.25f, -0.5f, 0.75f, -1.0f};
  bs_tensor t = {.spec = &late_spec, .bytes = sizeof v, .buffer = -1};
  BS_CHECK(bs_memsaver_alloc(s->p->ms, BS_TAG_DEFAULT, true, t.bytes, &t.ptr));
  st = bs_dev_copy(s->p->dev, t.ptr, v, t.bytes, BS_H2D);
  if (st == BS_OK)
    st = bs_dev_sync(s->p->dev);
  if (st != BS_OK) {
    bs_memsaver_free(s->p->ms, t.ptr);
    goto out;
  }
  s->late = t;
out:
  return st;
}

bs_status bs_source_after_backup(bs_source *s) {
  bs_status st = BS_OK;
  uint64_t info = 0;
  if (!s)
    BS_FAIL(BS_ERR_INVALID, NULL, "sync source: none");
  if (!bs_fault_hit(BS_FP_SOURCE_CHANGE, &info))
    goto out;
  if (info != 0)
    s->left = true;
  else if (!s->late.ptr)
    BS_CHECK(join_late(s));
out:
  return st;
}
