/* A name -> tensor map, as a backuper's get() hands it out. */
#ifndef BS_TENSOR_MAP_H
#define BS_TENSOR_MAP_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_dtype.h"
#include "bs_err.h"

/* One named tensor handed out by get(): a host copy (on_host) or a live
 * device tensor. name points into the model spec; ptr is not owned. */
typedef struct bs_named {
  const char *name;
  bs_dtype dtype;
  size_t bytes;
  void *ptr;
  bool on_host;
} bs_named;

typedef struct bs_tensor_map {
  bs_named *e;
  size_t n;
} bs_tensor_map;

bs_status bs_tensor_map_alloc(bs_tensor_map *m, size_t n);
/* Frees the entries array only (never the tensors). */
void bs_tensor_map_free(bs_tensor_map *m);
/* NULL when absent. */
const bs_named *bs_tensor_map_find(const bs_tensor_map *m, const char *name);

#endif
