/* Inside the replay (bs_replay.h): the plan of every rank (bs_replay_plan),
 * its counts replaced when they would not fit (bs_replay_scale), the body
 * each rank runs (bs_replay_rank) and the watch for a signal that ends it
 * (bs_replay_stop); bs_replay.c makes the world and the text. */
#ifndef BS_REPLAY_INT_H
#define BS_REPLAY_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_dumps.h"
#include "bs_replay.h"
#include "comm/bs_comm.h"

/* One op to issue: a collective of a group, or one op of a p2p call
 * (the steps of one batch in a row, with its number). */
typedef struct bs_replay_step {
  int group;    /* in bs_dumps.groups */
  uint64_t seq; /* collective_seq_id, or the p2p call's p2p_seq_id */
  bs_coll op;
  bs_dtype dt;
  size_t count, orig; /* replayed; as recorded */
  /* A coalesced op: its tensors' sizes and dtypes as written (interned),
   * so that ranks coalescing other tensors of the same total differ. */
  const char *shape, *shape_dt;
  const char *name;    /* a stand-in's: the op as recorded (interned) */
  const char *dt_name; /* a stand-in dtype's: PyTorch's name of it */
  int peer;            /* send/recv: the peer's global rank */
  size_t batch;        /* send/recv: steps with one batch go as one call */
  uint64_t at_ns;      /* when it was made: the order across groups */
  size_t order;        /* then the order in which it was read */
} bs_replay_step;

/* A rank's p2p ops to a peer one way (send or recv) of a group before
 * number `from` are not replayed: the other side's ring forgot theirs. */
typedef struct bs_replay_skip {
  int group, rank, peer;
  bs_dump_kind kind;
  uint64_t from;
} bs_replay_skip;

typedef struct bs_replay_plan {
  bs_replay_step *s;
  size_t n, cap;
  size_t send_bytes, recv_bytes; /* the largest buffers its steps need */
} bs_replay_plan;

/* A group of the dumps as the replay makes it: the world's handle for the
 * default group, else a group over its members, ascending. */
typedef struct bs_replay_group {
  bool world;
  int *members;
  int n;
} bs_replay_group;

/* What the ranks that left no dump did, as the others' dumps say, made
 * once for all of them (thousands of such ranks each scanning every dump
 * for every collective took minutes): by group, the collectives its
 * members show completed from its start on; the completed p2p ops, by
 * the peer they name. */
typedef struct bs_replay_dumpless {
  const bs_dump_coll ***done; /* by group; NULL until made */
  size_t *ndone;
  struct bs_replay_dumpless_p2p {
    int peer, rank, group; /* the op's peer, the dump's rank, its group */
    size_t order;          /* where the dumps hold it */
    const bs_dump_coll *c;
  } * p2p;
  size_t np2p;
  bool made;
} bs_replay_dumpless;

/* A pair communicator of lone p2p ops: group ranks lo < hi of a group. */
typedef struct bs_replay_pair {
  int group; /* in bs_dumps.groups */
  int lo, hi;
} bs_replay_pair;

typedef struct bs_replay_state {
  const bs_dumps *d;
  int n;
  int local;      /* ranks in this process: n, or 1 with a process per rank */
  size_t longest; /* steps of the longest plan */
  int timeout_ms; /* the watchdog's */
  bs_replay_plan *plan;
  bs_replay_group *g; /* by bs_dumps.groups */
  uint64_t *start;    /* by group: its first collective replayed */
  bool *unpaired;     /* by group: none of its p2p ops replayed */
  /* Where a ring forgot entries: a rank's p2p ops to a peer one way
   * before number `from` are not replayed (bs_replay_pairs.c). */
  struct bs_replay_skip *skips;
  size_t nskips, skips_cap;
  bs_replay_dumpless dl;
  size_t batches;
  bs_dev **devs;
  pthread_mutex_t mu; /* guards what follows */
  pthread_cond_t cv;  /* on the monotonic clock */
  int ready;          /* ranks with their buffers, waiting to start */
  /* A process per rank: returns once every rank's process is ready
   * (bs_replay_procs_ready); NULL: every rank is a thread here. */
  void (*meet_procs)(void);
  int done; /* ranks through their plan */
  int last; /* ranks in their plan's last call (settle_ms: in any call) */
  /* By rank: the steps of the call counted in `last` (NULL: none). */
  const bs_replay_step **last_step;
  size_t *last_len;
  uint64_t moved_ns; /* when a rank last came into or out of it */
  bs_comm *any;      /* a rank's handle, once one started: to abort */
  bool stopped;      /* a signal ended the replay */
  /* Moves on when every rank has counted itself in (ready, or done) or
   * the replay ends: what a scheduled world's ranks wait on at the end
   * (bs_comm_wait_word), inside the schedule. */
  _Atomic uint32_t word;
  bool over;    /* the world has run: the watch ends */
  bool settled; /* no rank could move: the watch ended the world */
  /* When no rank can move (bs_replay_opts.settle_ms), or as settled()
   * says (under mu; the corpus's runs know where each rank ends); 0 and
   * NULL: the watchdog ends a hang. */
  int settle_ms;
  bool (*settle)(struct bs_replay_state *r, void *ctx);
  void *settle_ctx;
  /* The world is scheduled: its quiet hook (bs_replay_stop_quiet) settles
   * it, exactly; the watch only looks for a signal. */
  bool sched;
  /* Each p2p call as planned (batch), never lone ops run together: a
   * program's own ops (the corpus), not a dump's. */
  bool exact;
  /* The pair communicators the lone p2p ops need (bs_replay_calls_pairs);
   * NULL where the backend needs none. */
  bs_replay_pair *pairs;
  size_t npairs;
} bs_replay_state;

