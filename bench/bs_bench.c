/* The measurements of `backstop bench`. Every figure runs the framework's
 * own code (Normal and MainCast backupers, optimizer cast, memory saver,
 * digest), and every ceiling runs the bare seam call that code is built
 * from (bs_dev_copy, bs_dev_sm_copy, bs_dev_pinned_alloc, bs_digest_sha256,
 * bs_comm_all_gather) on buffers of the same size, so a ratio says how much of
 * the hardware the framework leaves on the table. MainCast runs in a world of
 * ranks (bs_bench_maincast.c), everything else on the bench's own device; the
 * timing is bs_bench_measure.c's, pause/resume bs_bench_pause.c's. */
#include "bs_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bs_bench_impl.h"

/* ---- ceilings: the seam calls alone ---- */

static bs_status run_d2d(bs_bench_state *b) {
  return bs_dev_copy(b->dev, b->dev_b, b->dev_a, b->bytes, BS_D2D);
}

/* The same bytes through SM loads and stores: the cast's kind of traffic. */
static bs_status run_sm_copy(bs_bench_state *b) {
  return bs_dev_sm_copy(b->dev, b->dev_b, b->dev_a, b->bytes);
}

static bs_status run_d2h(bs_bench_state *b) {
  return bs_dev_copy(b->dev, b->pin, b->dev_a, b->bytes, BS_D2H);
}

static bs_status run_h2d(bs_bench_state *b) {
  return bs_dev_copy(b->dev, b->dev_b, b->pin, b->bytes, BS_H2D);
}

static bs_status run_pin_alloc(bs_bench_state *b) {
  return bs_dev_pinned_alloc(b->dev, BS_PIN_OTHER, b->bytes, &b->pin_tmp);
}

static bs_status free_pin_tmp(bs_bench_state *b) {
  bs_dev_pinned_free(b->dev, BS_PIN_OTHER, b->pin_tmp, b->bytes);
  b->pin_tmp = NULL;
  return BS_OK;
}

static bs_status run_sha1(bs_bench_state *b) {
  bs_digest d;
  return bs_digest_sha256(b->pin, b->bytes, &d);
}

static const bs_bench_op op_d2d = {
    .name = "d2d_copy", .is_ceiling = true, .run = run_d2d};
static const bs_bench_op op_sm_copy = {
    .name = "sm_copy", .is_ceiling = true, .run = run_sm_copy};
static const bs_bench_op op_d2h = {
    .name = "d2h_copy", .is_ceiling = true, .run = run_d2h};
static const bs_bench_op op_h2d = {
    .name = "h2d_copy", .is_ceiling = true, .run = run_h2d};
static const bs_bench_op op_pin = {.name = "pinned_alloc",
                                   .is_ceiling = true,
                                   .run = run_pin_alloc,
                                   .teardown = free_pin_tmp};
static const bs_bench_op op_sha1 = {
    .name = "sha256_1thread", .is_ceiling = true, .run = run_sha1};
static const bs_bench_op op_alloc_d2h = {.name = "pinned_alloc+d2h",
                                         .is_ceiling = true};

static void free_ceiling_buffers(bs_bench_state *b) {
  if (b->dev_a)
    bs_memsaver_free(b->ms, b->dev_a);
  if (b->dev_b)
    bs_memsaver_free(b->ms, b->dev_b);
  bs_dev_pinned_free(b->dev, BS_PIN_OTHER, b->pin, b->bytes);
  b->dev_a = b->dev_b = b->pin = NULL;
}

/* The device-copy ceilings count read + write bytes, as the cast does; the
 * SM copy runs on the same buffers as the copy engine's. Allocating pinned
 * memory and then copying into it, back to back, is what a pause with cpu
 * backup and a first backup cannot beat. */
static bs_status ceilings(bs_bench_state *b) {
  bs_status st = BS_OK;
  double n = (double)b->bytes;
  BS_CHECK(
      bs_memsaver_alloc(b->ms, "bench_copy_src", false, b->bytes, &b->dev_a));
  BS_CHECK(
      bs_memsaver_alloc(b->ms, "bench_copy_dst", false, b->bytes, &b->dev_b));
  BS_CHECK(bs_dev_pinned_alloc(b->dev, BS_PIN_OTHER, b->bytes, &b->pin));
  bs_dev_poison(b->dev, b->dev_a, b->bytes, BS_BENCH_SEED);
  BS_CHECK(bs_bench_measure(b, &op_d2d, 2 * n));
  BS_CHECK(bs_bench_measure(b, &op_sm_copy, 2 * n));
  BS_CHECK(bs_bench_measure(b, &op_d2h, n));
  BS_CHECK(bs_bench_measure(b, &op_h2d, n));
  BS_CHECK(bs_bench_measure(b, &op_pin, n));
  BS_CHECK(bs_bench_measure(b, &op_sha1, n));
  BS_CHECK(bs_bench_measure_add_derived(b->r, &op_alloc_d2h, "pinned_alloc",
                                        "d2h_copy"));
out:
  free_ceiling_buffers(b);
  return st;
}

