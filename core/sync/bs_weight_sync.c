/* Weight sync in buckets, gathered across ranks, streamed to the engine
 * (bs_weight_sync.h). */
#include "sync/bs_weight_sync.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_fault.h"
#include "bs_per_thread.h"

typedef struct ws {
  const bs_ws_opts *o;
  const bs_tensor_map *m;
  bs_dev *dev;
  size_t n;      /* tensors synced (the fault may drop one) */
  size_t *first; /* bucket plan */
  size_t nb, maxb;
  const bs_digest **exp; /* expected digest of each entry */
  char *stage;           /* host staging of one bucket: the thread's, now */
  char *gbuf;            /* device: size * shard(maxb), the gather buffer */
  bool in_update, engine_ok;
  bs_status local; /* first local failure */
} ws;

size_t bs_weight_sync_plan(const bs_tensor_map *m, size_t n,
                           size_t bucket_bytes, size_t *first) {
  size_t nb = 0, fill = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || fill + m->e[i].bytes > bucket_bytes) {
      first[nb++] = i;
      fill = 0;
    }
    fill += m->e[i].bytes;
  }
  first[nb] = n;
  return nb;
}

static size_t bucket_bytes(const ws *w, size_t k) {
  size_t b = 0;
  for (size_t i = w->first[k]; i < w->first[k + 1]; i++)
    b += w->m->e[i].bytes;
  return b;
}

/* A rank's share of a gather of b bytes: every rank sends as many, the
 * last ones padding, so the gathered bucket (size x share bytes) grows with
 * the bucket, not with the ranks times the bucket. */
static size_t share_of(const ws *w, size_t b) {
  size_t size = (size_t)bs_comm_size(w->o->comm);
  return (b + size - 1) / size;
}

static void note(ws *w, bs_status s) {
  if (w->local == BS_OK)
    w->local = s;
}

static bs_status check_args(const bs_ws_opts *o, const bs_tensor_map *m) {
  bs_status st = BS_OK;
  if (!o || !m || !o->comm || !o->ms || (m->n && !m->e))
    BS_FAIL(BS_ERR_INVALID, NULL, "weight sync: NULL argument");
  if (o->bucket_bytes == 0)
    BS_FAIL(BS_ERR_INVALID, NULL, "weight sync: bucket budget of 0 bytes");
  if (!bs_comm_dev(o->comm))
    BS_FAIL(BS_ERR_INVALID, NULL, "weight sync: the rank has no device");
  if (o->nexpect && (!o->expect_names || !o->expect))
    BS_FAIL(BS_ERR_INVALID, NULL, "weight sync: expected digests missing");
out:
  return st;
}

static const bs_digest *expected(const bs_ws_opts *o, size_t guess,
                                 const char *name) {
  if (guess < o->nexpect && strcmp(o->expect_names[guess], name) == 0)
    return &o->expect[guess];
  for (size_t j = 0; j < o->nexpect; j++)
    if (strcmp(o->expect_names[j], name) == 0)
      return &o->expect[j];
  return NULL;
}

static bs_status resolve_expected(ws *w) {
  bs_status st = BS_OK;
  for (size_t i = 0; i < w->n; i++)
    if (!(w->exp[i] = expected(w->o, i, w->m->e[i].name)))
      BS_FAIL(BS_ERR_INVALID, w->m->e[i].name,
              "weight sync: no expected digest for tensor %s", w->m->e[i].name);
out:
  return st;
}

/* The host staging of a bucket, one a thread, kept: a rank stages and
 * then reads its staged bytes without handing its turn over (the engine's
 * send holds it), so a scheduled world's ranks, fibers of one thread, share
 * their thread's, and real threads have one each. Made again after each
 * wait (bucket()). */
typedef struct stage_buf {
  char *p;
  size_t cap;
} stage_buf;

static void stage_free(void *v) {
  free(((stage_buf *)v)->p);
}

static bs_per_thread stage_of = BS_PER_THREAD(sizeof(stage_buf), stage_free);

static char *thread_stage(size_t n) {
  stage_buf *b = bs_per_thread_get(&stage_of);
  if (b && n > b->cap) {
    char *p = realloc(b->p, n);
    if (!p)
      return NULL;
    b->p = p;
    b->cap = n;
  }
  return b ? b->p : NULL;
}

/* The plan and the buffers. The fault sync/tensor_set drops this rank's
 * last tensor, so its set differs from its peers'. */
