/* NCCL, loaded when the nccl backend is first asked for (dlopen), not
 * linked: the binary runs where NCCL is absent, and a user points it at
 * another NCCL without rebuilding: BS_NCCL (the library, or the folder
 * that holds libnccl.so.2), else the loader's search (LD_LIBRARY_PATH).
 * nccl.h is only needed to compile. Internal to the nccl backend. */
#ifndef BS_NCCL_LIB_H
#define BS_NCCL_LIB_H

#include <nccl.h>

#include "bs_err.h"

typedef struct bs_nccl_lib {
  ncclResult_t (*GetVersion)(int *version);
  ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
  ncclResult_t (*CommInitRankConfig)(ncclComm_t *comm, int n, ncclUniqueId id,
                                     int rank, ncclConfig_t *config);
  ncclResult_t (*CommGetAsyncError)(ncclComm_t comm, ncclResult_t *err);
  ncclResult_t (*CommAbort)(ncclComm_t comm);
  ncclResult_t (*CommFinalize)(ncclComm_t comm);
  ncclResult_t (*CommDestroy)(ncclComm_t comm);
  ncclResult_t (*AllGather)(const void *send, void *recv, size_t count,
                            ncclDataType_t t, ncclComm_t comm,
                            cudaStream_t stream);
  ncclResult_t (*ReduceScatter)(const void *send, void *recv, size_t count,
                                ncclDataType_t t, ncclRedOp_t op,
                                ncclComm_t comm, cudaStream_t stream);
  ncclResult_t (*AllReduce)(const void *send, void *recv, size_t count,
                            ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                            cudaStream_t stream);
  ncclResult_t (*Broadcast)(const void *send, void *recv, size_t count,
                            ncclDataType_t t, int root, ncclComm_t comm,
                            cudaStream_t stream);
  ncclResult_t (*GroupStart)(void);
  ncclResult_t (*GroupEnd)(void);
  ncclResult_t (*Send)(const void *send, size_t count, ncclDataType_t t,
                       int peer, ncclComm_t comm, cudaStream_t stream);
  ncclResult_t (*Recv)(void *recv, size_t count, ncclDataType_t t, int peer,
                       ncclComm_t comm, cudaStream_t stream);
  const char *(*GetErrorString)(ncclResult_t r);
  const char *(*GetLastError)(ncclComm_t comm);
  int version;    /* ncclGetVersion: 23007 for 2.30.7 */
  char path[512]; /* what was loaded */
} bs_nccl_lib;

/* The library, loaded once per process (thread-safe); BS_ERR_UNSUPPORTED
 * naming what was tried and why it failed. */
bs_status bs_nccl_lib_get(const bs_nccl_lib **out);

#endif
