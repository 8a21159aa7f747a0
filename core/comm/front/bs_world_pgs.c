/* The world's table of process groups (bs_comm_group.c makes them): a
 * copy of it for those that must not hold the world's lock, and its end
 * with the world. */
#include "comm/front/bs_comm_state.h"

#include <stdlib.h>
#include <string.h>

bs_pg **bs_world_pgs_copy(bs_world *w, int *n) {
  pthread_mutex_lock(&w->mu);
  *n = w->npgs;
  bs_pg **pgs = *n ? malloc((size_t)*n * sizeof *pgs) : NULL;
  if (pgs)
    memcpy(pgs, w->pgs, (size_t)*n * sizeof *pgs);
  else
    *n = 0;
  pthread_mutex_unlock(&w->mu);
  return pgs;
}

void bs_world_pgs_free(bs_world *w) {
  for (int i = 0; i < w->npgs; i++) {
    if (w->be->group_free)
      w->be->group_free(w, w->pgs[i]);
    bs_pg_free(w->pgs[i]);
  }
  free(w->pgs);
  w->pgs = NULL;
  w->npgs = w->pgs_cap = 0;
}
