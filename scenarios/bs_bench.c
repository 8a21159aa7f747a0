/* The measurements of `backstop bench`. Every figure runs the framework's
 * own code (Normal and MainCast backupers, optimizer cast, memory saver,
 * digest), and every ceiling runs the bare seam call that code is built
 * from (bs_dev_copy, bs_dev_pinned_alloc, bs_sha256, bs_comm_all_gather)
 * on buffers of the same size, so a ratio says how much of the hardware
 * the framework leaves on the table. MainCast runs in a world of ranks,
 * everything else on the bench's own device. */
#include "bs_bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bs_backuper.h"
#include "bs_comm.h"
#include "bs_digest.h"
#include "bs_maincast.h"
#include "bs_optimizer.h"
#include "bs_param_sync.h"
#include "bs_params.h"
#include "bs_region.h"

/* Megatron's default DDP bucket: max(40M, 1M * dp) elements. */
#define BUCKET_NUMEL 40000000u
#define SEED 0x62656e6368ull /* "bench" */
#define GB 1e9
/* The cast reads an fp32 master and writes a bf16 param per element. */
#define CAST_BYTES_PER_ELEM 6.0

typedef struct bench {
  const bs_bench_opts *o;
  bs_bench_report *r;
  bs_dev *dev;
  bs_ms *ms;
  size_t bytes;        /* weight bytes: the size of every ceiling buffer */
  void *dev_a, *dev_b; /* device buffers of the copy ceilings */
  void *pin;           /* pinned buffer of the copy and hash ceilings */
  void *pin_tmp;       /* the allocation ceiling's allocation */
  bs_params *params;
  bs_backuper *normal; /* backed up once before timing: steady state */
  bs_backuper *fresh;  /* a new one per run: first-backup cost */
  bs_tensor_map host;  /* normal's host copies: what verification hashes */
  const void **hash_data;
  size_t *hash_len;
  bs_digest *digests;
  bs_optimizer *opt;
  bs_backuper *maincast; /* lives in the rank body (it borrows the comm) */
  bs_comm *comm;         /* a MainCast rank's: runs are timed in lockstep */
  const char *tag;       /* pause/resume: the region measured */
} bench;

typedef bs_status (*bench_step)(bench *b);

/* setup and teardown are untimed (and optional); run is timed up to the
 * device sync that follows it. */
typedef struct bench_op {
  const char *name;
  const char *ceiling; /* figure it is compared with, NULL for none */
  bool is_ceiling;
  bench_step setup, run, teardown;
  bool busbw; /* an all-gather: reported as bus bandwidth */
} bench_op;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* nccl-tests' all-gather bus bandwidth: each rank receives (N-1)/N of the
 * gathered bytes over its links, so busbw compares across world sizes. */
static double bus_factor(const bs_bench_report *r, bool busbw) {
  return busbw && r->ranks > 1 ? (double)(r->ranks - 1) / r->ranks : 1.0;
}

static bs_status add_fig(bs_bench_report *r, const bench_op *op, double bytes,
                         double seconds) {
  if (r->n >= BS_BENCH_MAX_FIGS)
    return bs_fail(BS_ERR_INTERNAL, NULL, "bench: more than %d figures",
                   BS_BENCH_MAX_FIGS);
  bs_bench_fig *f = &r->fig[r->n++];
  /* A clock tick is the resolution: a run never takes zero seconds. */
  seconds = seconds > 1e-9 ? seconds : 1e-9;
  *f = (bs_bench_fig){.is_ceiling = op->is_ceiling,
                      .busbw = op->busbw,
                      .bytes = bytes,
                      .seconds = seconds,
                      .gbps = bytes / seconds / GB * bus_factor(r, op->busbw),
                      .ratio = NAN};
  snprintf(f->name, sizeof f->name, "%s", op->name);
  snprintf(f->ceiling, sizeof f->ceiling, "%s", op->ceiling ? op->ceiling : "");
  return BS_OK;
}

