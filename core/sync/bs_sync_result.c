/* What the engine reported (bs_sync_result.h). */
#include "sync/bs_sync_result.h"

#include <stdlib.h>
#include <string.h>

void bs_sync_result_free(bs_sync_result *r) {
  if (!r)
    return;
  free(r->received);
  free(r->names);
  memset(r, 0, sizeof *r);
}
