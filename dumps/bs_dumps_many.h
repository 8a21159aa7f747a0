/* Many dumps read at once (thousands of ranks' files): each read on one
 * of a few threads (its bytes, their document, its dump prepared:
 * bs_dumps_prepare), then handed over in item order, one at a time, so
 * the folder's model is the same however the threads ran. */
#ifndef BS_DUMPS_MANY_H
#define BS_DUMPS_MANY_H

#include "bs_dumps_int.h"
#include "bs_err.h"

typedef struct bs_dumps_many_item {
  size_t i;
  const char *name; /* get's */
  const char *data; /* get's; NULL or "": nothing to read */
  char *owned;      /* get's, when data is its own (freed after take) */
  size_t len;
  bool pickle;       /* get's: a pickle, else JSON */
  char label[32];    /* room for get's name */
  bs_status parsed;  /* data as a document: BS_OK, else err says why */
  bs_status prepped; /* the document as a dump (when parsed) */
  bs_error err;      /* the parse's or the preparation's failure */
  const struct bs_dval *root;
  bs_dumps_prep prep;
} bs_dumps_many_item;

typedef struct bs_dumps_many {
  size_t n;
  void *ctx;
  /* Item it->i's name and bytes (on any thread, at any time). */
  bs_status (*get)(void *ctx, bs_dumps_many_item *it);
  /* The item read, handed over in order, one at a time. */
  bs_status (*take)(void *ctx, bs_dumps *d, bs_dumps_many_item *it);
} bs_dumps_many;

/* Every item of m read into d; the first failure, in item order, stops
 * the rest. */
bs_status bs_dumps_many_read(bs_dumps *d, const bs_dumps_many *m);
/* The item's dump added to d: why it did not read or prepare, else
 * bs_dumps_commit. */
bs_status bs_dumps_many_add(bs_dumps *d, bs_dumps_many_item *it);

#endif