/* A MainCast rank's runs start and end together on every rank, so rank
 * 0's clock covers the slowest rank and no rank's run overlaps another
 * rank's idle time. */
static bs_status lockstep(bench *b) {
  return b->comm ? bs_comm_barrier(b->comm) : BS_OK;
}

/* One run. The teardown runs even after a failed run, so that what the
 * setup or run acquired is given back; the first error wins. */
static bs_status timed(bench *b, const bench_op *op, double *secs) {
  bs_status st = BS_OK;
  if (op->setup)
    BS_CHECK(op->setup(b));
  st = lockstep(b);
  double t0 = now_s();
  if (st == BS_OK)
    st = op->run(b);
  if (st == BS_OK)
    st = bs_dev_sync(b->dev);
  if (st == BS_OK)
    st = lockstep(b);
  *secs = now_s() - t0;
  if (op->teardown) {
    bs_status td = op->teardown(b);
    st = st != BS_OK ? st : td;
  }
out:
  return st;
}

/* Best of r->repeat runs after one warm-up run (first touch of pages,
 * lazy driver set-up, cold caches). */
static bs_status measure(bench *b, const bench_op *op, double bytes) {
  bs_status st = BS_OK;
  double best = INFINITY, t = 0;
  BS_CHECK(timed(b, op, &t));
  for (int i = 0; i < b->r->repeat; i++) {
    BS_CHECK(timed(b, op, &t));
    best = fmin(best, t);
  }
  BS_CHECK(add_fig(b->r, op, bytes, best));
out:
  return st;
}

const bs_bench_fig *bs_bench_find(const bs_bench_report *r, const char *name) {
  for (size_t i = 0; r && name && i < r->n; i++)
    if (strcmp(r->fig[i].name, name) == 0)
      return &r->fig[i];
  return NULL;
}

/* ---- ceilings: the seam calls alone ---- */

static bs_status run_d2d(bench *b) {
  return bs_dev_copy(b->dev, b->dev_b, b->dev_a, b->bytes, BS_D2D);
}

static bs_status run_d2h(bench *b) {
  return bs_dev_copy(b->dev, b->pin, b->dev_a, b->bytes, BS_D2H);
}

static bs_status run_h2d(bench *b) {
  return bs_dev_copy(b->dev, b->dev_b, b->pin, b->bytes, BS_H2D);
}

static bs_status run_pin_alloc(bench *b) {
  return bs_dev_pinned_alloc(b->dev, BS_PIN_OTHER, b->bytes, &b->pin_tmp);
}

static bs_status free_pin_tmp(bench *b) {
  bs_dev_pinned_free(b->dev, BS_PIN_OTHER, b->pin_tmp, b->bytes);
  b->pin_tmp = NULL;
  return BS_OK;
}

static bs_status run_sha1(bench *b) {
  bs_digest d;
  return bs_sha256(b->pin, b->bytes, &d);
}

static const bench_op op_d2d = {
    .name = "d2d_copy", .is_ceiling = true, .run = run_d2d};
static const bench_op op_d2h = {
    .name = "d2h_copy", .is_ceiling = true, .run = run_d2h};
static const bench_op op_h2d = {
    .name = "h2d_copy", .is_ceiling = true, .run = run_h2d};
static const bench_op op_pin = {.name = "pinned_alloc",
                                .is_ceiling = true,
                                .run = run_pin_alloc,
                                .teardown = free_pin_tmp};
static const bench_op op_sha1 = {
    .name = "sha256_1thread", .is_ceiling = true, .run = run_sha1};
static const bench_op op_alloc_d2h = {.name = "pinned_alloc+d2h",
                                      .is_ceiling = true};

static void free_ceiling_buffers(bench *b) {
  if (b->dev_a)
    bs_ms_free(b->ms, b->dev_a);
  if (b->dev_b)
    bs_ms_free(b->ms, b->dev_b);
  bs_dev_pinned_free(b->dev, BS_PIN_OTHER, b->pin, b->bytes);
  b->dev_a = b->dev_b = b->pin = NULL;
}

