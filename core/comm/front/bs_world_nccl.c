/* What the NCCL this process would load says of itself: apart from the
 * world, so that the world's own code never calls into a backend (the
 * backends call the world). */
#include "comm/front/bs_comm_state.h"

#include <string.h>

bs_status bs_world_nccl_info(bs_nccl_info *out) {
#ifdef BS_HAVE_NCCL
  return bs_comm_nccl_info(out);
#else
  memset(out, 0, sizeof *out);
  return bs_err_fail(BS_ERR_UNSUPPORTED, NULL,
                     "backend nccl: this build has no NCCL (configure where "
                     "CUDA and NCCL are installed)");
#endif
}
