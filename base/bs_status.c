#include "bs_status.h"

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
    [BS_ERR_FATAL] = "fatal-exit",
    [BS_ERR_INTERNAL] = "internal",
};

const char *bs_status_name(bs_status st) {
  if ((int)st < 0 || st >= BS_STATUS_COUNT)
    return "unknown";
  return names[st];
}
