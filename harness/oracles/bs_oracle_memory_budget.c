#include "oracles/bs_oracle.h"

#include <stdio.h>

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

bool bs_oracle_memory_budget(const bs_record *r, char *detail, size_t n) {
  size_t budget = bs_oracle_memory_budget_bytes(&r->budget), max = 0;
  for (int k = 0; k < r->nranks; k++) {
    const bs_rank_rec *rr = &r->rank[k];
    for (size_t i = 0; i < rr->n; i++) {
      const bs_event *e = &rr->ev[i];
      if (e->t1_ms < 0)
        continue;
      if (held(e) > budget) {
        snprintf(detail, n,
                 "rank %d after %s of cycle %d: %zu pinned backuper bytes, "
                 "budget %zu (%s, %d tag%s)",
                 k, e->phase, e->cycle, held(e), budget,
                 kind_name(r->budget.kind), r->budget.tags,
                 r->budget.tags == 1 ? "" : "s");
        return false;
      }
      max = held(e) > max ? held(e) : max;
    }
  }
  snprintf(detail, n,
           "at most %zu of %zu pinned backuper bytes per rank "
           "(%s, %d tag%s)",
           max, budget, kind_name(r->budget.kind), r->budget.tags,
           r->budget.tags == 1 ? "" : "s");
  return true;
}
