/* Status codes, the per-rank error record and the CHECK-style macros.
 *
 * Every fallible function returns a bs_status and, on failure, fills this
 * thread's error record (one thread per rank, so the record is per rank).
 * Convention inside a function:
 *
 *     bs_status st = BS_OK;
 *     BS_CHECK(bs_something(...));
 *     if (bad) BS_FAIL(BS_ERR_INVALID, tensor_name, "what went wrong: %d", x);
 *   out:
 *     ...cleanup that must always run (the C form of try/finally)...
 *     return st;
 */
#ifndef BS_STATUS_H
#define BS_STATUS_H

#include <stdarg.h>
#include <stddef.h>

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
  BS_ERR_INTERNAL,       /* a bug of the framework itself */
  BS_STATUS_COUNT
} bs_status;

/* Fixed size and plain bytes, so agree() can broadcast it across ranks. */
typedef struct bs_error {
  int code;       /* bs_status */
  int rank;       /* rank that raised it, -1 when not known */
  char phase[32]; /* lifecycle phase current when it was raised */
  char tensor[96];
  char message[256];
} bs_error;

/* "ok", "engine-dead", "hash-mismatch", ... (stable: reports use them). */
const char *bs_status_name(bs_status st);

/* This thread's error record; its rank and phase. */
bs_error *bs_err(void);
void bs_err_clear(void);
void bs_err_set_rank(int rank);
int bs_err_rank(void);
void bs_phase_set(const char *phase);
const char *bs_phase(void);

/* Records the failure (first one wins until cleared) and returns code. */
bs_status bs_fail(bs_status code, const char *tensor, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
bs_status bs_vfail(bs_status code, const char *tensor, const char *fmt,
                   va_list ap);

/* Formats "status in phase [tensor]: message" into buf. */
void bs_err_format(const bs_error *e, char *buf, size_t n);

#define BS_CHECK(expr)                                                         \
  do {                                                                         \
    st = (expr);                                                               \
    if (st != BS_OK)                                                           \
      goto out;                                                                \
  } while (0)

#define BS_FAIL(code, tensor, ...)                                             \
  do {                                                                         \
    st = bs_fail((code), (tensor), __VA_ARGS__);                               \
    goto out;                                                                  \
  } while (0)

#endif
