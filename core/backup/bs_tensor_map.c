#include "backup/bs_tensor_map.h"

#include <stdlib.h>
#include <string.h>

bs_status bs_tensor_map_alloc(bs_tensor_map *m, size_t n) {
  bs_status st = BS_OK;
  m->n = 0;
  if (!(m->e = calloc(n ? n : 1, sizeof *m->e)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "tensor map: out of memory");
  m->n = n;
out:
  return st;
}

void bs_tensor_map_free(bs_tensor_map *m) {
  if (!m)
    return;
  free(m->e);
  m->e = NULL;
  m->n = 0;
}

const bs_named *bs_tensor_map_find(const bs_tensor_map *m, const char *name) {
  for (size_t i = 0; m && name && i < m->n; i++)
    if (strcmp(m->e[i].name, name) == 0)
      return &m->e[i];
  return NULL;
}
