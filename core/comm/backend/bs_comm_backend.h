/* Internal to the communicator: the backend vtable, what the front hands
 * a backend and the calls the backends make back into the front. The
 * structures themselves are in comm/front/bs_comm_state.h. */
#ifndef BS_COMM_BACKEND_H
#define BS_COMM_BACKEND_H

#include "comm/bs_comm.h"
#include "comm/front/bs_flight.h"
#include "comm/front/bs_pg.h"
#include "comm/front/bs_watchdog.h"

/* One collective as the front hands it to a backend. */
typedef struct bs_coll_args {
  bs_coll op;
  const void *send;
  void *recv; /* broadcast: the buffer */
  size_t count;
  bs_dtype dt;
  bs_redop redop;
  int root;
  bool host;               /* host buffers: the front's own exchanges */
  uint64_t seq;            /* collective_seq_id */
  const char *label;       /* static or NULL: "fingerprint", "agree", ... */
  int pg;                  /* the process group's id (bs_pg; 0: the world's) */
  int peer;                /* send/recv: the peer's global rank */
  char name[BS_COLL_NAME]; /* a stand-in's (bs_comm_set_next_name); "": none */
  /* A host all-gather on a backend that shares results (.shares): where it
   * puts the whole result instead of filling recv, read-only, one for every
   * rank, valid until this rank's next collective (N ranks each holding
   * their own N x count bytes is what grew with the square of the ranks). */
  const void **view;
  /* bs_comm_reduce_scatter_made: make(make_ctx) fills send once the
   * collective is admitted, just before it is read; send is dead once
   * read (consume), outside recv, so the sim may drop its pages then. */
  void (*make)(void *ctx);
  void *make_ctx;
  bool consume;
} bs_coll_args;

/* What the collective is called in reports: a stand-in's name, else its
 * op's ("all_gather"). */
const char *bs_coll_args_name(const bs_coll_args *a);

/* Bytes one rank sends and receives. */
size_t bs_coll_in_bytes(const bs_coll_args *a, int size);
size_t bs_coll_out_bytes(const bs_coll_args *a, int size);

/* Where a rank is, for the hang report. */
typedef enum bs_rank_state {
  BS_RANK_RUNNING = 0, /* between collectives */
  BS_RANK_IN_COLL,     /* inside a collective */
  BS_RANK_EXITED,      /* returned from its rank function */
  BS_RANK_DEAD         /* bs_comm_die / comm/rank_exit */
} bs_rank_state;

typedef struct bs_rank_pos {
  bs_rank_state state;
  bs_coll_args at;   /* IN_COLL: the collective (buffers unused) */
  uint64_t since_ns; /* monotonic: when it entered the state */
  uint64_t last_seq; /* last collective it completed */
  /* Teardowns of its world communicator it completed, and whether it is
   * in one now (a finalize waits for the peers that went through it). */
  uint32_t torn;
  bool tearing;
  char why[96]; /* EXITED/DEAD: how it left */
} bs_rank_pos;

