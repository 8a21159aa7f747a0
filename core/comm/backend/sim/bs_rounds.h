/* The staged rendezvous behind the sim communicator, whether its ranks are
 * threads of one process (bs_comm_sim.c: the board in process memory) or
 * of several (bs_comm_shm.c: the board in a shared file mapping).
 *
 * A round (one collective on every rank) goes: wait for the previous round
 * to drain; stage this rank's input; arrive; when all N arrived with
 * matching collectives, every rank computes its own output from the staged
 * inputs (reductions in rank order 0..N-1, so every rank gets the same
 * bits) and copies it to its buffer. Staging first is what makes the
 * in-place forms safe (when every rank is in this process, the last to
 * arrive makes the whole result once, so the work of a round grows with
 * the ranks and the bytes, not with their product). Because one lock sees
 * every rank, a deadlock (every
 * live rank arrived, and a rank is gone or the collectives differ) is seen
 * the moment it happens, without waiting for the timeout.
 *
 * The board holds no pointer another rank follows: slot i belongs to
 * global rank i, and each process keeps its own view of where the staged
 * inputs are (bs_rounds.in). Internal to the communicator. */
#ifndef BS_ROUNDS_H
#define BS_ROUNDS_H

#include "comm/front/bs_comm_state.h"

/* One global rank's place on the board. */
typedef struct bs_rounds_slot {
  bs_coll_args a;      /* what it arrived with, buffers and label cleared */
  uint64_t arrived_at; /* 1 + the round it arrived at (0: none) */
  bool gone;
  bool fast; /* its last round was prepared: no gate before the next */
  uint64_t arrived_ns, gone_ns;
  uint64_t next; /* the round this rank joins next */
} bs_rounds_slot;

/* Rounds in progress: at most two, round D (the lowest not every rank has
 * left) and D+1, each on the state of its parity. Round X may assemble once
 * round X-1 executes: a rank has left X-2 before it arrives at X-1, so the
 * state of X's parity is free by then; the staged inputs are not, unless
 * X-1 was prepared (bs_rounds.red), so without that a rank waits until every
 * rank has left X-1 (the gate). */
typedef struct bs_rounds_board {
  _Atomic uint64_t departed; /* rounds every rank has left: D */
  int n;                     /* global ranks */
  /* Arrivals and departures per parity, counted without the lock: only
   * the rank that completes a count takes it (thousands of ranks queueing
   * on one lock every round is what made a large world slow). */
  _Atomic int arrived[2], done[2];
  _Atomic int gone; /* ranks that left, ever */
  _Atomic bool executing[2];
  bool prepared[2]; /* the round's whole result is in bs_rounds.red[parity] */
  /* Bumped by every broadcast; waiters sleep on it (a futex) and read the
   * board without the lock, so that thousands of ranks woken at once do
   * not queue on it. */
  _Atomic uint32_t epoch;
  /* The last arrival of any rank (monotonic ns): the progress of ranks in
   * every process, handed to each process's watchdog (bs_watchdog_hold)
   * by its waiters, which wake every slice. */
  _Atomic uint64_t held_ns;
} bs_rounds_board;

typedef struct bs_rounds bs_rounds;
struct bs_rounds {
  bs_rounds_board *b;
  bs_rounds_slot *s; /* b->n slots */
  void **in;         /* in[i]: global rank i's staged input, in this process */
  /* Every rank is a thread of this process (the board in its memory): the
   * last to arrive makes the round's whole result in red once (a
   * reduction, the gathered inputs) and each rank copies its part, and the
   * board's counts need no lock (false: ranks in other processes, each
   * working for itself, every count taken under the lock). */
  bool one_process;
  /* Per parity. A rank may read it in place (bs_coll_args.view) until its
   * next collective: the round that makes it again is two later, which
   * only begins once every rank has arrived there. */
  void *red[2];
  size_t red_cap[2];
  /* Per parity, a consumed round's (bs_coll_args.consume) running sum:
   * each rank adds its input in as it arrives and drops it, so no input
   * waits for the last rank's. sum_a: the first input's collective, which
   * the others must match to be added; sum_bad: one did not (a desync, or
   * no room for the sum), and the round cannot be prepared. */
  double *sum[2];
  size_t sum_cap[2];
  int summed[2];
  bool sum_bad[2];
  bs_coll_args sum_a[2];
  pthread_mutex_t *mu; /* guards b and s; may be robust and process-shared */
  uint64_t timeout_ns;
  uint64_t slice_ns; /* 0: a waiter sleeps until woken or timed out */
  /* Room at in[rank] for the n bytes this rank stages of collective a. */
  bs_status (*room)(bs_rounds *r, int rank, const bs_coll_args *a, size_t n);
  /* Locked, whenever a waiter wakes: news from outside this process (a
   * failure, a process that died). NULL: none can come. */
  void (*poll)(bs_rounds *r, bs_world *w);
  /* Locked, before every broadcast: tells the other processes of the
   * world's failure. NULL: there are none. */
  void (*publish)(bs_rounds *r, bs_world *w);
  /* A process group's board: slot i is the group's rank i, global rank
   * pg->members[i] (NULL: the world's board, slot i global rank i). */
  const bs_pg *pg;
};

/* Locks r->mu, making it consistent again when its owner died. Waiting is
 * done unlocked, on the board's epoch. */
void bs_rounds_lock(bs_rounds *r);
void bs_rounds_unlock(bs_rounds *r);
/* Locked: global rank leaves; its peers must not wait for it (then
 * bs_rounds_check, once every rank that left is marked). */
void bs_rounds_leave(bs_rounds *r, bs_world *w, int rank);
/* Locked: fails the world at once when the round can no longer complete
 * (every live rank arrived, and a rank is gone or the collectives differ)
 * and wakes every waiter. */
void bs_rounds_check(bs_rounds *r, bs_world *w);

/* Backend entry points of both sim backends: w->impl points at a bs_rounds
 * (the first member of the backend's state); on a group's handle, the
 * group's board (its pg->impl, a bs_rounds first too). */
bs_status bs_rounds_coll(bs_comm *c, const bs_coll_args *a);
void bs_rounds_rank_gone(bs_comm *c);
void bs_rounds_wake(bs_world *w);
/* Without the lock (any lock may be held): r's waiters wake and look at
 * the world's failure, set before. For a board of one process only (no
 * publish: the other processes learn of a failure under the lock). */
void bs_rounds_nudge(bs_rounds *r, bs_world *w);
bs_status bs_rounds_rank_init(bs_comm *c);
/* The rank leaves the boards of every group it is in (their pg->impl, a
 * bs_rounds first): their peers must not wait for it. */
void bs_rounds_leave_groups(bs_comm *c);
void bs_rounds_rank_fini(bs_comm *c);

#endif
