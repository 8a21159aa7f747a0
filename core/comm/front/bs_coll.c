/* A collective's names and sizes, as the flight recorder, the reports and
 * the backends see them. */
#include "comm/front/bs_comm_state.h"

#include <string.h>

const char *bs_coll_name(bs_coll c) {
  static const char *const names[BS_COLL_COUNT] = {
      [BS_COLL_ALL_GATHER] = "nccl:all_gather",
      [BS_COLL_REDUCE_SCATTER] = "nccl:reduce_scatter",
      [BS_COLL_ALL_REDUCE] = "nccl:all_reduce",
      [BS_COLL_BROADCAST] = "nccl:broadcast",
      [BS_COLL_BARRIER] = "nccl:barrier",
      [BS_COLL_COMM_INIT] = "nccl:comm_init",
      [BS_COLL_SEND] = "nccl:send",
      [BS_COLL_RECV] = "nccl:recv",
  };
  return (unsigned)c < BS_COLL_COUNT ? names[c] : "nccl:unknown";
}

const char *bs_coll_args_name(const bs_coll_args *a) {
  return a->name[0] ? a->name : bs_coll_name(a->op) + strlen("nccl:");
}

size_t bs_coll_in_bytes(const bs_coll_args *a, int size) {
  size_t chunk = a->count * bs_dtype_size(a->dt);
  if (!bs_coll_has_data(a->op))
    return 0;
  return a->op == BS_COLL_REDUCE_SCATTER ? chunk * (size_t)size : chunk;
}

size_t bs_coll_out_bytes(const bs_coll_args *a, int size) {
  size_t chunk = a->count * bs_dtype_size(a->dt);
  if (!bs_coll_has_data(a->op))
    return 0;
  return a->op == BS_COLL_ALL_GATHER ? chunk * (size_t)size : chunk;
}

bool bs_coll_has_data(bs_coll c) {
  return c != BS_COLL_BARRIER && c != BS_COLL_COMM_INIT;
}
