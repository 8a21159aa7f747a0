/* Python pickles of Flight Recorder dumps, both ways, for exactly the
 * subset PyTorch's dumps use: dicts, lists, tuples, strings, integers (64
 * bits), floats, None and bools, with the memo and protocol 4's frames.
 * Values travel as bs_json trees (a tuple reads as an array; a dict's keys
 * are strings). The reader is bounded (nesting, values, memo) and refuses
 * anything else (a class, a reduce, bytes) naming the opcode and its
 * offset: a pickle from elsewhere is never executed, nor half-read. */
#ifndef BS_PICKLE_H
#define BS_PICKLE_H

#include <stddef.h>

#include "bs_err.h"
#include "util/bs_buf.h"
#include "util/bs_json.h"

/* Largest pickle the reader takes (a dump of 2000 collectives is about
 * 1 MB). It builds at most one value per opcode, and copies out at most
 * twice as many values as the pickle has bytes, shared ones counted each
 * time they are shared (a dump shares only short strings). */
#define BS_PICKLE_MAX_BYTES ((size_t)256 << 20)

/* BS_ERR_INVALID "pickle: <what> at offset N" on anything else (then *out
 * is empty), BS_ERR_NOMEM. Protocols 2 to 5. */
bs_status bs_pickle_read(const void *data, size_t n, bs_json *out);

/* Appends v as a protocol-2 pickle (what pickle.load reads); an array under
 * a key listed in tuple_keys (NULL-terminated, or NULL) is written as a
 * tuple, as PyTorch writes process_group. Integers that are not integral
 * bs_json numbers are written as floats. */
void bs_pickle_write(bs_buf *b, const bs_json *v,
                     const char *const *tuple_keys);

#endif