/* Allocating pinned memory and then copying into it, back to back: what a
 * pause with cpu backup and a first backup cannot beat. */
static bs_status add_alloc_copy_ceiling(bs_bench_report *r) {
  const bs_bench_fig *a = bs_bench_find(r, "pinned_alloc");
  const bs_bench_fig *c = bs_bench_find(r, "d2h_copy");
  if (!a || !c)
    return bs_fail(BS_ERR_INTERNAL, NULL, "bench: a ceiling is missing");
  return add_fig(r, &op_alloc_d2h, a->bytes, a->seconds + c->seconds);
}

/* The device-copy ceiling counts read + write bytes, as the cast does. */
static bs_status ceilings(bench *b) {
  bs_status st = BS_OK;
  double n = (double)b->bytes;
  BS_CHECK(bs_ms_alloc(b->ms, "bench_copy_src", false, b->bytes, &b->dev_a));
  BS_CHECK(bs_ms_alloc(b->ms, "bench_copy_dst", false, b->bytes, &b->dev_b));
  BS_CHECK(bs_dev_pinned_alloc(b->dev, BS_PIN_OTHER, b->bytes, &b->pin));
  b->dev->ops->poison(b->dev, b->dev_a, b->bytes, SEED);
  BS_CHECK(measure(b, &op_d2d, 2 * n));
  BS_CHECK(measure(b, &op_d2h, n));
  BS_CHECK(measure(b, &op_h2d, n));
  BS_CHECK(measure(b, &op_pin, n));
  BS_CHECK(measure(b, &op_sha1, n));
  BS_CHECK(add_alloc_copy_ceiling(b->r));
out:
  free_ceiling_buffers(b);
  return st;
}

/* ---- Normal backuper ---- */

static bs_status new_fresh(bench *b) {
  return bs_backuper_normal_create(b->params, &b->fresh);
}

static bs_status run_fresh_backup(bench *b) {
  return bs_backuper_backup(b->fresh, "actor");
}

static bs_status drop_fresh(bench *b) {
  bs_backuper_destroy(b->fresh);
  b->fresh = NULL;
  return BS_OK;
}

static bs_status run_backup(bench *b) {
  return bs_backuper_backup(b->normal, "actor");
}

static bs_status run_restore(bench *b) {
  return bs_backuper_restore(b->normal, "actor");
}

static const bench_op op_first = {.name = "normal_backup_first",
                                  .ceiling = "pinned_alloc+d2h",
                                  .setup = new_fresh,
                                  .run = run_fresh_backup,
                                  .teardown = drop_fresh};
static const bench_op op_backup = {
    .name = "normal_backup", .ceiling = "d2h_copy", .run = run_backup};
static const bench_op op_restore = {
    .name = "normal_restore", .ceiling = "h2d_copy", .run = run_restore};

/* The steady figures start at the second backup, once the pinned copies
 * exist (the measure() warm-up is that first backup). */
static bs_status normal(bench *b) {
  bs_status st = BS_OK;
  double n = (double)b->bytes;
  BS_CHECK(measure(b, &op_first, n));
  BS_CHECK(bs_backuper_normal_create(b->params, &b->normal));
  BS_CHECK(measure(b, &op_backup, n));
  BS_CHECK(measure(b, &op_restore, n));
out:
  return st;
}

/* ---- SHA256 of every weight, across threads ---- */

static bs_status run_verify(bench *b) {
  return bs_sha256_many(b->hash_data, b->hash_len, b->host.n, b->digests,
                        b->r->threads);
}

static const bench_op op_verify = {
    .name = "sha256_verify", .ceiling = "sha256_1thread", .run = run_verify};

/* Hashes the Normal backup's host copies: the weights as hashing sees them
 * (the D2H that brings them there is the backup figure). The ratio to one
 * thread is the scale factor. */
