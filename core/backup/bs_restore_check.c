/* MainCast's SHA256 round-trip check and the tensor digests under it
 * (bs_restore_check.h). */
#include "backup/bs_restore_check.h"
#include "backup/bs_backup_testing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_mutant.h"

/* Below this many bytes threads cost more than they save; the rank threads
 * of a simulated world already keep the cores busy. */
#define PARALLEL_HASH_BYTES (4u << 20)

struct bs_restore_check {
  bs_dev *dev;
  bool armed;
  int backups; /* backups seen while armed */
  int taken, verified;
  bool held;
  size_t n;
  char (*names)[BS_NAME_MAX];
  size_t *bytes;
  bs_digest *d;
};

/* The core's own reads go through the fault points (copy/fail); an
 * observer's bypass them, so that looking never fires or uses up a fault. */
static bs_status read_tensor(bs_dev *dev, bool observe, void *dst,
                             const bs_tensor *t) {
  if (observe)
    return bs_dev_copy_observe(dev, dst, t->ptr, t->bytes, BS_D2H);
  return bs_dev_copy(dev, dst, t->ptr, t->bytes, BS_D2H);
}

/* Stages the readable tensors to one host buffer; skipped[i] marks the
 * paused ones. */
static bs_status stage(bs_dev *dev, const bs_memsaver *ms, bool observe,
                       const bs_tensor *const *t, size_t n, char *host,
                       bool *skipped) {
  bs_status st = BS_OK;
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    skipped[i] = ms && bs_memsaver_state_of(ms, t[i]->ptr) == BS_PAUSED;
    if (skipped[i] || t[i]->bytes == 0)
      continue;
    BS_CHECK(read_tensor(dev, observe, host + off, t[i]));
    off += t[i]->bytes;
  }
  BS_CHECK(bs_dev_sync(dev));
out:
  return st;
}

/* Hashes the staged tensors (the skipped ones not staged) into dig, on
 * every CPU. */
static bs_status hash_staged(const bs_tensor *const *t, size_t n,
                             const char *host, const bool *skipped,
                             bs_digest *dig) {
  bs_status st = BS_OK;
  size_t m = 0, off = 0;
  const void **data = calloc(n ? n : 1, sizeof *data);
  size_t *len = calloc(n ? n : 1, sizeof *len);
  bs_digest *got = calloc(n ? n : 1, sizeof *got);
  if (!data || !len || !got)
    BS_FAIL(BS_ERR_NOMEM, NULL, "tensor digests: %zu tensors", n);
  for (size_t i = 0; i < n; i++) {
    if (skipped[i])
      continue;
    data[m] = host + off;
    len[m++] = t[i]->bytes;
    off += t[i]->bytes;
  }
  BS_CHECK(bs_digest_sha256_many(data, len, m, got, 0));
  m = 0;
  for (size_t i = 0; i < n; i++)
    dig[i] = skipped[i] ? (bs_digest){{0}} : got[m++];
out:
  free(data);
  free(len);
  free(got);
  return st;
}

/* Below PARALLEL_HASH_BYTES, tensor by tensor through one buffer the size
 * of the largest: the whole list staged was a mapping of its own each
 * time (malloc's threshold in a world's child), faulted in and unmapped
 * again, a third of a steady-maincast world's unmaps. */
