/* A chained optimizer of three inner HybridDeviceOptimizers (two dense
 * model chunks and the expert buffer): every MainCast rebuild casts
 * through each of them once and must be bit-identical. */
#include <stdio.h>

#include "catalog/bs_scenario.h"
#include "oracles/bs_expect.h"

#define INNER 3

static bool expect(const bs_record *r, char *d, size_t n) {
  char why[200];
  if (!bs_expect_all_ok(r, why, sizeof why)) {
    snprintf(d, n, "%s", why);
    return false;
  }
  /* The chain rank 0's init built, as the driver recorded it. */
  bool ok = r->opt0.inner == INNER && r->opt0.hdo == INNER;
  snprintf(d, n,
           "%s; rank 0 built %d inner optimizers, %d of them HDOs "
           "(buckets): %s%s",
           ok ? why : "not a chain of three HDOs", r->opt0.inner, r->opt0.hdo,
           r->opt0.desc, ok ? "" : " (expected 3, every one an HDO)");
  return ok;
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
        "Expects: every phase of every rank succeeds, and the chain rank 0's "
        "init built has exactly three inner optimizers, every one an HDO.",
    .model = "moe",
    .sets = BS_LIST("rematerialize=1", "ci_test=1",
                    "precision_aware_optimizer=1", "optimizer_cpu_offload=1",
                    "optimizer_chunks=2"),
    .expect = expect,
    .expects = "every phase of every rank succeeds; the chain has three "
               "inner optimizers, every one an HDO",
};
