/* A chained optimizer of three inner HybridDeviceOptimizers (two dense
 * model chunks and the expert buffer): every MainCast rebuild casts
 * through each of them once and must be bit-identical. */
#include <stdio.h>

#include "catalog/bs_scenario.h"
#include "driver/bs_driver.h"
#include "model/bs_params.h"
#include "oracles/bs_expect.h"
#include "train/bs_optimizer.h"

#define INNER 3

/* The chain rank 0 of the run builds, from the run's configuration and
 * model: what the expectation holds the run to (the record has no
 * optimizer in it). */
static bs_status chain(const bs_run_cfg *run, bs_record *rec) {
  bs_status st = BS_OK;
  bs_config cfg;
  bs_model_spec m = {0};
  bs_dev *dev = NULL;
  bs_ms *ms = NULL;
  bs_params *p = NULL;
  bs_optimizer *o = NULL;
  bs_optimizer_view v[INNER + 1];
  char list[200] = "";
  size_t len = 0, n = 0;
  BS_CHECK(bs_driver_config(run, &cfg));
  BS_CHECK(bs_model_load(run->model, run->scale, &m));
  BS_CHECK(bs_dev_host_create(&dev));
  BS_CHECK(bs_ms_create(dev, run->seed, &ms));
  BS_CHECK(bs_params_create(dev, ms, &m, run->ranks, cfg.sim.bucket_numel,
                            false, &p));
  bs_optimizer_cfg oc = bs_optimizer_cfg_of(&cfg);
  BS_CHECK(bs_optimizer_create(dev, ms, &p->layout, 0, &oc, p->param_buf, &o));
  n = bs_optimizer_num_inner(o);
  bool hdo = true;
  for (size_t i = 0; i < n && i <= INNER; i++) {
    BS_CHECK(bs_optimizer_view_get(o, (int)i, &v[i]));
    hdo = hdo && v[i].hdo;
    len += (size_t)snprintf(
        list + len, len < sizeof list ? sizeof list - len : 0, "%s%s %zu+%zu",
        i ? ", " : "", v[i].buf == BS_BUF_DENSE ? "dense" : "expert",
        v[i].first_bucket, v[i].nbuckets);
  }
  BS_CHECK(bs_record_check(rec, "three-inner-hdo", n == INNER && hdo,
                           "%zu inner optimizers%s (buckets): %s", n,
                           hdo ? ", every one an HDO" : "", list));
out:
  bs_optimizer_destroy(o);
  bs_params_destroy(p);
  bs_ms_destroy(ms);
  bs_dev_destroy(dev);
  bs_model_free(&m);
  return st;
}

static bool expect(const bs_record *r, char *d, size_t n) {
  char why[200];
  if (!bs_expect_all_ok(r, why, sizeof why)) {
    snprintf(d, n, "%s", why);
    return false;
  }
  if (!bs_expect_checks_ok(r, d, n))
    return false;
  snprintf(d, n, "%s; %s", why, r->checks[0].detail);
  return true;
}

BS_SCENARIO(chained_optimizers){
    .name = "chained-optimizers",
    .labels = "@smoke",
    .summary = "MainCast over a chain of three inner HDO optimizers",
    .details =
        "MainCast (rematerialize=1) with ci_test, the precision-aware "
        "optimizer and optimizer CPU offload on the moe model, its dense "
        "buffer in two model chunks (optimizer_chunks=2): a chained "
        "optimizer of three inner HybridDeviceOptimizers, two over the "
        "dense buckets and one over the expert buffer; no fault.\n"
        "Steps: every restore casts each rank's masters into its shard "
        "through every inner optimizer once (host map first, then the "
        "device map), then all-gathers both buffers; the SHA256 check "
        "compares the first rebuilds with the backups.\n"
        "Expects: every phase of every rank succeeds, and the chain the "
        "run's configuration builds has exactly three inner optimizers, "
        "every one an HDO.",
    .model = "moe",
    .sets = BS_LIST("rematerialize=1", "ci_test=1",
                    "precision_aware_optimizer=1", "optimizer_cpu_offload=1",
                    "optimizer_chunks=2"),
    .expect = expect,
    .expects = "every phase of every rank succeeds; the chain has three "
               "inner optimizers, every one an HDO",
    .inspect = chain,
};
