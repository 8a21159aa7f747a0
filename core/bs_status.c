#include "bs_status.h"

#include <stdio.h>
#include <string.h>

static const char *const names[BS_STATUS_COUNT] = {
    [BS_OK] = "ok",
    [BS_ERR_INVALID] = "invalid",
    [BS_ERR_CONFIG] = "config-rejected",
    [BS_ERR_UNSUPPORTED] = "unsupported",
    [BS_ERR_STATE] = "bad-state",
    [BS_ERR_MISSING_BACKUP] = "missing-backup",
    [BS_ERR_COVERAGE] = "uncovered-params",
    [BS_ERR_TENSOR_SET] = "tensor-set-mismatch",
    [BS_ERR_HASH_MISMATCH] = "hash-mismatch",
    [BS_ERR_ENGINE_VERIFY] = "engine-verify",
    [BS_ERR_ENGINE_DEAD] = "engine-dead",
    [BS_ERR_COPY] = "copy-failed",
    [BS_ERR_NOMEM] = "out-of-memory",
    [BS_ERR_PAUSED_READ] = "paused-read",
    [BS_ERR_TIMEOUT] = "timeout",
    [BS_ERR_DESYNC] = "desync",
    [BS_ERR_ABORTED] = "aborted",
    [BS_ERR_RANK_DEAD] = "rank-dead",
    [BS_ERR_INTERNAL] = "internal",
};

static _Thread_local bs_error tls_err = {.rank = -1};
static _Thread_local int tls_rank = -1;
static _Thread_local char tls_phase[32] = "init";

const char *bs_status_name(bs_status st) {
  if ((int)st < 0 || st >= BS_STATUS_COUNT)
    return "unknown";
  return names[st];
}

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

void bs_phase_set(const char *phase) {
  snprintf(tls_phase, sizeof tls_phase, "%s", phase ? phase : "");
}

const char *bs_phase(void) {
  return tls_phase;
}

bs_status bs_vfail(bs_status code, const char *tensor, const char *fmt,
                   va_list ap) {
  /* Keep the root cause: later errors during cleanup must not hide it. */
  if (tls_err.code != BS_OK || code == BS_OK)
    return code;
  tls_err.code = code;
  tls_err.rank = tls_rank;
  snprintf(tls_err.phase, sizeof tls_err.phase, "%s", tls_phase);
  snprintf(tls_err.tensor, sizeof tls_err.tensor, "%s", tensor ? tensor : "");
  vsnprintf(tls_err.message, sizeof tls_err.message, fmt, ap);
  return code;
}

bs_status bs_fail(bs_status code, const char *tensor, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  bs_status st = bs_vfail(code, tensor, fmt, ap);
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