typedef struct bs_comm_backend {
  const char *name;
  bool shares; /* fills bs_coll_args.view: every rank is in this process */
  bs_status (*world_init)(bs_world *w);
  void (*world_fini)(bs_world *w);
  /* On the rank's thread, before and after its rank function. */
  bs_status (*rank_init)(bs_comm *c);
  void (*rank_fini)(bs_comm *c);
  /* Moves the bytes; returns the world's abort status when woken by it.
   * BS_COLL_COMM_INIT: (re-)creates the rank's communicator, after
   * comm_destroy (a barrier where there is nothing to create). */
  bs_status (*coll)(bs_comm *c, const bs_coll_args *a);
  /* Releases the rank's communicator (bs_comm_destroy); NULL: nothing to. */
  bs_status (*comm_destroy)(bs_comm *c);
  /* The rank left (exited or died): its peers must not wait for it. */
  void (*rank_gone)(bs_comm *c);
  /* Wakes every local waiter: the world's abort status is already set. */
  void (*wake)(bs_world *w);
  /* As wake, without a lock, callable with any backend lock held:
   * bs_world_fail calls it once, at the world's first failure, so that
   * waiters sleep until woken instead of looking every few milliseconds
   * (thousands of ranks looking is what starved the ranks they wait
   * for). NULL: the backend's waiters look for themselves. */
  void (*nudge)(bs_world *w);
  /* Where the backend keeps one failure for the whole job (the sim across
   * processes: its shared header), makes it this world's (bs_world_adopt)
   * once this world has failed; NULL: the world's own failure is the job's
   * (one process) or the notes of abort_dir settle it (NCCL). */
  void (*settle)(bs_world *w);
  /* On the watchdog thread every tick_ms (0: every millisecond): another
   * process's failure reaches this world even when none of its ranks waits
   * in a collective (the sim across processes); NULL: nothing to look at.
   * Hundreds of processes ticking every millisecond is what slows them. */
  void (*tick)(void *w);
  int tick_ms;
  /* Process groups (bs_comm_group.c). group_new makes the state the members of
   * pg in this process share (once, under the world's lock; group_free at
   * the world's end); group_rank_init and _fini, on a member's thread, its
   * own part of the group g. NULL: the backend has no groups. */
  bs_status (*group_new)(bs_world *w, bs_pg *pg);
  void (*group_free)(bs_world *w, bs_pg *pg);
  bs_status (*group_rank_init)(bs_comm *g);
  void (*group_rank_fini)(bs_comm *g);
  /* Point-to-point ops of c's group (peers: group ranks), issued together,
   * done when all are; done[i] set as op i completes (read on a failure:
   * which ops of ops with their own seqs a rank no longer waits in). NULL:
   * the backend has none. */
  bs_status (*p2p)(bs_comm *c, const bs_p2p_op *ops, size_t n, bool *done);
  /* bs_comm_p2p_pair: c's communicator of the pair (c's rank, peer), for
   * calls whose ops have their own seqs. NULL: the backend needs none. */
  bs_status (*p2p_pair)(bs_comm *c, int peer);
} bs_comm_backend;

extern const bs_comm_backend bs_comm_sim_backend;
/* sim across processes of one host: the board in o.shm_path. */
extern const bs_comm_backend bs_comm_shm_backend;
#ifdef BS_HAVE_NCCL
extern const bs_comm_backend bs_comm_nccl_backend;
/* bs_world_nccl_info's answer where the build has NCCL. */
bs_status bs_comm_nccl_info(bs_nccl_info *out);
#endif

/* What a backend reads of the front's state: the NCCL backend sees no
 * more than these; the simulator, which is the world's own machinery,
 * sees the structures (comm/front/bs_comm_state.h, ci/layers.py). */
bs_world *bs_comm_front_world(const bs_comm *c);
int bs_comm_front_local(const bs_comm *c); /* index among the world's ranks */
void *bs_comm_front_impl(const bs_comm *c);
void bs_comm_front_set_impl(bs_comm *c, void *impl);
/* c's process group (NULL on the world's own handle). */
bs_pg *bs_comm_front_pg(const bs_comm *c);
/* Where c's rank is now (read under the world's lock). */
bs_rank_pos bs_comm_front_pos(const bs_comm *c);
/* A wait of the backend's outside bs_comm_front_wait (NCCL's communicator
 * at the world's start, settled within the timeout and a start grace):
 * the rank is shown in `shown` until show_running, so that a run cut off
 * at its deadline there reads as a watched wait, not as a rank between
 * ops (a hang). */
void bs_comm_front_show_wait(bs_comm *c, const bs_coll_args *shown);
void bs_comm_front_show_running(bs_comm *c);
/* The p2p op a rank waits in, where its call's ops have their own seqs
 * (each completes on its own): shown until the next. */
void bs_comm_p2p_show(bs_comm *c, const bs_p2p_op *op);
/* The world's options, normalised (size, timeout, global size, ...). */
const bs_world_opts *bs_world_options(const bs_world *w);
void *bs_world_impl(const bs_world *w);
void bs_world_set_impl(bs_world *w, void *impl);

