/* A bit flips in a pinned extra (fp32 param, expert_bias): whoever reads it
 * first (the engine's check at weight sync, or the SHA256 check at
 * restore) must make every rank fail alike, naming the tensor, and that
 * tensor must be an extra of the run's model. */
#include <stdio.h>
#include <string.h>

#include "catalog/bs_scenario.h"
#include "model/bs_model.h"
#include "oracles/bs_expect.h"

/* What makes t an extra (docs/behavior.md §4: synced, outside the DDP buffers),
 * NULL when it is not one. */
static const char *extra_kind(const bs_tensor_spec *t) {
  if (!bs_tensor_is_synced(t) || bs_tensor_in_ddp(t))
    return NULL;
  if (t->flags & BS_TF_EXPERT_BIAS)
    return "an expert_bias buffer";
  return t->flags & BS_TF_FROZEN ? "a frozen param" : "an fp32 param";
}

/* Looks the tensor rank 0's failure names up in the run's model: the
 * record holds names only, the model spec says what they are. */
static bs_status inspect(const bs_run *run, bs_record *rec) {
  const bs_model_spec *m = run->model;
  const bs_event *e = rec->nranks ? bs_expect_first_failure(rec, 0) : NULL;
  const char *name = e ? bs_record_err(e)->tensor : "";
  const bs_tensor_spec *t = NULL;
  for (size_t i = 0; i < m->n && !t; i++)
    if (strcmp(m->t[i].name, name) == 0)
      t = &m->t[i];
  const char *kind = t ? extra_kind(t) : NULL;
  return bs_record_check(rec, "names-an-extra", kind != NULL,
                         "the failure names '%.80s': %s of model %s", name,
                         kind ? kind
                         : t  ? "not an extra"
                              : "no tensor",
                         m->name);
}

static bool expect(const bs_record *r, char *d, size_t n) {
  char why[300];
  if (!bs_expect_failed_and_stopped(r, NULL, BS_OK, true, d, n))
    return false;
  bs_status st = bs_expect_first_failure(r, 0)->status;
  if (st != BS_ERR_HASH_MISMATCH && st != BS_ERR_ENGINE_VERIFY) {
    snprintf(d, n, "rank 0: expected hash-mismatch or engine-verify, got %s",
             bs_status_name(st));
    return false;
  }
  snprintf(why, sizeof why, "%s", d);
  if (!bs_expect_checks_ok(r, d, n))
    return false;
  snprintf(d, n, "%s; %s", why, r->checks[0].detail);
  return true;
}

BS_SCENARIO(corrupt_extras){
    .name = "corrupt-extras",
    .labels = "@smoke @fault",
    .summary = "a bit flips in a pinned MainCast extra on the last rank",
    .details =
        "MainCast (rematerialize=1) with ci_test on the tiny model, whose "
        "extras (behavior.md §4: synced tensors outside the DDP buffers) are "
        "an fp32 param (core_attention.softmax_offset) and an expert_bias "
        "buffer; MainCast keeps only these in pinned host memory.\n"
        "Fault: backup/corrupt on the last rank, cycle 0, nth=2, failinfo=5: "
        "the point is reached once per backup('actor'), after the extras "
        "are written and the SHA256 check's hashes taken; the 1st reach is "
        "init's backup, the 2nd the backup at the end of the cycle-0 step, "
        "so one clean cycle runs first and the corrupted copy is the one "
        "the next sync and restore read. Bit 5 of the first pinned extra "
        "(the fp32 param) flips.\n"
        "Steps: init, cycle 0 clean; cycle 1 update_weights takes the "
        "extras from the pinned copy (their region is paused) and the "
        "engine's check finds them off the step-end SHA256 (engine-verify); "
        "had the sync missed it, the restore's SHA256 check would "
        "(hash-mismatch). Either way the rank does not raise alone: every "
        "rank fails that phase with the same error naming the tensor, and "
        "the run stops (a failed verification ends the job). The inspect "
        "step looks the named tensor up in the run's model (check "
        "names-an-extra); the expectation requires it to be an expert_bias "
        "buffer, an fp32 or a frozen param.",
    .sets = BS_LIST("rematerialize=1", "ci_test=1"),
    .min_cycles = 2, /* it judges the cycle after its fault */
    .faults = BS_LIST("name=backup/corrupt,rank={last},cycle=0,nth=2,"
                      "failinfo=5"),
    .inspect = inspect,
    .expect = expect,
    .expects = "every rank fails the same phase with hash-mismatch or "
               "engine-verify naming the same tensor, which the model says "
               "is an extra; nothing runs after it",
};
