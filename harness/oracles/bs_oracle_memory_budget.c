#include "oracles/bs_oracle.h"

#include <stdio.h>
#include <string.h>

static const char *kind_name(bs_budget_kind k) {
  static const char *const names[] = {
      [BS_BUDGET_NONE] = "no weight backup",
      [BS_BUDGET_NORMAL] = "normal: full copy per tag",
      [BS_BUDGET_MAINCAST] = "maincast: extras for actor",
      [BS_BUDGET_MEMSAVER] = "memory-saver read path",
  };
  return names[k];
}

size_t bs_oracle_memory_budget_bytes(const bs_budget *b) {
  size_t tags = b->tags > 0 ? (size_t)b->tags : 0;
  switch (b->kind) {
  case BS_BUDGET_NORMAL:
    return b->synced_bytes * tags;
  case BS_BUDGET_MAINCAST:
    return b->extras_bytes + b->synced_bytes * (tags ? tags - 1 : 0);
  default:
    return 0;
  }
}

static size_t held(const bs_event *e) {
  size_t cur = e->pinned[BS_PIN_BACKUPER];
  size_t peak = e->pinned_peak[BS_PIN_BACKUPER];
  return cur > peak ? cur : peak;
}

/* Device bytes an asleep trainer holds beyond its param buffer (whose
 * pausing pause safety judges): under offload, sleep hands the rest of
 * the GPU to the rollout engine (docs/behavior.md §1). */
static size_t beyond_params(const bs_event *e) {
  return e->resident > e->resident_params ? e->resident - e->resident_params
                                          : 0;
}

/* The first of rank k's phase ends that breaks a budget, said in d; NULL:
 * none. Asleep: from the end of an init or a sleep to the next wake_up. */
static const bs_event *over(const bs_record *r, int k, size_t budget,
                            size_t *max, char *d, size_t n) {
  const bs_rank_rec *rr = &r->rank[k];
  bool asleep = false, offload = r->pause_rule != BS_PAUSE_NONE;
  for (size_t i = 0; i < rr->n; i++) {
    const bs_event *e = &rr->ev[i];
    if (e->t1_ms < 0)
      continue;
    if (!strcmp(e->phase, "init") || !strcmp(e->phase, "sleep"))
      asleep = e->status == BS_OK; /* offload_train: init ends asleep */
    else if (!strcmp(e->phase, "wake_up"))
      asleep = false;
    if (held(e) > budget) {
      snprintf(d, n,
               "rank %d after %s of cycle %d: %zu pinned backuper bytes, "
               "budget %zu (%s, %d tag%s)",
               k, e->phase, e->cycle, held(e), budget,
               kind_name(r->budget.kind), r->budget.tags,
               r->budget.tags == 1 ? "" : "s");
      return e;
    }
    if (offload && asleep && beyond_params(e) > 0) {
      snprintf(d, n,
               "rank %d after %s of cycle %d, asleep: %zu device bytes "
               "resident besides the param buffer, budget 0 (offload_train)",
               k, e->phase, e->cycle, beyond_params(e));
      return e;
    }
    *max = held(e) > *max ? held(e) : *max;
  }
  return NULL;
}

bool bs_oracle_memory_budget(const bs_record *r, char *detail, size_t n) {
  size_t budget = bs_oracle_memory_budget_bytes(&r->budget), max = 0;
  for (int k = 0; k < r->nranks; k++)
    if (over(r, k, budget, &max, detail, n))
      return false;
  snprintf(detail, n,
           "at most %zu of %zu pinned backuper bytes per rank "
           "(%s, %d tag%s)%s",
           max, budget, kind_name(r->budget.kind), r->budget.tags,
           r->budget.tags == 1 ? "" : "s",
           r->pause_rule != BS_PAUSE_NONE
               ? "; asleep, no device bytes besides the param buffer"
               : "");
  return true;
}