static bs_status digests(bs_dev *dev, const bs_memsaver *ms, bool observe,
                         const bs_tensor *const *t, size_t n, bs_digest *out,
                         size_t *npaused) {
  bs_status st = BS_OK;
  size_t total = 0, largest = 0, paused = 0;
  char *host = NULL;
  bool *skipped = calloc(n ? n : 1, sizeof *skipped);
  bs_digest *dig = calloc(n ? n : 1, sizeof *dig);
  if (!dev || (n && (!t || !out)))
    BS_FAIL(BS_ERR_INVALID, NULL, "tensor digests: NULL argument");
  if (!skipped || !dig)
    BS_FAIL(BS_ERR_NOMEM, NULL, "tensor digests: %zu tensors", n);
  for (size_t i = 0; i < n; i++) {
    total += t[i]->bytes;
    largest = t[i]->bytes > largest ? t[i]->bytes : largest;
  }
  bool whole = total >= PARALLEL_HASH_BYTES;
  size_t room = whole ? total : largest;
  if (!(host = malloc(room ? room : 1)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "tensor digests: %zu bytes of staging", room);
  if (whole) {
    BS_CHECK(stage(dev, ms, observe, t, n, host, skipped));
    BS_CHECK(hash_staged(t, n, host, skipped, dig));
  }
  for (size_t i = 0; !whole && i < n; i++) {
    BS_CHECK(stage(dev, ms, observe, t + i, 1, host, skipped + i));
    if (!skipped[i])
      BS_CHECK(bs_digest_sha256(host, t[i]->bytes, &dig[i]));
  }
  for (size_t i = 0; i < n; i++) {
    out[i] = dig[i];
    paused += skipped[i];
  }
  if (npaused)
    *npaused = paused;
out:
  free(host);
  free(skipped);
  free(dig);
  return st;
}

bs_status bs_restore_check_hash(bs_dev *dev, const bs_memsaver *ms,
                                const bs_tensor *const *t, size_t n,
                                bs_digest *out, size_t *npaused) {
  return digests(dev, ms, false, t, n, out, npaused);
}

bs_status bs_restore_check_hash_observe(bs_dev *dev, const bs_memsaver *ms,
                                        const bs_tensor *const *t, size_t n,
                                        bs_digest *out, size_t *npaused) {
  return digests(dev, ms, true, t, n, out, npaused);
}

bs_status bs_restore_check_stage_observe(bs_dev *dev, const bs_memsaver *ms,
                                         const bs_tensor *const *t, size_t n,
                                         void *host, bool *skipped) {
  if (!dev || (n && (!t || !host || !skipped)))
    return bs_err_fail(BS_ERR_INVALID, NULL, "tensor staging: NULL argument");
  return stage(dev, ms, true, t, n, host, skipped);
}

bs_status bs_restore_check_create(bs_dev *dev, bool armed,
                                  bs_restore_check **out) {
  bs_status st = BS_OK;
  bs_restore_check *rc = NULL;
  if (!dev || !out)
    BS_FAIL(BS_ERR_INVALID, NULL, "restore check: NULL argument");
  if (!(rc = calloc(1, sizeof *rc)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "restore check: out of memory");
  rc->dev = dev;
  rc->armed = armed;
  *out = rc;
out:
  return st;
}

static void drop(bs_restore_check *rc) {
  free(rc->names);
  free(rc->bytes);
  free(rc->d);
  rc->names = NULL;
  rc->bytes = NULL;
  rc->d = NULL;
  rc->n = 0;
  rc->held = false;
}

void bs_restore_check_destroy(bs_restore_check *rc) {
  if (!rc)
    return;
  drop(rc);
  free(rc);
}

bs_status bs_restore_check_take(bs_restore_check *rc, const bs_tensor *const *t,
                                size_t n) {
  bs_status st = BS_OK;
  if (!rc || (n && !t))
    BS_FAIL(BS_ERR_INVALID, NULL, "restore check: NULL argument");
  if (!rc->armed)
    goto out;
  drop(rc);
  if (++rc->backups > BS_RCHECK_CYCLES)
    goto out;
  rc->names = calloc(n ? n : 1, sizeof *rc->names);
  rc->bytes = calloc(n ? n : 1, sizeof *rc->bytes);
  rc->d = calloc(n ? n : 1, sizeof *rc->d);
  if (!rc->names || !rc->bytes || !rc->d)
    BS_FAIL(BS_ERR_NOMEM, NULL, "restore check: %zu tensors", n);
  BS_CHECK(bs_restore_check_hash(rc->dev, NULL, t, n, rc->d, NULL));
  for (size_t i = 0; i < n; i++) {
    snprintf(rc->names[i], sizeof rc->names[i], "%s", t[i]->spec->name);
    rc->bytes[i] = t[i]->bytes;
  }
  rc->n = n;
  rc->held = true;
  rc->taken++;
out:
  if (st != BS_OK && rc)
    drop(rc);
  return st;
}

/* Same names, same sizes, same order: else the first difference. */
static bs_status same_set(const bs_restore_check *rc, const bs_tensor *const *t,
                          size_t n) {
  bs_status st = BS_OK;
  size_t i = 0;
  while (i < n && i < rc->n && strcmp(rc->names[i], t[i]->spec->name) == 0 &&
         rc->bytes[i] == t[i]->bytes)
    i++;
  if (i == n && i == rc->n)
    goto out;
  if (i < n && i < rc->n)
    BS_FAIL(BS_ERR_TENSOR_SET, t[i]->spec->name,
            "restore check (cycle %d): the source changed the tensor set "
            "since the backup: entry %zu is %s (%zu bytes), the backup had "
            "%s (%zu bytes)",
            rc->taken, i, t[i]->spec->name, t[i]->bytes, rc->names[i],
            rc->bytes[i]);
  BS_FAIL(BS_ERR_TENSOR_SET, i < n ? t[i]->spec->name : rc->names[i],
          "restore check (cycle %d): the source changed the tensor set "
          "since the backup: %zu tensors, the backup had %zu (%s %s)",
          rc->taken, n, rc->n,
          i < n ? "joined:" : "left:", i < n ? t[i]->spec->name : rc->names[i]);
out:
  return st;
}

bs_status bs_restore_check_verify(bs_restore_check *rc,
                                  const bs_tensor *const *t, size_t n) {
  bs_status st = BS_OK;
  bs_digest *now = NULL;
  size_t bad = 0, first = 0;
  if (!rc || (n && !t))
    BS_FAIL(BS_ERR_INVALID, NULL, "restore check: NULL argument");
  if (!rc->held)
    goto out;
  rc->verified++;
  BS_CHECK(same_set(rc, t, n));
  if (!(now = calloc(n ? n : 1, sizeof *now)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "restore check: %zu digests", n);
  BS_CHECK(bs_restore_check_hash(rc->dev, NULL, t, n, now, NULL));
  for (size_t i = n; i-- > 0;)
    if (!bs_digest_eq(&now[i], &rc->d[i])) {
      bad++;
      first = i;
    }
  if (bad)
    BS_FAIL(BS_ERR_HASH_MISMATCH, t[first]->spec->name,
            "restore is not bit-identical to the backup for %zu/%zu tensors "
            "(cycle %d): first %s",
            bad, n, rc->taken, t[first]->spec->name);
out:
  free(now);
  /* Mutant check-window-cleared (this project's first reading of miles
   * #1572's check): the hashes go at the first restore, init's own, so the
   * first real rebuild after weight sync is never checked. */
  if (rc && rc->held && st != BS_ERR_INVALID &&
      bs_mutant_on(BS_MUT_CHECK_WINDOW_CLEARED))
    drop(rc);
  return st;
}

void bs_restore_check_clear(bs_restore_check *rc) {
  if (rc)
    drop(rc);
}

int bs_restore_check_taken(const bs_restore_check *rc) {
  return rc ? rc->taken : 0;
}

bool bs_restore_check_held(const bs_restore_check *rc) {
  return rc && rc->held;
}

int bs_restore_check_verified(const bs_restore_check *rc) {
  return rc ? rc->verified : 0;
}