static bs_status verify(bench *b) {
  bs_status st = BS_OK;
  BS_CHECK(bs_backuper_get(b->normal, "actor", &b->host));
  size_t n = b->host.n ? b->host.n : 1;
  b->hash_data = calloc(n, sizeof *b->hash_data);
  b->hash_len = calloc(n, sizeof *b->hash_len);
  b->digests = calloc(n, sizeof *b->digests);
  if (!b->hash_data || !b->hash_len || !b->digests)
    BS_FAIL(BS_ERR_NOMEM, NULL, "bench: %zu hash slots", n);
  for (size_t i = 0; i < b->host.n; i++) {
    b->hash_data[i] = b->host.e[i].ptr;
    b->hash_len[i] = b->host.e[i].bytes;
  }
  BS_CHECK(measure(b, &op_verify, (double)b->bytes));
out:
  return st;
}

/* ---- the weights ---- */

/* Weights are a seeded pattern written on the device: throughput does not
 * depend on the values, and a host-generated fill of several GB would
 * cost more than the whole bench. */
static void fill_params(bench *b) {
  const bs_params *p = b->params;
  for (int k = 0; k < BS_BUF_COUNT; k++)
    if (p->param_buf[k])
      b->dev->ops->poison(b->dev, p->param_buf[k],
                          p->layout.buf[k].numel * sizeof(uint16_t), SEED + k);
  for (size_t i = 0; i < p->n; i++)
    if (p->t[i].buffer < 0 && p->t[i].bytes)
      b->dev->ops->poison(b->dev, p->t[i].ptr, p->t[i].bytes, SEED + 2 + i);
}

/* Elements of the rank's master shard over every inner optimizer: also
 * what the rank contributes to every all-gather of the param buffers. */
static size_t shard_numel(const bench *b) {
  size_t n = 0;
  for (int k = 0; k < BS_BUF_COUNT; k++)
    n += bs_ddp_shard_numel(&b->params->layout, k);
  return n;
}

/* ---- MainCast restore: cast the master shard, all-gather the params ---- */

static bs_status run_cast(bench *b) {
  return bs_opt_cast_to_params(b->opt);
}

static bs_status run_maincast(bench *b) {
  return bs_backuper_restore(b->maincast, "actor");
}

/* The restore's step (2) as the restore runs it: MainCast's own call. */
static bs_status run_param_sync(bench *b) {
  return bs_param_sync_params(b->comm, b->params);
}

/* The ceiling: the same in-place all-gathers (one per bucket, the rank's
 * shard, bf16) made straight on the communicator. */
static bs_status run_all_gather(bench *b) {
  bs_status st = BS_OK;
  const bs_params *p = b->params;
  size_t r = (size_t)bs_comm_rank(b->comm);
  for (int k = 0; k < BS_BUF_COUNT; k++) {
    const bs_ddp_buffer *buf = &p->layout.buf[k];
    for (size_t i = 0; p->param_buf[k] && i < buf->nbuckets; i++) {
      uint16_t *base = p->param_buf[k] + buf->buckets[i].offset;
      size_t shard = buf->buckets[i].shard;
      BS_CHECK(
          bs_comm_all_gather(b->comm, base + r * shard, base, shard, BS_BF16));
    }
  }
out:
  return st;
}

static const bench_op op_cast = {
    .name = "cast", .ceiling = "d2d_copy", .run = run_cast};
static const bench_op op_maincast = {
    .name = "maincast_restore", .ceiling = "d2d_copy", .run = run_maincast};
static const bench_op op_all_gather = {.name = "all_gather",
                                       .is_ceiling = true,
                                       .run = run_all_gather,
                                       .busbw = true};
static const bench_op op_mc_gather = {.name = "maincast_all_gather",
                                      .ceiling = "all_gather",
                                      .run = run_param_sync,
                                      .busbw = true};

/* One rank of the MainCast world: its own device, memory saver, params
 * (DP size N, rank k) and optimizer shard, seen through a bench so that
 * measure() serves it unchanged. Rank 0 writes the report; the others
 * time into a scratch one, since every rank must run every collective. */
typedef struct mc_rank {
  bench b;
  const bs_model_spec *m;
  bs_mc *mc;
  bs_bench_report scratch;
} mc_rank;