typedef struct bs_replay_rank_arg {
  bs_replay_state *r;
  int i; /* the global rank */
} bs_replay_rank_arg;

/* Group g's first collective to replay: the last one before which every
 * member's dump shows every collective done alike (bs_replay_start.c). */
uint64_t bs_replay_start_of(const bs_dumps *d, int g);
/* Which of group g's p2p ops are replayed, where a ring forgot entries
 * (bs_replay_pairs.c): r->unpaired[g], or the ops each side holds before
 * the other's oldest left out (r->skips; sorted by bs_replay_pairs_sort
 * once every group is made). */
bs_status bs_replay_pairs_make(bs_replay_state *r, int g);
void bs_replay_pairs_sort(bs_replay_state *r);
/* Whether rank's p2p op c of group g is replayed. */
bool bs_replay_pairs_keep(const bs_replay_state *r, int g, int rank,
                          const bs_dump_coll *c);
/* The n steps of a rank without a dump put in the order its peers' dumps
 * say (src[i]: step i's peer's entry where it is a p2p op, else NULL;
 * bs_replay_order.c). */
bs_status bs_replay_order(const bs_replay_state *r, bs_replay_step *s,
                          const bs_dump_coll *const *src, size_t n);

/* What the communicator runs for a recorded op (bs_replay_ops.c). */
typedef struct bs_replay_op {
  bs_coll op;
  bool stand_in; /* op stands in for it: run under the recorded name */
  bool by_out;   /* its count is its output's (a scatter's) */
} bs_replay_op;

bs_replay_op bs_replay_ops_coll(const char *op);
/* Backstop's dtype for PyTorch's name: its own, or one of the same size
 * (*stand_in then the name, static; else NULL); false when neither is
 * known. */
bool bs_replay_ops_dtype(const char *torch, bs_dtype *out,
                         const char **stand_in);
/* "  stand-ins ...: all_to_all as barrier, Double as int64\n" when any
 * step has one. */
void bs_replay_ops_said(const bs_replay_state *r, struct bs_buf *out);

/* The groups, their members ascending, where each starts. */
bs_status bs_replay_plan_groups(bs_replay_state *r);
/* Rank's ops in the order it made them, across its groups. */
bs_status bs_replay_plan_rank(bs_replay_state *r, int rank);
/* Appends a copy of s to p, its order the count before it. */
bs_status bs_replay_plan_push(bs_replay_plan *p, const bs_replay_step *s);
/* Frees what the plans of ranks without a dump were made from. */
void bs_replay_plan_free(bs_replay_state *r);
/* Sets every plan's buffer sizes; returns their total over the ranks. */
size_t bs_replay_plan_bytes(bs_replay_state *r);

/* What a replayed count stands for: a recorded count, and a coalesced
 * op's shape (NULL for one tensor). */
typedef struct bs_replay_count_key {
  size_t orig;
  const char *shape, *shape_dt;
} bs_replay_count_key;

/* The distinct counts (with their shapes) of every step, sorted (*distinct
 * is the caller's to free). */
bs_status bs_replay_scale_keys(const bs_replay_state *r,
                               bs_replay_count_key **distinct, size_t *nd);
/* Two shapes of one total: as recorded, their counts would match. */
bool bs_replay_scale_collide(const bs_replay_count_key *v, size_t m);
/* Each distinct count becomes its rank among them (1, 2, ...). */
void bs_replay_scale_apply(bs_replay_state *r, const bs_replay_count_key *v,
                           size_t m);

/* The call at s (of the left steps of a plan): a collective, a p2p batch,
 * or lone p2p ops in a row, issued together, each completing on its own
 * (not in an exact replay); its step count. own: its p2p ops each carry
 * their own p2p_seq_id (each is an op of its own, not one batch's). */
size_t bs_replay_calls_len(const bs_replay_state *r, const bs_replay_step *s,
                           size_t left, bool *own);
/* Every pair of group ranks (lo < hi) of a group whose ops of their own
 * (own above) meet in some rank's plan, either side's: both members make
 * its communicator (ProcessGroupNCCL's "lo:hi" one) or neither does.
 * Sorted by group, lo, hi: every rank makes its pairs in this one order,
 * so that the least pair not yet made always has both members at it and
 * the pairwise inits cannot wait on each other in a cycle. *out is the
 * caller's to free. */
bs_status bs_replay_calls_pairs(const bs_replay_state *r, bs_replay_pair **out,
                                size_t *n);

/* "  lone p2p ops on a pair communicator each: group 0: 0:1, 1:2 (2,
 * group ranks)\n" when there are pairs (the first 16). */
void bs_replay_calls_said(const bs_replay_state *r, struct bs_buf *out);

/* The rank body (bs_rank_fn; arg a rank_arg). */
bs_status bs_replay_rank_run(bs_comm *c, void *arg);

/* Watches for a signal (bs_stop.h) while r's world runs: it aborts the
 * world and wakes the ranks' own waits. */
bs_status bs_replay_stop_start(bs_replay_state *r, pthread_t *t);
/* The world has run: the watch ends (joined). */
void bs_replay_stop_end(bs_replay_state *r, pthread_t t);
/* A scheduled world's quiet hook (bs_world_opts.quiet; ctx the state):
 * every rank waits for another, so when each is where r settles, the
 * world ends as the watch ends it, with no quiet time to wait out. */
void bs_replay_stop_quiet(void *ctx);
/* r->sched from w's schedule. */
void bs_replay_stop_sched(bs_replay_state *r, const bs_world *w);

#endif
