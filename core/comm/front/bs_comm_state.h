/* The world's and a rank's state, private to the communicator's front
 * and to the simulator (the world's own machinery: its ranks' positions,
 * locks and shared results are the sim's to read). The NCCL backend goes
 * through bs_comm_backend.h's accessors instead (ci/layers.py checks who
 * includes this). */
#ifndef BS_COMM_STATE_H
#define BS_COMM_STATE_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

#include "bs_sched.h"
#include "comm/backend/bs_comm_backend.h"
#include "comm/front/bs_world_stacks.h"

struct bs_comm {
  bs_world *w;
  int rank;  /* local index */
  int grank; /* global rank */
  bs_dev *dev;
  uint64_t seq;                 /* last collective_seq_id issued */
  char next_name[BS_COLL_NAME]; /* bs_comm_set_next_name's, until used */
  bs_flight *fr;
  bool gone;        /* exited or dead: later collectives fail fast */
  bool destroyed;   /* bs_comm_destroy: no communicator until bs_comm_init */
  uint64_t fail_ns; /* when a collective first returned the world's failure */
  void *swapped;    /* comm/diverge: the buffer of a swapped shared result */
  bool turn;        /* it holds one of the world's turns (bs_world_turn) */
  /* Waited for a turn between the world's failure and fail_ns: the
   * simulator's cores shared by thousands of ranks, where a real rank has
   * its own, so not part of its detection time (bs_world_detect_ms). */
  uint64_t queued_ns;
  uint64_t turn_wait_ns; /* every wait for a turn */
  /* Where more ranks than cores run, its run_delay (bs_clock_run_delay_ns)
   * as its last wait began: what it waited for a CPU from then until it
   * returned the failure joins queued_ns. */
  uint64_t run_delay_ns;
  void *impl;
  /* A process group's handle (bs_comm_group): its rank's world handle,
   * the group, this rank's place in it; NULL, -1 on the world's own. */
  bs_comm *parent;
  bs_pg *pg;
  int pg_rank;
  uint64_t p2p_seq; /* last p2p_seq_id issued */
};

struct bs_world {
  bs_world_opts o; /* normalised: size, timeout, slots, global size */
  const bs_comm_backend *be;
  void *impl;
  bs_comm *comms;
  bs_rank_fn fn;
  void *const *args;
  bs_watchdog *wd;
  bool ran;
  _Atomic int abort_st;         /* bs_status; BS_OK while healthy */
  _Atomic uint32_t failed_word; /* moves as the world fails: waits end */
  /* One rank at a time on virtual time (bs_world_sched.c); NULL: real
   * threads on the real clock. */
  bs_sched *sched;
  bs_world_stacks *stacks;   /* the rank threads' while they run */
  bool fibers;               /* the ranks run as fibers (bs_sched_spawn) */
  char sched_name[32];       /* the schedule in effect ("threads", "pct:3") */
  pthread_mutex_t settle_mu; /* one rank settles, the others wait for it */
  bool settled;              /* the cause below is the job's, not this one's */
  /* A scan of a shared result (bs_coll_args.view), made by the first rank
   * and read by the others (under settle_mu): what scan found in the
   * result of collective scan_seq. */
  const void *scan_fn;
  uint64_t scan_seq;
  int scan_found;
  pthread_mutex_t mu; /* guards everything below */
  bs_rank_pos *pos;
  char *report;
  bs_rank_pos *fail_pos;     /* where the ranks were at the failure (npos of */
  int fail_npos, fail_first; /* them, the first a global rank) */
  char cause[256];
  uint64_t stall_ns, end_ns;
  /* Failed by another process's note: the last world collective every
   * rank of that process completed (0: failed here, or none), and the
   * teardowns of the world communicator every one of them completed. */
  uint64_t peer_done;
  uint32_t peer_torn;
  bs_status *rank_st;
  bs_error *rank_err;
  bs_pg **pgs; /* the process groups made here, by id - 1; under mu */
  int npgs;
  size_t pgs_cap;
  /* A world of more ranks than BS_WORLD_RUNNING_MAX on real threads: at
   * most that many run outside a collective at once (bs_world_turn). */
  bool turns;
  sem_t running;
};

#endif