static bs_status prepare(ws *w) {
  bs_status st = BS_OK;
  uint64_t info = 0;
  size_t size = (size_t)bs_comm_size(w->o->comm);
  w->n = w->m->n;
  if (w->n > 0 && bs_fault_hit(BS_FP_SYNC_TENSOR_SET, &info))
    w->n--;
  w->first = calloc(w->n + 1, sizeof *w->first);
  w->exp = calloc(w->n ? w->n : 1, sizeof *w->exp);
  if (!w->first || !w->exp)
    BS_FAIL(BS_ERR_NOMEM, NULL, "weight sync: plan of %zu tensors", w->n);
  w->nb = bs_weight_sync_plan(w->m, w->n, w->o->bucket_bytes, w->first);
  for (size_t k = 0; k < w->nb; k++) {
    size_t b = bucket_bytes(w, k);
    w->maxb = b > w->maxb ? b : w->maxb;
  }
  BS_CHECK(resolve_expected(w));
  if (!thread_stage(w->maxb ? w->maxb : 1))
    BS_FAIL(BS_ERR_NOMEM, NULL, "weight sync: %zu bytes of staging", w->maxb);
  if (w->maxb)
    BS_CHECK(bs_memsaver_alloc(w->o->ms, BS_TAG_DEFAULT, false,
                               size * share_of(w, w->maxb), (void **)&w->gbuf));
out:
  return st;
}

