/* Python pickles of Flight Recorder dumps, both ways, for exactly the
 * subset PyTorch's dumps use: dicts, lists, tuples, strings, integers (64
 * bits), floats, None and bools, with the memo and protocol 4's frames.
 * The reader makes a document's values (bs_dval.h); bs_pickle_read gives
 * them as a bs_json tree (a tuple reads as an array; a dict's keys are
 * strings). It is bounded (nesting, values, memo) and refuses
 * anything else (a class, a reduce, bytes) naming the opcode and its
 * offset: a pickle from elsewhere is never executed, nor half-read. */
#ifndef BS_PICKLE_H
#define BS_PICKLE_H

#include <stddef.h>

#include "bs_buf.h"
#include "bs_dval.h"
#include "bs_err.h"
#include "bs_json.h"

/* Largest pickle the reader takes (a dump of 2000 collectives is about
 * 1 MB). It makes at most one value per opcode; bs_pickle_read copies out
 * at most twice as many values as the pickle has bytes, shared ones
 * counted each time they are shared (a dump shares only short strings). */
#define BS_PICKLE_MAX_BYTES ((size_t)256 << 20)

/* The pickle's value as *root, made in doc (its strings in pool).
 * BS_ERR_INVALID "pickle: <what> at offset N" on anything else (then *root
 * is NULL), BS_ERR_NOMEM. Protocols 2 to 5. */
bs_status bs_pickle_read_doc(const void *data, size_t n, bs_strpool *pool,
                             bs_dval_doc *doc, bs_dval **root);
/* The same as a bs_json tree (*out empty on an error). */
bs_status bs_pickle_read(const void *data, size_t n, bs_json *out);

/* Appends v as a protocol-2 pickle (what pickle.load reads); an array under
 * a key listed in tuple_keys (NULL-terminated, or NULL) is written as a
 * tuple, as PyTorch writes process_group. Integers that are not integral
 * bs_json numbers are written as floats. */
void bs_pickle_write(bs_buf *b, const bs_json *v,
                     const char *const *tuple_keys);

#endif
