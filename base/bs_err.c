#include "bs_err.h"

#include <stdio.h>
#include <string.h>

#include "bs_task_local.h"

static const bs_error err_init = {.rank = -1};
static const int rank_init = -1;
static const char phase_init[32] = "init";
static _Thread_local bs_error tls_err = {.rank = -1};
static _Thread_local int tls_rank = -1;
static _Thread_local char tls_phase[32] = "init";
BS_TASK_LOCAL(tls_err, &err_init)
BS_TASK_LOCAL(tls_rank, &rank_init)
BS_TASK_LOCAL(tls_phase, phase_init)

bs_error *bs_err(void) {
  return &tls_err;
}

void bs_err_clear(void) {
  memset(&tls_err, 0, sizeof tls_err);
  tls_err.rank = tls_rank;
}

void bs_err_set_rank(int rank) {
  tls_rank = rank;
  tls_err.rank = rank;
}

int bs_err_rank(void) {
  return tls_rank;
}

void bs_err_set_phase(const char *phase) {
  snprintf(tls_phase, sizeof tls_phase, "%s", phase ? phase : "");
}

const char *bs_err_phase(void) {
  return tls_phase;
}

bs_status bs_err_vfail_at(const char *file, int line, bs_status code,
                          const char *tensor, const char *fmt, va_list ap) {
  /* Keep the root cause: later errors during cleanup must not hide it. */
  if (tls_err.code != BS_OK || code == BS_OK)
    return code;
  tls_err.code = code;
  tls_err.rank = tls_rank;
  snprintf(tls_err.phase, sizeof tls_err.phase, "%s", tls_phase);
  snprintf(tls_err.tensor, sizeof tls_err.tensor, "%s", tensor ? tensor : "");
  vsnprintf(tls_err.message, sizeof tls_err.message, fmt, ap);
  snprintf(tls_err.where, sizeof tls_err.where, "%s:%d", file ? file : "?",
           line);
  return code;
}

bs_status bs_err_fail_at(const char *file, int line, bs_status code,
                         const char *tensor, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  bs_status st = bs_err_vfail_at(file, line, code, tensor, fmt, ap);
  va_end(ap);
  return st;
}

void bs_err_format(const bs_error *e, char *buf, size_t n) {
  if (e->tensor[0])
    snprintf(buf, n, "%s in %s [%s]: %s", bs_status_name(e->code), e->phase,
             e->tensor, e->message);
  else
    snprintf(buf, n, "%s in %s: %s", bs_status_name(e->code), e->phase,
             e->message);
}

const char *bs_err_where(const bs_error *e) {
  return e->where;
}