/* Thousands of rank threads computing at once on a few cores all finish
 * late together (each gets 1/N of the machine): nothing arrives anywhere
 * for longer than a timeout, which is start-up slowness, not a stall.
 * Taking turns, a few at a time, they arrive one after another. */
#define BS_WORLD_RUNNING_MAX 64
/* The rank takes (true) or gives back its turn to run. Once the world
 * has failed a rank runs without one: its failure returns at once. */
void bs_world_turn(bs_comm *c, bool take);

/* How the world's ranks wait and what time it is for them
 * (bs_world_sched.c): under the world's scheduler, one rank at a time on
 * virtual time, or as real threads on the real clock. The schedule is the
 * options' (else BS_SCHEDULE's, else threads); a world that is not every
 * rank a thread of this process on the sim runs real threads. */
bs_status bs_world_sched_create(bs_world *w);
/* The world's clock: virtual, or CLOCK_MONOTONIC (from any thread). */
uint64_t bs_world_sched_now(const bs_world *w);
/* On a rank: it sleeps ns (real or virtual). */
void bs_world_sched_sleep(bs_world *w, uint64_t ns);
/* On a rank: work that takes a real rank ns, spent on the virtual clock (a
 * scheduling point); nothing on real threads, whose work takes its time. */
void bs_world_sched_spend(bs_world *w, uint64_t ns);
/* On a rank of a scheduled world: a scheduling point (another rank may
 * run first); nothing on real threads. */
void bs_world_sched_yield(bs_world *w);
/* The modelled time of moving bytes (a collective's, an engine stream's). */
uint64_t bs_world_sched_cost(size_t bytes);
/* On a rank: sleeps while *word is seen, at most ns (a futex, or the
 * scheduler's wait); bs_world_sched_bump moves the word and wakes its
 * sleepers, from any thread, any lock held. */
void bs_world_sched_wait(bs_world *w, _Atomic uint32_t *word, uint32_t seen,
                         uint64_t ns);
void bs_world_sched_bump(bs_world *w, _Atomic uint32_t *word);
/* The same with a key: on real threads the sleep is on word, as above;
 * under the scheduler on key, and bs_world_sched_signal(w, word, key)
 * wakes only the sleepers of that key (bs_world_sched_notify: of that key,
 * without moving a word). So a change that lets some waiters go on wakes
 * those, not every rank asleep on the board (a thread switch each, to
 * look and sleep again). */
void bs_world_sched_wait_key(bs_world *w, _Atomic uint32_t *word, uint32_t seen,
                             const void *key, uint64_t ns);
void bs_world_sched_signal(bs_world *w, _Atomic uint32_t *word,
                           const void *key);
void bs_world_sched_notify(bs_world *w, const void *key);
/* On a rank: waits until the world fails or its clock reaches until_ns. */
void bs_world_sched_until_failed(bs_world *w, uint64_t until_ns);
/* On a rank of a scheduled world: it steps outside the schedule (true)
 * around a wait the scheduler cannot see, or back (false); false, doing
 * nothing, where the world has no scheduler. */
bool bs_world_sched_outside(bs_world *w, bool out);

/* Records the first failure of the world (cause, report, stall time) and
 * sets its abort status; returns the status in effect (an earlier failure
 * wins). The report describes the world's ranks, or the npos global ranks
 * of pos when given (what a fingerprint exchange learnt). Wakes no one but
 * through the backend's nudge (lock-free): the caller may hold a backend
 * lock. */