/* ---- Normal backuper ---- */

static bs_status new_fresh(bs_bench_state *b) {
  return bs_backuper_normal_create(b->params, &b->fresh);
}

static bs_status run_fresh_backup(bs_bench_state *b) {
  return bs_backuper_backup(b->fresh, "actor");
}

static bs_status drop_fresh(bs_bench_state *b) {
  bs_backuper_destroy(b->fresh);
  b->fresh = NULL;
  return BS_OK;
}

static bs_status run_backup(bs_bench_state *b) {
  return bs_backuper_backup(b->normal, "actor");
}

static bs_status run_restore(bs_bench_state *b) {
  return bs_backuper_restore(b->normal, "actor");
}

static const bs_bench_op op_first = {.name = "normal_backup_first",
                                     .ceiling = "pinned_alloc+d2h",
                                     .setup = new_fresh,
                                     .run = run_fresh_backup,
                                     .teardown = drop_fresh};
static const bs_bench_op op_backup = {
    .name = "normal_backup", .ceiling = "d2h_copy", .run = run_backup};
static const bs_bench_op op_restore = {
    .name = "normal_restore", .ceiling = "h2d_copy", .run = run_restore};

/* The steady figures start at the second backup, once the pinned copies
 * exist (the bs_bench_measure() warm-up is that first backup). */
static bs_status normal(bs_bench_state *b) {
  bs_status st = BS_OK;
  double n = (double)b->bytes;
  BS_CHECK(bs_bench_measure(b, &op_first, n));
  BS_CHECK(bs_backuper_normal_create(b->params, &b->normal));
  BS_CHECK(bs_bench_measure(b, &op_backup, n));
  BS_CHECK(bs_bench_measure(b, &op_restore, n));
out:
  return st;
}

/* ---- SHA256 of every weight, across threads ---- */

static bs_status run_verify(bs_bench_state *b) {
  return bs_digest_sha256_many(b->hash_data, b->hash_len, b->host.n, b->digests,
                               b->r->threads);
}

static const bs_bench_op op_verify = {
    .name = "sha256_verify", .ceiling = "sha256_1thread", .run = run_verify};

/* Hashes the Normal backup's host copies: the weights as hashing sees them
 * (the D2H that brings them there is the backup figure). The ratio to one
 * thread is the scale factor. */
static bs_status verify(bs_bench_state *b) {
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
  BS_CHECK(bs_bench_measure(b, &op_verify, (double)b->bytes));
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
    const bs_bench_fig *c = bs_bench_report_find(r, f->ceiling);
    if (!c)
      return bs_err_fail(BS_ERR_INTERNAL, NULL, "bench: %s: no ceiling %s",
                         f->name, f->ceiling);
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
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "--ranks: expected an integer in [1, %d], got %d",
                       BS_BENCH_MAX_RANKS, o->ranks);
  if (n == 1 || strcmp(bs_bench_backend(o), "nccl") != 0)
    return BS_OK;
  int gpus = bs_dev_cuda_count();
  if (n > gpus)
    return bs_err_fail(BS_ERR_INVALID, NULL,
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

static void bench_free(bs_bench_state *b) {
  bs_tensor_map_free(&b->host);
  free(b->hash_data);
  free(b->hash_len);
  free(b->digests);
  bs_backuper_destroy(b->fresh);
  bs_backuper_destroy(b->normal);
  bs_optimizer_destroy(b->opt);
  bs_params_destroy(b->params);
  if (b->dev) {
    free_pin_tmp(b);
    free_ceiling_buffers(b);
  }
  bs_memsaver_destroy(b->ms);
  bs_dev_destroy(b->dev);
}

bs_status bs_bench_run(const bs_bench_opts *o, const bs_model_spec *m,
                       bs_bench_report *r) {
  bs_status st = BS_OK;
  bs_bench_state b = {.o = o, .r = r};
  if (!o || !m || !r)
    BS_FAIL(BS_ERR_INVALID, NULL, "bench: NULL argument");
  BS_CHECK(report_init(o, m, r));
  BS_CHECK(bs_dev_create(o->device, 0, &b.dev));
  BS_CHECK(bs_memsaver_create(b.dev, BS_BENCH_SEED, &b.ms));
  BS_CHECK(bs_params_create(b.dev, b.ms, m, 1, BS_BENCH_BUCKET_NUMEL, true,
                            &b.params));
  bs_bench_weights_fill(&b);
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
  BS_CHECK(bs_bench_maincast(&b));
  BS_CHECK(bs_bench_pause_resume(&b));
  BS_CHECK(finish(r));
out:
  bench_free(&b);
  return st;
}