/* The rank's weights; its masters start as them cast up (bs_opt_create).
 * The MainCast backuper borrows the communicator, so it is made here, in
 * the rank body, and backed up once (its extras) so restore can run. */
static bs_status rank_setup(mc_rank *k, bs_comm *c) {
  bs_status st = BS_OK;
  bench *b = &k->b;
  const bs_opt_cfg cfg = {
      .lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
  BS_CHECK(bs_ms_create(b->dev, SEED, &b->ms));
  BS_CHECK(bs_params_create(b->dev, b->ms, k->m, bs_comm_size(c), BUCKET_NUMEL,
                            true, &b->params));
  fill_params(b);
  BS_CHECK(bs_dev_sync(b->dev));
  BS_CHECK(bs_opt_create(b->dev, b->ms, &b->params->layout, bs_comm_rank(c),
                         &cfg, b->params->param_buf, &b->opt));
  BS_CHECK(bs_mc_create(b->params, b->opt, c, &k->mc));
  BS_CHECK(bs_mc_check_coverage(k->mc));
  BS_CHECK(bs_backuper_maincast_create(k->mc, false, &b->maincast));
  BS_CHECK(bs_backuper_backup(b->maincast, "actor"));
out:
  return st;
}

static void rank_free(mc_rank *k) {
  bench *b = &k->b;
  bs_backuper_destroy(b->maincast);
  bs_mc_destroy(k->mc);
  bs_opt_destroy(b->opt);
  bs_params_destroy(b->params);
  bs_ms_destroy(b->ms);
  b->maincast = NULL;
  k->mc = NULL;
  b->opt = NULL;
  b->params = NULL;
  b->ms = NULL;
}

/* The restore is the cast, the per-bucket all-gather and the extras' copy
 * back; without the SHA check (verification is measured on its own). Its
 * bytes are the cast's and the extras': the all-gather's are counted in
 * the busbw figures (above one rank; at one it moves no peer's bytes). The
 * set-up is agreed first, so that a rank that could not build its model
 * stops every rank at once rather than leaving them in a collective. */
static bs_status maincast_rank(bs_comm *c, void *arg) {
  bs_status st = BS_OK;
  mc_rank *k = arg;
  bench *b = &k->b;
  int n = bs_comm_size(c);
  b->comm = c;
  BS_CHECK(bs_comm_agree(c, rank_setup(k, c)));
  double shard = (double)shard_numel(b);
  double cast = CAST_BYTES_PER_ELEM * shard;
  BS_CHECK(measure(b, &op_cast, cast));
  BS_CHECK(measure(b, &op_maincast, cast + (double)k->mc->extras_bytes));
  if (n == 1)
    goto out;
  double gathered = (double)n * sizeof(uint16_t) * shard;
  BS_CHECK(measure(b, &op_all_gather, gathered));
  BS_CHECK(measure(b, &op_mc_gather, gathered));
out:
  rank_free(k);
  return st;
}

/* Rank k on GPU k mod the GPUs there are, as `backstop run` places ranks
 * and the nccl backend its communicators. */
static bs_status rank_devices(const char *device, int n, bs_dev **devs) {
  bs_status st = BS_OK;
  int gpus = strcmp(device, "cuda") == 0 ? bs_dev_cuda_count() : 0;
  for (int k = 0; k < n; k++)
    BS_CHECK(bs_dev_create(device, gpus > 0 ? k % gpus : 0, &devs[k]));
out:
  return st;
}

/* A world of r->ranks threads: the all-gathers go through the communicator
 * front (sequence numbers, flight recorder, watchdog) as in a real run.
 * The sim backend stages every collective through host memory, so on cuda
 * its all-gather costs a D2H and an H2D: NCCL is the default there. */
static bs_status maincast(bench *b) {
  bs_status st = BS_OK;
  int n = b->r->ranks;
  bs_world *w = NULL;
  const bs_world_opts wo = {.backend = b->r->backend, .size = n};
  bs_dev **devs = calloc((size_t)n, sizeof *devs);
  mc_rank *rk = calloc((size_t)n, sizeof *rk);
  void **args = calloc((size_t)n, sizeof *args);
  if (!devs || !rk || !args)
    BS_FAIL(BS_ERR_NOMEM, NULL, "bench: %d MainCast ranks", n);
  if (shard_numel(b) == 0)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "model %s: no trainable bf16 params, nothing to cast",
            b->params->model->name);
  BS_CHECK(rank_devices(b->o->device, n, devs));
  for (int k = 0; k < n; k++) {
    rk[k] = (mc_rank){.b = {.o = b->o, .dev = devs[k]},
                      .m = b->params->model,
                      .scratch = {.ranks = n, .repeat = b->r->repeat}};
    rk[k].b.r = k == 0 ? b->r : &rk[k].scratch;
    args[k] = &rk[k];
  }
  BS_CHECK(bs_world_create(&wo, &w));
  BS_CHECK(bs_world_run(w, devs, maincast_rank, args));
out:
  bs_world_destroy(w);
  for (int k = 0; devs && k < n; k++)
    bs_dev_destroy(devs[k]);
  free(devs);
  free(rk);
  free(args);
  return st;
}

