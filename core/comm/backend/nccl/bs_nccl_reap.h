/* Communicators freed off the rank's path. ncclCommDestroy and
 * ncclCommAbort of a communicator with its own proxy join NCCL's UDS
 * service thread, which checks its stop flag only between 500 ms polls
 * (NCCL 2.30 src/proxy.cc ncclProxyServiceUDS, joined in commFree,
 * src/init.cc): every destroy took 0.5 s, half of a run's time on the
 * H200 (docs/performance.md). The rank hands the communicator over and
 * goes on, as it already did with a failed one; its GPU memory is back
 * within those 0.5 s. bs_nccl_reap_all waits for every hand-over: when
 * the next world starts (a pool worker's next run: by then they are done)
 * and at the process's exit. Internal to the nccl backend. */
#ifndef BS_NCCL_REAP_H
#define BS_NCCL_REAP_H

#include <nccl.h>

#include <stdbool.h>

/* Frees comm on a thread of its own: ncclCommAbort when abort, else
 * ncclCommDestroy (ncclCommFinalize already settled). Where no thread can
 * be had, here and now. */
void bs_nccl_reap(ncclComm_t comm, bool abort);

/* Waits for every communicator handed over so far (also run at exit). */
void bs_nccl_reap_all(void);

#endif
