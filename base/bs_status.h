/* Status codes: what every fallible function returns (bs_err.h holds the
 * error record and the CHECK-style macros). */
#ifndef BS_STATUS_H
#define BS_STATUS_H

/* Ordered by severity: agree() all-reduces the maximum, so when two ranks
 * fail differently every rank ends with the worse one. */
typedef enum bs_status {
  BS_OK = 0,
  BS_ERR_INVALID,     /* bad argument or input */
  BS_ERR_CONFIG,      /* rejected configuration combination */
  BS_ERR_UNSUPPORTED, /* feature not available in this build/device */
  BS_ERR_STATE,       /* strict state error (e.g. pause of a paused region) */
  BS_ERR_MISSING_BACKUP, /* restore/get without a backup */
  BS_ERR_COVERAGE,       /* params neither in a DDP buffer nor extras */
  BS_ERR_TENSOR_SET,     /* tensor set changed or differs across ranks */
  BS_ERR_HASH_MISMATCH,  /* restore not bit-identical */
  BS_ERR_ENGINE_VERIFY,  /* the engine received bytes that do not match */
  BS_ERR_ENGINE_DEAD,    /* the engine connection broke */
  BS_ERR_COPY,           /* a device/host copy failed */
  BS_ERR_NOMEM,          /* an allocation failed (host, pinned or device) */
  BS_ERR_PAUSED_READ,    /* something read a PAUSED allocation */
  BS_ERR_TIMEOUT,        /* a collective did not complete within the timeout */
  BS_ERR_DESYNC,         /* ranks issued different collectives */
  BS_ERR_ABORTED,        /* the communicator was aborted */
  BS_ERR_RANK_DEAD,      /* a peer rank died */
  /* The rank's process ended with exit status 1: a fatal error of the
   * memory saver, which the real library answers with exit(1). */
  BS_ERR_FATAL,
  BS_ERR_INTERNAL, /* a bug of the framework itself */
  BS_STATUS_COUNT
} bs_status;

/* "ok", "engine-dead", "hash-mismatch", ... (stable: reports use them). */
const char *bs_status_name(bs_status st);

#endif