/* ---- memory saver pause / resume ---- */

static bs_status do_pause(bench *b) {
  return bs_ms_pause(b->ms, b->tag);
}

static bs_status do_resume(bench *b) {
  return bs_ms_resume(b->ms, b->tag);
}

/* With backup: pause allocates pinned memory and copies out; resume copies
 * back. Without: pause only unmaps (no ceiling); resume maps and writes the
 * poison pattern over every byte, a device fill. */
static const bench_op op_pause_bk = {.name = "pause_backup",
                                     .ceiling = "pinned_alloc+d2h",
                                     .run = do_pause,
                                     .teardown = do_resume};
static const bench_op op_resume_bk = {.name = "resume_backup",
                                      .ceiling = "h2d_copy",
                                      .setup = do_pause,
                                      .run = do_resume};
static const bench_op op_pause_nobk = {
    .name = "pause_nobackup", .run = do_pause, .teardown = do_resume};
static const bench_op op_resume_nobk = {.name = "resume_nobackup",
                                        .ceiling = "d2d_copy",
                                        .setup = do_pause,
                                        .run = do_resume};

static bs_status pause_resume_one(bench *b, const char *tag, bool backup,
                                  const bench_op *pause,
                                  const bench_op *resume) {
  bs_status st = BS_OK;
  void *p = NULL;
  BS_CHECK(bs_ms_alloc(b->ms, tag, backup, b->bytes, &p));
  b->dev->ops->poison(b->dev, p, b->bytes, SEED); /* resident, as weights */
  b->tag = tag;
  BS_CHECK(measure(b, pause, (double)b->bytes));
  BS_CHECK(measure(b, resume, (double)b->bytes));
out:
  if (p)
    bs_ms_free(b->ms, p);
  return st;
}

static bs_status pause_resume(bench *b) {
  bs_status st = BS_OK;
  BS_CHECK(
      pause_resume_one(b, "bench_backup", true, &op_pause_bk, &op_resume_bk));
  BS_CHECK(pause_resume_one(b, "bench_nobackup", false, &op_pause_nobk,
                            &op_resume_nobk));
out:
  return st;
}

/* ---- the run ---- */

/* Every ratio against a ceiling of this run. */
static bs_status finish(bs_bench_report *r) {
  for (size_t i = 0; i < r->n; i++) {
    bs_bench_fig *f = &r->fig[i];
    if (!f->ceiling[0])
      continue;
    const bs_bench_fig *c = bs_bench_find(r, f->ceiling);
    if (!c)
      return bs_fail(BS_ERR_INTERNAL, NULL, "bench: %s: no ceiling %s", f->name,
                     f->ceiling);
    f->ratio = f->gbps / c->gbps;
  }
  return BS_OK;
}

