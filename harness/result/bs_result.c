#include "result/bs_result.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_vec.h"
#include "catalog/bs_scenario.h"

const char *bs_result_verdict_name(bs_verdict v) {
  static const char *const names[] = {"pass",    "fail",        "hang", "crash",
                                      "vacuous", "interrupted", "known"};
  return (unsigned)v < BS_VERDICT_COUNT ? names[v] : "unknown";
}

static void free_strs(char **s, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(s[i]);
  free(s);
}

void bs_result_free(bs_result *r) {
  free_strs(r->faults, r->nfaults);
  free_strs(r->mutants, r->nmutants);
  free_strs(r->flight, r->nflight);
  free(r->armed);
  free(r->reaches);
  free(r->oracles);
  free(r->outcomes);
  free(r->trace);
  free(r->report);
  free(r->note);
  free(r->repro);
  memset(r, 0, sizeof *r);
}

/* Appends one item to an array sized to its count (results are copied
 * whole: no capacity of their own). */
static bs_status push(void *arrp, size_t *n, size_t size, const void *item) {
  return bs_vec_push(arrp, n, NULL, item, size, "result");
}

static bs_status push_str(char ***arr, size_t *n, const char *s) {
  char *dup = strdup(s);
  if (!dup)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "result: out of memory");
  bs_status st = push(arr, n, sizeof dup, &dup);
  if (st != BS_OK)
    free(dup);
  return st;
}

bs_status bs_result_add_oracle(bs_result *r, const bs_oracle_result *o) {
  return push(&r->oracles, &r->noracles, sizeof *o, o);
}

bs_status bs_result_add_outcome(bs_result *r, const bs_rank_outcome *o) {
  return push(&r->outcomes, &r->noutcomes, sizeof *o, o);
}

bs_status bs_result_add_armed(bs_result *r, const bs_armed *a) {
  return push(&r->armed, &r->narmed, sizeof *a, a);
}

bs_status bs_result_add_flight(bs_result *r, const char *path) {
  return push_str(&r->flight, &r->nflight, path);
}

bs_status bs_result_set_note(bs_result *r, const char *fmt, ...) {
  char *s = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "result note: out of memory");
  free(r->note);
  r->note = s;
  return BS_OK;
}

bs_status bs_result_add_note(bs_result *r, const char *what) {
  char *old = r->note;
  r->note = NULL;
  bs_status st = old ? bs_result_set_note(r, "%s; %s", old, what)
                     : bs_result_set_note(r, "%s", what);
  free(old);
  return st;
}

void bs_result_failed_oracles(const bs_result *r, char *out, size_t n) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < r->noracles && len < n; i++)
    if (!r->oracles[i].ok)
      len += (size_t)snprintf(out + len, n - len, "%s%s", len ? ", " : "",
                              r->oracles[i].name);
}

bs_status bs_result_from_run(const bs_run *run, bs_result *out) {
  bs_status st = BS_OK;
  memset(out, 0, sizeof *out);
  snprintf(out->scenario, sizeof out->scenario, "%s", run->scn->name);
  out->ranks = run->ranks;
  snprintf(out->backend, sizeof out->backend, "%s", run->backend);
  snprintf(out->device, sizeof out->device, "%s", run->device);
  out->seed = run->seed;
  bs_sched_spec_format(&run->schedule, out->schedule, sizeof out->schedule);
  out->schedule_seed = run->schedule.seed;
  snprintf(out->model, sizeof out->model, "%s", run->model_name);
  out->scale = run->scale;
  out->cycles = run->cycles;
  out->detect_ms = -1;
  for (size_t i = 0; i < run->nfaults; i++)
    BS_CHECK(push_str(&out->faults, &out->nfaults, run->faults[i].text));
  for (size_t i = 0; i < run->nmutants; i++)
    BS_CHECK(push_str(&out->mutants, &out->nmutants,
                      bs_mutant_name(run->mutants[i])));
  bs_buf b = {0};
  bs_result_repro(run, &b);
  if (!(out->repro = bs_buf_take(&b)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "result: out of memory");
out:
  if (st != BS_OK)
    bs_result_free(out);
  return st;
}
