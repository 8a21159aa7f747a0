/* The per-rank error record and the CHECK-style macros.
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
#ifndef BS_ERR_H
#define BS_ERR_H

#include <stdarg.h>
#include <stddef.h>

#include "bs_status.h"

/* Fixed size and plain bytes, so agree() can broadcast it across ranks. */
typedef struct bs_error {
  int code;       /* bs_status */
  int rank;       /* rank that raised it, -1 when not known */
  char phase[32]; /* lifecycle phase current when it was raised */
  char tensor[96];
  char message[256];
  char where[64]; /* file:line of the bs_err_fail (BS_FAIL) that set it */
} bs_error;

/* This thread's error record; its rank and phase. */
bs_error *bs_err(void);
void bs_err_clear(void);
void bs_err_set_rank(int rank);
int bs_err_rank(void);
void bs_err_set_phase(const char *phase);
const char *bs_err_phase(void);

/* Records the failure (first one wins until cleared) and returns code.
 * The macros pass the caller's file:line (BS_HERE), so a failure reads like
 * a backtrace's first frame. */
#define BS_HERE __FILE__, __LINE__
bs_status bs_err_fail_at(const char *file, int line, bs_status code,
                         const char *tensor, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
bs_status bs_err_vfail_at(const char *file, int line, bs_status code,
                          const char *tensor, const char *fmt, va_list ap);
#define bs_err_fail(...) bs_err_fail_at(BS_HERE, __VA_ARGS__)
#define bs_err_vfail(...) bs_err_vfail_at(BS_HERE, __VA_ARGS__)

/* Formats "status in phase [tensor]: message" into buf; bs_err_where
 * gives "file:line" ("" when not known). */
void bs_err_format(const bs_error *e, char *buf, size_t n);
const char *bs_err_where(const bs_error *e);

#define BS_CHECK(expr)                                                         \
  do {                                                                         \
    st = (expr);                                                               \
    if (st != BS_OK)                                                           \
      goto out;                                                                \
  } while (0)

#define BS_FAIL(code, tensor, ...)                                             \
  do {                                                                         \
    st = bs_err_fail((code), (tensor), __VA_ARGS__);                           \
    goto out;                                                                  \
  } while (0)

#endif