/* Names, dtypes and sizes in order: what must be equal on every rank. */
static bs_status check_uniform(ws *w) {
  bs_status st = BS_OK;
  size_t len = 0, off = 0;
  char *buf = NULL;
  for (size_t i = 0; i < w->n; i++)
    len += strlen(w->m->e[i].name) + 1 + 2 * sizeof(uint64_t);
  if (!(buf = malloc(len ? len : 1)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "weight sync: fingerprint of %zu bytes", len);
  for (size_t i = 0; i < w->n; i++) {
    const bs_named *e = &w->m->e[i];
    uint64_t meta[2] = {(uint64_t)e->dtype, (uint64_t)e->bytes};
    size_t nl = strlen(e->name) + 1;
    memcpy(buf + off, e->name, nl);
    memcpy(buf + off + nl, meta, sizeof meta);
    off += nl + sizeof meta;
  }
  BS_CHECK(bs_comm_check_same(w->o->comm, buf, len, "weight-sync tensor set"));
out:
  free(buf);
  return st;
}

typedef struct stage_arg {
  ws *w;
  size_t k;
  bool again; /* the same bytes made again for the stream (bucket()) */
} stage_arg;

/* Reads every tensor of bucket k into the staging buffer. Device tensors
 * are read through the memory: a paused one faults and the trap unwinds
 * to the guard around this function (which has nothing to clean up). */
static bs_status stage_bucket(void *p) {
  bs_status st = BS_OK;
  stage_arg *a = p;
  ws *w = a->w;
  size_t off = 0;
  for (size_t i = w->first[a->k]; i < w->first[a->k + 1]; i++) {
    const bs_named *e = &w->m->e[i];
    bs_copy_dir dir = e->on_host ? BS_H2H : BS_D2H;
    /* Made again, the copy is the sim's, not one more of the model's (no
     * fault point counts it, so a fault's nth stays the one it was). */
    BS_CHECK(
        a->again
            ? bs_dev_copy_observe(w->dev, w->stage + off, e->ptr, e->bytes, dir)
            : bs_dev_copy(w->dev, w->stage + off, e->ptr, e->bytes, dir));
    off += e->bytes;
  }
  BS_CHECK(bs_dev_sync(w->dev));
out:
  return st;
}

/* The bucket's stream to the engine, in one write: one step of a
 * scheduled world (the rank holds it through the socket's real waits, so
 * how long the engine process takes changes nothing), then the bytes'
 * modelled time. */
static bs_status send_bucket(ws *w, size_t k) {
  bs_status st = BS_OK;
  size_t off = 0, n = w->first[k + 1] - w->first[k];
  bs_engine_tensor *t = calloc(n ? n : 1, sizeof *t);
  bs_engine_bucket(w->o->engine, (int)k);
  if (!t)
    BS_FAIL(BS_ERR_NOMEM, NULL, "weight sync: a bucket of %zu tensors", n);
  for (size_t i = 0; i < n; i++) {
    const bs_named *e = &w->m->e[w->first[k] + i];
    t[i] = (bs_engine_tensor){e->name, e->dtype, w->stage + off, e->bytes,
                              w->exp[w->first[k] + i]};
    off += e->bytes;
  }
  BS_CHECK(bs_engine_send_many(w->o->engine, t, n));
out:
  bs_comm_spend(w->o->comm, st == BS_OK ? off : 0);
  free(t);
  return st;
}

/* The bucket staged again (the stage was another rank's meanwhile) and
 * sent, unless this rank failed or its engine is gone. */
static void stream(ws *w, size_t k) {
  stage_arg a = {.w = w, .k = k, .again = true};
  if (w->local != BS_OK || !w->engine_ok)
    return;
  w->stage = thread_stage(w->maxb);
  note(w, bs_trap_run(stage_bucket, &a));
  if (w->local != BS_OK)
    return;
  bs_status s = send_bucket(w, k);
  w->engine_ok = s == BS_OK;
  note(w, s);
}

/* One bucket: stage, gather across ranks, stream. Only a failed collective
 * stops the walk (every rank sees it); a local failure stops the stream
 * but not the gathers. What no one reads holds no memory while the rank
 * waits (a world of thousands of ranks waits in each gather): the stage
 * is the thread's (thread_stage), made again for the stream, and the
 * gathered bucket is dropped once the gather is done (the engine is
 * streamed the staged bytes; the real one maps the gathered bucket over
 * CUDA IPC). */
static bs_status bucket(ws *w, size_t k) {
  bs_status st = BS_OK;
  stage_arg a = {.w = w, .k = k};
  size_t bytes = bucket_bytes(w, k), share = share_of(w, bytes);
  size_t first = (size_t)bs_comm_rank(w->o->comm) * share;
  size_t own = first < bytes ? bytes - first : 0;
  char *mine = w->gbuf + first;
  /* Fetched at each use: another rank of this thread may have grown it
   * (moved it) meanwhile; it holds maxb bytes since prepare(). */
  w->stage = thread_stage(w->maxb);
  if (w->local == BS_OK)
    note(w, bs_trap_run(stage_bucket, &a));
  if (w->local == BS_OK)
    note(w, bs_dev_copy(w->dev, mine, w->stage + (own ? first : 0),
                        own < share ? own : share, BS_H2D));
  BS_CHECK(bs_comm_all_gather(w->o->comm, mine, w->gbuf, share, BS_U8));
  bs_dev_discard(w->dev, w->gbuf, share * (size_t)bs_comm_size(w->o->comm));
  stream(w, k);
out:
  return st;
}

static void take_result(ws *w, bs_engine_result *er, bs_sync_result *res) {
  if (!(res->names = calloc(w->n ? w->n : 1, sizeof *res->names))) {
    note(w, bs_err_fail(BS_ERR_NOMEM, NULL, "weight sync: result names"));
    return;
  }
  for (size_t i = 0; i < w->n; i++)
    snprintf(res->names[i], sizeof res->names[i], "%s", w->m->e[i].name);
  res->received = er->digests;
  er->digests = NULL;
  res->ntensors = er->ntensors;
  res->nbuckets = w->nb;
}

/* Closes the update whenever one was begun, so the engine's protocol stays
 * in step; its answer counts only when nothing failed before it. */
static void finish(ws *w, bs_sync_result *res) {
  bs_engine_result er = {0};
  if (!w->in_update || !w->engine_ok)
    return;
  bs_status s = bs_engine_update_end(w->o->engine, &er);
  bs_comm_spend(w->o->comm, w->n * sizeof(bs_digest)); /* the answer */
  note(w, s);
  if (w->local == BS_OK && res)
    take_result(w, &er, res);
  bs_engine_result_free(&er);
}

static void begin(ws *w) {
  if (!w->o->engine) {
    note(w, bs_err_fail(BS_ERR_INVALID, NULL, "weight sync: no engine"));
    return;
  }
  bs_status s = bs_engine_update_begin(w->o->engine, w->o->cycle);
  bs_comm_spend(w->o->comm, 0);
  w->in_update = w->engine_ok = s == BS_OK;
  note(w, s);
}

/* After the fingerprint every rank holds the same set, so this local check
 * gives every rank the same answer: a tensor missing on every rank (which
 * no cross-rank comparison can see) never reaches the engine silently.
 * Every entry already has its expected digest (resolve_expected), so a set
 * as large as the model's is the model's. */
static bs_status check_model_set(const ws *w) {
  bs_status st = BS_OK;
  const bs_ws_opts *o = w->o;
  if (!o->nexpect || w->n == o->nexpect)
    return BS_OK;
  const char *missing = o->expect_names[0];
  for (size_t j = 0; j < o->nexpect; j++) {
    bool found = false;
    for (size_t i = 0; i < w->n && !found; i++)
      found = strcmp(w->m->e[i].name, o->expect_names[j]) == 0;
    if (!found) {
      missing = o->expect_names[j];
      break;
    }
  }
  BS_FAIL(BS_ERR_TENSOR_SET, missing,
          "weight sync: %zu of the model's %zu synced tensors in the set "
          "(first missing: %s)",
          w->n, o->nexpect, missing);
out:
  return st;
}

bs_status bs_weight_sync(const bs_ws_opts *o, const bs_tensor_map *m,
                         bs_sync_result *res) {
  bs_status st = BS_OK;
  ws w = {.o = o, .m = m};
  if (res)
    memset(res, 0, sizeof *res);
  BS_CHECK(check_args(o, m));
  w.dev = bs_comm_dev(o->comm);
  /* A rank without its plan or gather buffer (out of memory) cannot join
   * the gathers: every rank learns that before the first one (§7.2). */
  BS_CHECK(bs_comm_agree(o->comm, prepare(&w)));
  if (o->check_uniform) {
    BS_CHECK(check_uniform(&w));
    BS_CHECK(check_model_set(&w));
  }
  begin(&w);
  for (size_t k = 0; k < w.nb; k++)
    BS_CHECK(bucket(&w, k));
out:
  finish(&w, st == BS_OK ? res : NULL);
  if (st == BS_OK)
    st = w.local;
  if (w.gbuf)
    bs_memsaver_free(o->ms, w.gbuf);
  free(w.first);
  free(w.exp);
  return st;
}
