/* The MainCast restore figures of `backstop bench`: the cast of the
 * master shard (against the copy engine's and the SM-driven copy
 * ceilings), the restore as the backuper runs it, and above one rank
 * the all-gather of the param buffers beside the bare collective, in a
 * world of ranks timed in lockstep. */
#include <stdlib.h>
#include <string.h>

#include "backup/bs_maincast_plan.h"
#include "bs_bench_impl.h"
#include "train/bs_param_sync.h"

/* The cast reads an fp32 master and writes a bf16 param per element. */
#define CAST_BYTES_PER_ELEM 6.0

/* Elements of the rank's master shard over every inner optimizer: also
 * what the rank contributes to every all-gather of the param buffers. */
static size_t shard_numel(const bs_bench_state *b) {
  size_t n = 0;
  for (int k = 0; k < BS_BUF_COUNT; k++)
    n += bs_ddp_shard_numel(&b->params->layout, k);
  return n;
}

static bs_status run_cast(bs_bench_state *b) {
  return bs_optimizer_cast_to_params(b->opt);
}

static bs_status run_maincast(bs_bench_state *b) {
  return bs_backuper_restore(b->maincast, "actor");
}

/* The restore's step (2) as the restore runs it: MainCast's own call. */
static bs_status run_param_sync(bs_bench_state *b) {
  return bs_param_sync_params(b->comm, b->params);
}

/* The ceiling: the same in-place all-gathers (one per bucket, the rank's
 * shard, bf16) made straight on the communicator. */
static bs_status run_all_gather(bs_bench_state *b) {
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

static const bs_bench_op op_cast = {
    .name = "cast", .ceiling = "d2d_copy", .run = run_cast};
/* The cast again, against the SM-driven copy: the same traffic kind. */
static const bs_bench_op op_cast_sm = {.name = "cast_sm", .ceiling = "sm_copy"};
static const bs_bench_op op_maincast = {
    .name = "maincast_restore", .ceiling = "d2d_copy", .run = run_maincast};
static const bs_bench_op op_all_gather = {.name = "all_gather",
                                          .is_ceiling = true,
                                          .run = run_all_gather,
                                          .busbw = true};
static const bs_bench_op op_mc_gather = {.name = "maincast_all_gather",
                                         .ceiling = "all_gather",
                                         .run = run_param_sync,
                                         .busbw = true};

/* One rank of the MainCast world: its own device, memory saver, params
 * (DP size N, rank k) and optimizer shard, seen through a bench so that
 * bs_bench_measure() serves it unchanged. Rank 0 writes the report; the
 * others time into a scratch one, since every rank must run every
 * collective. */
typedef struct mc_rank {
  bs_bench_state b;
  const bs_model_spec *m;
  bs_maincast_plan *mc;
  bs_bench_report scratch;
} mc_rank;

/* The rank's weights; its masters start as them cast up (bs_optimizer_create).
 * The MainCast backuper borrows the communicator, so it is made here, in
 * the rank body, and backed up once (its extras) so restore can run. */
static bs_status rank_setup(mc_rank *k, bs_comm *c) {
  bs_status st = BS_OK;
  bs_bench_state *b = &k->b;
  const bs_optimizer_cfg cfg = {
      .lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
  BS_CHECK(bs_memsaver_create(b->dev, BS_BENCH_SEED, &b->ms));
  BS_CHECK(bs_params_create(b->dev, b->ms, k->m, bs_comm_size(c),
                            BS_BENCH_BUCKET_NUMEL, true, &b->params));
  bs_bench_weights_fill(b);
  BS_CHECK(bs_dev_sync(b->dev));
  BS_CHECK(bs_optimizer_create(b->dev, b->ms, &b->params->layout,
                               bs_comm_rank(c), &cfg, b->params->param_buf,
                               &b->opt));
  BS_CHECK(bs_maincast_plan_create(b->params, b->opt, c, &k->mc));
  BS_CHECK(bs_maincast_plan_check_coverage(k->mc));
  BS_CHECK(bs_backuper_maincast_create(k->mc, false, &b->maincast));
  BS_CHECK(bs_backuper_backup(b->maincast, "actor"));
out:
  return st;
}

static void rank_free(mc_rank *k) {
  bs_bench_state *b = &k->b;
  bs_backuper_destroy(b->maincast);
  bs_maincast_plan_destroy(k->mc);
  bs_optimizer_destroy(b->opt);
  bs_params_destroy(b->params);
  bs_memsaver_destroy(b->ms);
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
  bs_bench_state *b = &k->b;
  int n = bs_comm_size(c);
  b->comm = c;
  BS_CHECK(bs_comm_agree(c, rank_setup(k, c)));
  double shard = (double)shard_numel(b);
  double cast = CAST_BYTES_PER_ELEM * shard;
  BS_CHECK(bs_bench_measure(b, &op_cast, cast));
  BS_CHECK(bs_bench_measure_add_derived(b->r, &op_cast_sm, "cast", NULL));
  BS_CHECK(
      bs_bench_measure(b, &op_maincast, cast + (double)k->mc->extras_bytes));
  if (n == 1)
    goto out;
  double gathered = (double)n * sizeof(uint16_t) * shard;
  BS_CHECK(bs_bench_measure(b, &op_all_gather, gathered));
  BS_CHECK(bs_bench_measure(b, &op_mc_gather, gathered));
out:
  rank_free(k);
  return st;
}

/* Rank k on GPU k mod the GPUs there are, as `backstop run` places ranks
 * and the nccl backend its communicators. */
static bs_status rank_devices(const char *device, int n, bs_dev **devs) {
  bs_status st = BS_OK;
  for (int k = 0; k < n; k++)
    BS_CHECK(bs_dev_create_for_rank(device, k, &devs[k]));
out:
  return st;
}

/* A world of r->ranks threads: the all-gathers go through the communicator
 * front (sequence numbers, flight recorder, watchdog) as in a real run.
 * The sim backend stages every collective through host memory, so on cuda
 * its all-gather costs a D2H and an H2D: NCCL is the default there. */
bs_status bs_bench_maincast(bs_bench_state *b) {
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