bs_status bs_world_fail(bs_world *w, bs_status why, uint64_t stall_ns,
                        const bs_rank_pos *pos, int npos, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* bs_world_fail, then wakes every local waiter. No backend lock held. */
void bs_world_abort(bs_world *w, bs_status why, uint64_t stall_ns,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
bs_status bs_world_abort_status(const bs_world *w);
/* Whether a rank at p waits in a collective (or a teardown) of the world
 * communicator that the process whose note failed this world had gone
 * through on every rank: every peer joined it, so it completes here too,
 * and a wait in it must not abort it (it stays bounded by the timeout). */
bool bs_world_joined_by_failer(bs_world *w, const bs_rank_pos *p);
/* The failure of a rank that waited past the timeout in its collective. */
bs_status bs_world_timeout(bs_world *w, int rank, uint64_t since_ns);
/* The one-line cause of the world's failure, copied. */
void bs_world_cause(bs_world *w, char *buf, size_t n);
/* The culprit the world's failure names (a timeout's lowest waiting rank,
 * read from the cause, so that every process of a job finds the same): its
 * global rank, else -1. */
int bs_world_culprit(bs_world *w);
/* The world's failure as the whole job settles it: alone, its own; across
 * processes (abort_dir), the winner of every process's note (bs_abort.h),
 * waited for within a bound, so that every rank of every process returns
 * the same status and cause. Returns the settled status (BS_OK while the
 * world is healthy). */
bs_status bs_world_settle(bs_world *w);
/* Takes the job's failure as this world's: status, stall, cause, and the
 * report rewritten around them (a no-op when it is this world's own). */
void bs_world_adopt(bs_world *w, bs_status st, uint64_t stall_ns,
                    const char *cause);

/* bs_world_run keeps the world in the registry of running worlds
 * (bs_world_running_each) while its ranks run. */
void bs_world_running(bs_world *w, bool running);

/* The rank leaves the communicator (how: EXITED or DEAD): the world marks
 * it gone (bs_world_leave), and the front's bs_comm_leave is that. */
void bs_comm_leave(bs_comm *c, bs_rank_state how, const char *why);
void bs_world_leave(bs_comm *c, bs_rank_state how, const char *why);

/* The front's steps that point-to-point shares with the collectives
 * (bs_comm.c): admission (the rank is here, the world healthy) and the
 * watched wait. */
bs_status bs_comm_front_admit(bs_comm *c, bs_coll_args *a);
/* One wait in the backend, op(c, arg), watched, the rank's turn given
 * while it waits; the error record of a failure names shown. */
bs_status bs_comm_front_wait(bs_comm *c, const bs_coll_args *shown,
                             uint64_t done_seq,
                             bs_status (*op)(bs_comm *c, const void *arg),
                             const void *arg);
/* The world's process groups now (caller frees the array; *n of them),
 * copied under its lock: they live as long as the world, and a caller
 * that takes a board's or a list's lock must not hold the world's. */
bs_pg **bs_world_pgs_copy(bs_world *w, int *n);
/* Frees the world's process groups (bs_comm_group.c), at its end. */
void bs_world_pgs_free(bs_world *w);
/* The size of c's communicator (its group's) and c's rank in it. */
int bs_comm_front_size(const bs_comm *c);
int bs_comm_front_rank(const bs_comm *c);

/* The report block (caller frees). */
typedef struct bs_report_in {
  bs_status status;
  const char *cause;
  const char *backend;
  int size, first_rank;
  int world; /* ranks of the job (more than size in a process of it) */
  const bs_rank_pos *pos;
  uint64_t stall_ns, detect_ns;
  int timeout_ms;
  /* The world's process groups (a failure in one is reported over its
   * members); npgs 0: none. */
  bs_pg *const *pgs;
  int npgs;
} bs_report_in;
char *bs_comm_report(const bs_report_in *in);
/* Where a rank is, as the block describes it. */
struct bs_report_rank;
void bs_report_block_describe(const bs_rank_pos *p, struct bs_report_rank *r);
/* A failure in a process group or at a point-to-point op
 * (bs_comm_report_pg.c): the block over the stuck group's members (or
 * the two ranks of the stuck op), by global rank. */
bool bs_comm_report_pg_applies(const bs_report_in *in);
/* The global rank whose op such a block is about (-1: none is in one). */
int bs_comm_report_pg_focus(const bs_report_in *in);
char *bs_comm_report_pg(const bs_report_in *in, const char *status,
                        const char *tail);

#endif