const char *bs_bench_backend(const bs_bench_opts *o) {
  if (o->backend)
    return o->backend;
  return o->device && strcmp(o->device, "cuda") == 0 ? "nccl" : "sim";
}

/* NCCL wants one GPU per rank (two ranks on one GPU is an error deep in
 * its init, or a hang): say so before any rank starts. One rank without
 * a GPU is left to the device's own error, as for every other figure. */
bs_status bs_bench_check_ranks(const bs_bench_opts *o) {
  int n = o->ranks ? o->ranks : 1;
  if (n < 1 || n > BS_BENCH_MAX_RANKS)
    return bs_fail(BS_ERR_INVALID, NULL,
                   "--ranks: expected an integer in [1, %d], got %d",
                   BS_BENCH_MAX_RANKS, o->ranks);
  if (n == 1 || strcmp(bs_bench_backend(o), "nccl") != 0)
    return BS_OK;
  int gpus = bs_dev_cuda_count();
  if (n > gpus)
    return bs_fail(BS_ERR_INVALID, NULL,
                   "--ranks %d: the nccl backend needs one GPU per rank, "
                   "%d visible",
                   n, gpus);
  return BS_OK;
}

static bs_status report_init(const bs_bench_opts *o, const bs_model_spec *m,
                             bs_bench_report *r) {
  bs_status st = BS_OK;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (!o->device || o->repeat < 1 || o->threads < 0)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "bench: bad options (device %s, repeat %d, threads %d)",
            o->device ? o->device : "none", o->repeat, o->threads);
  BS_CHECK(bs_bench_check_ranks(o));
  *r = (bs_bench_report){
      .scale = o->scale, .repeat = o->repeat, .ranks = o->ranks ? o->ranks : 1};
  r->threads = o->threads > 0 ? o->threads : (cpus > 0 ? (int)cpus : 1);
  snprintf(r->device, sizeof r->device, "%s", o->device);
  snprintf(r->backend, sizeof r->backend, "%s", bs_bench_backend(o));
  snprintf(r->model, sizeof r->model, "%s", m->name);
out:
  return st;
}

static void bench_free(bench *b) {
  bs_tensor_map_free(&b->host);
  free(b->hash_data);
  free(b->hash_len);
  free(b->digests);
  bs_backuper_destroy(b->fresh);
  bs_backuper_destroy(b->normal);
  bs_opt_destroy(b->opt);
  bs_params_destroy(b->params);
  if (b->dev) {
    free_pin_tmp(b);
    free_ceiling_buffers(b);
  }
  bs_ms_destroy(b->ms);
  bs_dev_destroy(b->dev);
}

bs_status bs_bench_run(const bs_bench_opts *o, const bs_model_spec *m,
                       bs_bench_report *r) {
  bs_status st = BS_OK;
  bench b = {.o = o, .r = r};
  if (!o || !m || !r)
    BS_FAIL(BS_ERR_INVALID, NULL, "bench: NULL argument");
  BS_CHECK(report_init(o, m, r));
  BS_CHECK(bs_dev_create(o->device, 0, &b.dev));
  BS_CHECK(bs_ms_create(b.dev, SEED, &b.ms));
  BS_CHECK(bs_params_create(b.dev, b.ms, m, 1, BUCKET_NUMEL, true, &b.params));
  fill_params(&b);
  BS_CHECK(bs_dev_sync(b.dev));
  b.bytes = bs_params_synced_bytes(b.params);
  r->weight_bytes = b.bytes;
  r->tensors = bs_params_synced(b.params, NULL, 0);
  if (b.bytes == 0)
    BS_FAIL(BS_ERR_INVALID, NULL, "model %s: no synced tensors to back up",
            m->name);
  BS_CHECK(ceilings(&b));
  BS_CHECK(normal(&b));
  BS_CHECK(verify(&b));
  BS_CHECK(maincast(&b));
  BS_CHECK(pause_resume(&b));
  BS_CHECK(finish(r));
out:
  bench_free(&b);
  return st;
}
