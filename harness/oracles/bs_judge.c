#include "oracles/bs_judge.h"

#include <stdio.h>
#include <stdlib.h>

#include "result/bs_armed.h"

/* A rank's outcome: its first failed phase, else its last phase. */
static void outcome(const bs_record *rec, int k, bs_rank_outcome *o) {
  const bs_rank_rec *rr = &rec->rank[k];
  const bs_event *pick = NULL;
  for (size_t i = 0; i < rr->n && !pick; i++)
    if (bs_record_event_failed(&rr->ev[i]))
      pick = &rr->ev[i];
  if (!pick)
    pick = bs_record_last(rec, k);
  *o = (bs_rank_outcome){.rank = k};
  bs_status st = pick ? pick->status : rr->end;
  const bs_error *err = pick ? bs_record_err(pick) : &rr->end_err;
  snprintf(o->status, sizeof o->status, "%s",
           rr->returned ? bs_status_name(st) : "no-return");
  snprintf(o->phase, sizeof o->phase, "%s", pick ? pick->phase : "");
  if (st == BS_OK)
    return;
  bs_err_format(err, o->message, sizeof o->message);
  snprintf(o->where, sizeof o->where, "%s", bs_err_where(err));
}

static void memory(const bs_record *rec, bs_result *res) {
  for (int k = 0; k < rec->nranks; k++) {
    const bs_rank_rec *rr = &rec->rank[k];
    for (size_t i = 0; i < rr->n; i++) {
      const bs_event *e = &rr->ev[i];
      size_t pinned = 0;
      for (int w = 0; w < BS_PIN_OWNER_COUNT; w++)
        pinned +=
            e->pinned_peak[w] > e->pinned[w] ? e->pinned_peak[w] : e->pinned[w];
      size_t resident =
          e->resident_peak > e->resident ? e->resident_peak : e->resident;
      res->pinned_max = pinned > res->pinned_max ? pinned : res->pinned_max;
      res->resident_max =
          resident > res->resident_max ? resident : res->resident_max;
    }
  }
}

/* A named check of a custom driver or an inspect hook (config-matrix: one
 * per rule) is one more oracle entry, so the reports say which one broke. */
static bs_status add_check(bs_result *res, const bs_check *c) {
  bs_oracle_result o = {.ok = c->ok};
  snprintf(o.name, sizeof o.name, "%s", c->name);
  snprintf(o.detail, sizeof o.detail, "%s", c->detail);
  if (!c->ok)
    res->verdict = BS_FAIL;
  return bs_result_add_oracle(res, &o);
}

/* Every invariant held but an armed fault never fired: no evidence. */
static bs_status vacuous(const bs_run *run, const bs_record *rec,
                         bs_result *res) {
  bs_status st = BS_OK;
  char why[600];
  BS_CHECK(bs_armed_collect(run, rec, res));
  if (res->verdict == BS_PASS && bs_armed_vacuous(res, why, sizeof why)) {
    res->verdict = BS_VACUOUS;
    BS_CHECK(bs_result_set_note(res, "%s", why));
  }
out:
  return st;
}

bs_status bs_judge(const bs_run *run, const bs_record *rec, bs_expect_fn expect,
                   bs_result *res) {
  bs_status st = BS_OK;
  bs_oracle_result *o = calloc(bs_oracle_max(), sizeof *o);
  if (!o)
    BS_FAIL(BS_ERR_NOMEM, NULL, "verdict: out of memory");
  size_t n = bs_oracle_run_all(rec, expect, o);
  res->verdict = BS_PASS;
  for (size_t i = 0; i < n; i++) {
    BS_CHECK(bs_result_add_oracle(res, &o[i]));
    if (!o[i].ok)
      res->verdict = BS_FAIL;
  }
  for (size_t i = 0; i < rec->nchecks; i++)
    BS_CHECK(add_check(res, &rec->checks[i]));
  for (int k = 0; k < rec->nranks; k++) {
    bs_rank_outcome ro;
    outcome(rec, k, &ro);
    BS_CHECK(bs_result_add_outcome(res, &ro));
  }
  memory(rec, res);
  res->detect_ms = rec->detect_ms;
  BS_CHECK(vacuous(run, rec, res));
out:
  free(o);
  return st;
}
