#include "oracles/bs_oracle.h"

#include <stdio.h>
#include <string.h>

/* Which fault points can cause each status. A status missing here (a state
 * error, a paused read, a coverage or config rejection) is never explained
 * by a fault: it is a bug of the core. */
typedef struct cause {
  bs_status st;
  const char *const *points; /* prefixes of fault point names */
} cause;

#define POINTS(...)                                                            \
  (const char *const[]) {                                                      \
    __VA_ARGS__, NULL                                                          \
  }

/* File scope: the compound literals then have static storage. */
static const cause table[] = {
    {BS_ERR_ENGINE_DEAD, POINTS("engine/send")},
    /* The engine checks what it got against the step's digests, so a
     * corrupted backup or master can surface there first. */
    {BS_ERR_ENGINE_VERIFY, POINTS("engine/verify", "backup/corrupt",
                                  "master/corrupt", "restore/bitflip")},
    {BS_ERR_HASH_MISMATCH,
     POINTS("restore/bitflip", "backup/corrupt", "master/corrupt")},
    {BS_ERR_TENSOR_SET, POINTS("sync/tensor_set", "comm/diverge")},
    {BS_ERR_NOMEM,
     POINTS("backup/pin_alloc", "region/resume", "optimizer/step")},
    {BS_ERR_COPY, POINTS("copy/fail")},
    {BS_ERR_MISSING_BACKUP, POINTS("backup/pin_alloc", "copy/fail")},
    /* A broken or stuck collective: a comm fault, or a rank that a fault
     * took out of the schedule. */
    {BS_ERR_DESYNC, POINTS("comm/", "sync/tensor_set")},
    {BS_ERR_ABORTED, POINTS("comm/", "sync/tensor_set")},
    {BS_ERR_RANK_DEAD, POINTS("comm/", "sync/tensor_set")},
    {BS_ERR_TIMEOUT, POINTS("comm/", "sync/tensor_set")},
};

static const char *const *causes_of(bs_status st) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (table[i].st == st)
      return table[i].points;
  return NULL;
}

static bool explained(const bs_record *r, bs_status st, int cycle) {
  const char *const *points = causes_of(st);
  return points && bs_oracle_fired_any(r, points, cycle);
}

static bool check_rank(const bs_record *r, int k, char *detail, size_t n) {
  const bs_rank_rec *rr = &r->rank[k];
  for (size_t i = 0; i < rr->n; i++) {
    const bs_event *e = &rr->ev[i];
    if (bs_oracle_event_failed(e) && !explained(r, e->status, e->cycle)) {
      snprintf(detail, n,
               "rank %d, cycle %d %s: %s with no fired fault "
               "behind it: %s",
               k, e->cycle, e->phase, bs_status_name(e->status),
               e->err.message);
      return false;
    }
  }
  if (rr->returned && rr->end != BS_OK && !explained(r, rr->end, -1)) {
    snprintf(detail, n,
             "rank %d ended with %s with no fired fault behind "
             "it: %s",
             k, bs_status_name(rr->end), rr->end_err.message);
    return false;
  }
  return true;
}

bool bs_oracle_explained(const bs_record *r, char *detail, size_t n) {
  size_t errors = 0;
  for (int k = 0; k < r->nranks; k++) {
    if (!check_rank(r, k, detail, n))
      return false;
    for (size_t i = 0; i < r->rank[k].n; i++)
      errors += bs_oracle_event_failed(&r->rank[k].ev[i]);
  }
  if (r->world_report && r->world_report[0] &&
      !explained(r, BS_ERR_DESYNC, -1)) {
    snprintf(detail, n,
             "a hang/desync was reported with no comm fault "
             "fired: %.200s",
             r->world_report);
    return false;
  }
  snprintf(detail, n,
           "%zu failed phase%s, %zu fault firing%s: every error "
           "traced to a fired fault",
           errors, errors == 1 ? "" : "s", r->nfired,
           r->nfired == 1 ? "" : "s");
  return true;
}
