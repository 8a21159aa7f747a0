/* The communicator seam. Every collective passes through one front
 * (bs_comm.c) that numbers it, records it in the rank's flight recorder,
 * optionally checks a cross-rank fingerprint and is watched by the watchdog;
 * the backends (sim: threads of one process, or of several processes of
 * one host through a shared file; nccl: one GPU per thread or process)
 * only move bytes. Buffers are device pointers of the rank's
 * bs_dev (plain host memory when the rank has no bs_dev). Every call returns
 * an error instead of blocking forever. */
#ifndef BS_COMM_H
#define BS_COMM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_dtype.h"
#include "bs_err.h"
#include "bs_limits.h" /* BS_WORLD_MAX_RANKS */
#include "dev/bs_dev.h"

typedef enum bs_redop { BS_SUM = 0, BS_MAX, BS_MIN, BS_REDOP_COUNT } bs_redop;

typedef enum bs_coll {
  BS_COLL_ALL_GATHER = 0,
  BS_COLL_REDUCE_SCATTER,
  BS_COLL_ALL_REDUCE,
  BS_COLL_BROADCAST,
  BS_COLL_BARRIER,
  BS_COLL_COMM_INIT, /* a communicator's (re-)creation: bs_comm_init */
  BS_COLL_SEND,      /* point-to-point (bs_comm_p2p): one side each */
  BS_COLL_RECV,
  BS_COLL_COUNT
} bs_coll;
const char *bs_coll_name(bs_coll c); /* "nccl:all_gather", ... */
/* Whether the collective moves bytes (not a barrier or an init). */
bool bs_coll_has_data(bs_coll c);

/* One collective as a rank's flight recorder holds it: the fields of its
 * dump's entry that say what ran, each cut to its room as a reader of the
 * dump cuts it (the uniform-schedule oracle compares them across ranks,
 * the timeline draws them). */
typedef struct bs_coll_rec {
  long seq;       /* collective_seq_id */
  char op[32];    /* profiling_name: "nccl:all_gather" */
  char label[32]; /* "agree", "check_same", "" */
  char shape[96]; /* sizes and dtypes, as one comparable string */
  char state[16]; /* scheduled | started | completed */
  char phase[32]; /* the outermost frame: the lifecycle phase it ran in */
  double t_created_ms, t_started_ms, t_completed_ms; /* realtime; < 0 none */
} bs_coll_rec;

typedef struct bs_comm bs_comm;   /* one rank's handle */
typedef struct bs_world bs_world; /* the group of all local ranks */

/* Bytes of one collective's input each rank can stage in a sim world
 * spread over processes (shm_path); more is BS_ERR_NOMEM. */
#define BS_SHM_STAGE_CAP ((size_t)64 << 20)

typedef struct bs_world_opts {
  const char *backend; /* "sim" (default) or "nccl" */
  int size;            /* ranks in this process (threads) */
  int timeout_ms;      /* watchdog; 0: default 10000 */
  bool fingerprint;    /* check op/count/dtype/seq across ranks first */
  int flight_slots;    /* flight recorder ring size; 0: default 256 */
  /* Where each rank's flight recorder is written as flight_rank<R>.json
   * when a run fails; NULL: nowhere (bs_world_flight_json still works). */
  const char *flight_dir;
  /* Process-per-rank (nccl: multi-node; sim: one host): the ranks of this
   * process are first_rank .. first_rank+size-1 of global_size, and the
   * NCCL unique id travels through uid_path (global rank 0 writes it, the
   * others poll for it within the timeout). global_size 0: every rank is in
   * this process. */
  int global_size;
  int first_rank;
  const char *uid_path;
  /* sim, process-per-rank (one host): the file that holds the ranks'
   * shared rendezvous, staging included (a sparse file of global_size x
   * BS_SHM_STAGE_CAP bytes and more). The process of global rank 0
   * creates it, the others poll for it within the timeout and map it. */
  const char *shm_path;
  /* Process-per-rank: the folder where this world publishes its first
   * failure and finds the other processes' (bs_abort.h), so that a
   * failure anywhere stops every process at once and alike. NULL: none. */
  const char *abort_dir;
  /* The processes that publish there (each fails and publishes once);
   * 0: global_size / size. */
  int procs;
  /* How the ranks take turns, where every rank is a thread of this process
   * on the sim: "random" or "pct:D" (one rank runs at a time, each point
   * where it would block hands over to a scheduler that picks the next
   * from schedule_seed, on a virtual clock: a run is a function of its
   * options and seed, whatever the machine's load; bs_sched.h), or
   * "threads" (real threads on the real clock, as TSan needs to see
   * races). NULL: BS_SCHEDULE's, else threads. Other worlds (NCCL, ranks
   * in several processes) run real threads on real time whatever it says;
   * bs_world_sched_name tells which. */
  const char *schedule;
  uint64_t schedule_seed;
  /* Ranks step outside the schedule (bs_comm_idle, around a wait the
   * scheduler cannot see): each needs a thread of its own. Else a
   * scheduled world whose ranks all have host devices runs them as fibers
   * on the thread that runs it (bs_sched_spawn). */
  bool outside;
  /* A scheduled world's deadline: when its virtual clock would pass
   * deadline_ms (from the world's creation), past(past_ctx) runs on the
   * deciding thread with every rank parked (a run's hang dump), and
   * should end the process. 0 or NULL: none. Real threads have none:
   * their deadline is their parent's, on real time. */
  double deadline_ms;
  void (*past)(void *ctx);
  void *past_ctx;
  /* A scheduled world's ranks all wait for one another (none can run,
   * none sleeps: only a rank's return from outside or a bound could move
   * one): quiet(quiet_ctx) runs on the deciding thread with every rank
   * parked, and may end the world (bs_comm_abort). Exact where real
   * threads can only guess from a quiet time. NULL: none; real threads
   * never call it. */
  void (*quiet)(void *ctx);
  void *quiet_ctx;
} bs_world_opts;

/* What the nccl backend finds here: NCCL's version code (23007 for 2.30.7),
 * the library it loaded (BS_NCCL, else the loader's libnccl.so.2) and the
 * GPUs visible. It loads NCCL and initialises CUDA, so ask from a process
 * that forks no CUDA users afterwards (a probe child). BS_ERR_UNSUPPORTED
 * with the reason when the build has no NCCL or it cannot be loaded. */
typedef struct bs_nccl_info {
  int version, gpus;
  char lib[512];
} bs_nccl_info;
bs_status bs_world_nccl_info(bs_nccl_info *out);
/* The first NCCL that runs several ranks on one GPU (with
 * NCCL_MULTI_RANK_GPU_ENABLE=1); older ones refuse a shared GPU. */
#define BS_NCCL_SHARED_GPU_MIN 23000

/* The rank body: runs on its own thread with rank's comm and the bs_dev. */
typedef bs_status (*bs_rank_fn)(bs_comm *c, void *arg);

/* BS_ERR_UNSUPPORTED with the reason when the backend cannot run here (no
 * NCCL in this build, no GPU), BS_ERR_CONFIG for bad options. */
bs_status bs_world_create(const bs_world_opts *o, bs_world **out);
void bs_world_destroy(bs_world *w);
/* Runs fn on every rank (one thread each), waits for all; per-rank results
 * and error records are kept in the world. devs[r] is rank r's device (devs
 * or devs[r] NULL: buffers are host memory); args may be NULL. A world runs
 * once. Returns the worst rank status; this thread's error record then
 * holds the record of the lowest rank with it. */
bs_status bs_world_run(bs_world *w, bs_dev *const *devs, bs_rank_fn fn,
                       void *const *args);
/* The address space a rank thread's stacks take (its stack, its signal
 * stack, their guards); 0 in a sanitizer's build (glibc's, of a size the
 * build does not fix). */
size_t bs_world_stacks_reserve_bytes(void);
/* rank: local index 0..size-1 (the global rank when all ranks are local). */
bs_status bs_world_rank_status(const bs_world *w, int rank, bs_error *err);
/* The hang/desync report of the last failure ("" when none). */
const char *bs_world_report(const bs_world *w);
/* Milliseconds from the moment a collective could no longer complete to the
 * moment every local rank had returned from a collective with the error
 * (ranks that never issued one since: the moment they all ended); < 0 when
 * nothing was contained. */
double bs_world_detect_ms(const bs_world *w);
/* The schedule the world runs ("threads", "random", "pct:3"), the decisions
 * its scheduler made so far and their hash (FNV-1a of each decision's rank
 * and virtual time: one seed, one schedule; 0 and 0 on real threads). */
const char *bs_world_sched_name(const bs_world *w);
/* Whether its ranks take turns under a scheduler (not "threads"). */
bool bs_world_sched_on(const bs_world *w);
uint64_t bs_world_sched_steps(const bs_world *w);
uint64_t bs_world_sched_hash(const bs_world *w);
/* Flight recorder of local rank r as JSON (caller frees; NULL on error). */
char *bs_world_flight_json(const bs_world *w, int rank);
/* As bs_world_flight_json, with the default group's members (every rank of
 * the world, 16,384 numbers in each of 16,384 dumps: 1.9 GB held at once)
 * marked instead: a dump to keep in memory, whose readers ignore them.
 * bs_world_flight_expand makes it the dump bs_world_flight_json writes
 * (any other is copied); caller frees, NULL when out of memory. */
char *bs_world_flight_json_marked(const bs_world *w, int rank);
char *bs_world_flight_expand(const char *json);
/* Local rank r's flight recorder entries, oldest first, as a reader of its
 * dump reads them (caller frees *out; BS_ERR_NOMEM). */
bs_status bs_world_flight_colls(const bs_world *w, int rank, bs_coll_rec **out,
                                size_t *n);
/* Writes every rank's flight recorder to dir/flight_rank<R>.json. */
bs_status bs_world_dump_flight(const bs_world *w, const char *dir);

int bs_comm_rank(const bs_comm *c); /* global rank */
int bs_comm_size(const bs_comm *c); /* global size */
/* Ranks of the world that are threads of this process. */
int bs_comm_local_size(const bs_comm *c);
bs_dev *bs_comm_dev(const bs_comm *c);
/* Sequence id of the last collective this rank issued (0: none yet). */
uint64_t bs_comm_seq(const bs_comm *c);
/* How long the rank has waited for a CPU so far, where its world has more
 * ranks than run at once (else 0): for a turn (bs_world_turn), and, called
 * on the rank's own thread, runnable but not running (the kernel's
 * run_delay). The simulator's few cores shared by thousands of ranks: time
 * a real rank, on its own GPU and CPU, does not spend. */
double bs_comm_cpu_wait_ms(const bs_comm *c);
/* Where the rank's time went up to now (its own thread), for the share of
 * a stretch that was the simulator's (bs_comm_cpu_wait_ms_since). */
typedef struct bs_comm_times {
  double waited_ms; /* bs_comm_cpu_wait_ms */
} bs_comm_times;
bs_comm_times bs_comm_times_now(const bs_comm *c);
/* Of the time since t0 (on the rank's own thread), what it waited for a
 * CPU: bs_comm_cpu_wait_ms's share. A scheduled world waits for none: its
 * clock moves only as its ranks spend time. */
double bs_comm_cpu_wait_ms_since(const bs_comm *c, const bs_comm_times *t0);
/* Around a wait of the rank, outside any collective, for other ranks of
 * this process (a start line they all reach): idle, it gives up its turn
 * to run (a world of more than 64 ranks runs 64 at once outside its
 * collectives; a scheduled world runs one: the rank steps outside the
 * schedule), so that those it waits for can come; false takes one again.
 * Without it, 64 ranks waiting there (one, scheduled) wait for ever. */
void bs_comm_idle(bs_comm *c, bool idle);
/* A wait of the rank's on a word of the caller's, outside any collective:
 * until *word is no longer seen, ns pass, or a wake for another reason
 * (the caller looks again). On the world's scheduler (its clock) where it
 * has one, so a scheduled world's rank never steps outside for it; a
 * futex on real threads. bs_comm_wake_word (any thread, any comm of the
 * world) moves the word on and wakes its waiters. */
void bs_comm_wait_word(bs_comm *c, _Atomic uint32_t *word, uint32_t seen,
                       uint64_t ns);
void bs_comm_wake_word(bs_comm *c, _Atomic uint32_t *word);
/* Work outside the communicator that a real rank spends time on (the
 * exchange with its engine process: one step of the schedule, its real
 * wait aside), as the time bytes take to move: on a scheduled world's
 * virtual clock (a scheduling point); nothing on real threads, whose work
 * takes its own time. */
void bs_comm_spend(bs_comm *c, size_t bytes);
/* The rank sleeps ms on its world's clock, outside the communicator (a
 * rank busy elsewhere, a program's sleep): real time on real threads,
 * virtual in a scheduled world, where the others run meanwhile. */
void bs_comm_sleep_ms(bs_comm *c, int ms);
/* Numbers this rank's next collective seq (a replay goes on where a job's
 * dumps start); BS_ERR_INVALID unless seq is past the last one issued. */
bs_status bs_comm_set_next_seq(bs_comm *c, uint64_t seq);
/* Longest name of a stand-in collective, its NUL included. */
#define BS_COLL_NAME 24
/* Names this rank's next collective: it runs as the op it is issued as,
 * but is recorded, reported and fingerprinted (ranks must agree on the
 * name too) as name, cut to BS_COLL_NAME - 1 characters. A replay's
 * stand-in for an op the communicator lacks (all_to_all, gather, ...). */
void bs_comm_set_next_name(bs_comm *c, const char *name);

/* count is per rank for all_gather (send count) and reduce_scatter (recv
 * count); recv of all_gather and send of reduce_scatter hold size*count.
 * In place as in NCCL: all_gather with send == recv + rank*count,
 * reduce_scatter with recv == send + rank*count, all_reduce with
 * send == recv. */
bs_status bs_comm_all_gather(bs_comm *c, const void *send, void *recv,
                             size_t count, bs_dtype dt);
bs_status bs_comm_reduce_scatter(bs_comm *c, const void *send, void *recv,
                                 size_t count, bs_dtype dt, bs_redop op);
bs_status bs_comm_all_reduce(bs_comm *c, const void *send, void *recv,
                             size_t count, bs_dtype dt, bs_redop op);
/* A summing reduce-scatter of a buffer made for it and dead after it, as
 * Megatron's grad buckets are (a bucket's backward hook launches its
 * reduce-scatter as soon as its grads are ready; nothing reads them again
 * but each rank's own shard): make(ctx) fills send once the collective
 * is admitted (its fingerprint exchanged), just before it is read, and
 * send's bytes outside recv may read zero afterwards. A simulated world of
 * thousands of ranks then holds one bucket of grads at a time, not one a
 * rank: the sim adds each rank's bucket in as it arrives and drops its
 * pages (bs_dev_discard). make runs once, unless the collective fails
 * before it is issued. */
bs_status bs_comm_reduce_scatter_made(bs_comm *c, void (*make)(void *ctx),
                                      void *ctx, void *send, void *recv,
                                      size_t count, bs_dtype dt);
bs_status bs_comm_broadcast(bs_comm *c, void *buf, size_t count, bs_dtype dt,
                            int root);
bs_status bs_comm_barrier(bs_comm *c);
/* Process groups follow the memory (docs/behavior.md §5): a sleeping trainer
 * destroys its communicator and wake_up creates a fresh one; an asleep
 * weight sync runs over a temporary one. bs_comm_destroy releases this
 * rank's backend communicator (NCCL: finalize and destroy, bounded by the
 * timeout; its buffers are GPU memory the engine needs); collectives then
 * fail with BS_ERR_STATE until bs_comm_init. bs_comm_init is a collective:
 * every rank must join (NCCL: a fresh unique id, a non-blocking init
 * watched like a stuck collective), it is numbered and recorded in the
 * flight recorder as nccl:comm_init (why: its label, "wake_up", ...), and a
 * rank that never joins leaves its peers to the watchdog, which fails the
 * world on every rank alike. The world's first communicator is created
 * with the rank's thread and needs no call. */
bs_status bs_comm_init(bs_comm *c, const char *why);
bs_status bs_comm_destroy(bs_comm *c);
bool bs_comm_ready(const bs_comm *c);

/* Aborts the communicator on every local rank: each waiter returns
 * BS_ERR_ABORTED, and so does every later collective. */
void bs_comm_abort(bs_comm *c, const char *why);
/* This rank dies here: it leaves the communicator (peers waiting for it
 * learn BS_ERR_RANK_DEAD) and its later collectives return that too. */
void bs_comm_die(bs_comm *c, const char *why);

/* Cross-rank failure agreement (docs/behavior.md §7.2): in = this rank's status
 * (its error record in bs_err()); every rank returns the worst status of
 * all ranks and its bs_err() then holds the same record (the one raised by
 * the lowest rank with that status). Host-memory arguments. */
bs_status bs_comm_agree(bs_comm *c, bs_status mine);

/* Fingerprint of a host-side list (e.g. a tensor-name set) checked equal on
 * all ranks: BS_ERR_TENSOR_SET naming the first differing rank otherwise. */
bs_status bs_comm_check_same(bs_comm *c, const void *data, size_t n,
                             const char *what);

/* ---- process groups and point-to-point, as torch.distributed has them ----
 *
 * A process group is a sub-communicator of the world over some of its
 * ranks (new_group): every member makes it with the same name and members
 * (global ranks, ascending, this rank among them) and gets a handle that
 * every call above takes. It numbers its own collectives and its own
 * point-to-point ops (collective_seq_id and p2p_seq_id per group, as
 * PyTorch counts them); its ops go through the same front (fingerprint,
 * watchdog, flight recorder: the entries carry the group's id, name and
 * description, and the dumps' pg_config lists every group of the rank).
 * On a group handle bs_comm_size is the group's size; bs_comm_rank stays
 * the global rank. A group's handle is the rank's until bs_comm_group_free
 * (or the world's end); the world handle itself is the default group. The
 * sim (threads, or processes of one host) and NCCL have both. */
bs_status bs_comm_group(bs_comm *world, const char *name, const char *desc,
                        const int *members, int n, bs_comm **out);
void bs_comm_group_free(bs_comm *g);
/* The rank within c's group (the global rank on the world's handle). */
int bs_comm_group_rank(const bs_comm *c);
/* The group's name and description ("0" and "default_pg" for the world). */
const char *bs_comm_group_name(const bs_comm *c);
const char *bs_comm_group_desc(const bs_comm *c);

/* Point-to-point within c's group: peer is a rank of the group, count
 * elements of dt. A batch's ops (batch_isend_irecv) are issued together
 * and the call returns once all completed; the call is numbered (one
 * p2p_seq_id for a batch, as PyTorch's coalesced ops have) and each op
 * recorded as PyTorch does ("nccl:send 0->1", "nccl:recv 1<-0"). Ops
 * that carry their own seq (every one, ascending, past the last) are
 * isend/irecv issued one after another and waited for later: each is
 * recorded under its seq and completes on its own (a ring's send waits
 * for no recv of the same rank; the flight recorder shows which of them
 * a rank still waits in; the nccl backend settles them as one group). A
 * recv whose send never comes is the watchdog's (the sim sees at once a
 * peer that left, two ranks that wait to receive from each other, and a
 * send and a recv that differ in count or dtype). */
typedef struct bs_p2p_op {
  bool send;
  void *buf; /* send: read only */
  size_t count;
  bs_dtype dt;
  int peer;
  uint64_t seq; /* its own p2p_seq_id; 0: the call's */
} bs_p2p_op;
bs_status bs_comm_p2p(bs_comm *c, const bs_p2p_op *ops, size_t n);
bs_status bs_comm_p2p_send(bs_comm *c, const void *buf, size_t count,
                           bs_dtype dt, int peer);
bs_status bs_comm_p2p_recv(bs_comm *c, void *buf, size_t count, bs_dtype dt,
                           int peer);
/* Readies c for lone ops with peer (a rank of c's group): a backend that
 * runs them as ProcessGroupNCCL does (each isend/irecv an op of its own on
 * a communicator and stream of the pair's, "lo:hi", so that ops to other
 * peers go on and each completes by itself) makes that communicator now,
 * with peer; a call whose ops each have their own seq then uses it (a
 * batch, seq 0, stays one op of the group's communicator). Both ranks of
 * a pair call it, each its pairs in one order common to all ranks (sorted
 * by group, then ranks), or two inits may wait on each other. Bounded by
 * the watchdog's timeout and a start grace; the sim needs none (BS_OK). */
bs_status bs_comm_p2p_pair(bs_comm *c, int peer);
/* The p2p_seq_id of the last point-to-point op c issued (0: none yet),
 * and the one its next op takes (a replay goes on where a dump starts). */
uint64_t bs_comm_p2p_seq(const bs_comm *c);
bs_status bs_comm_set_next_p2p_seq(bs_comm *c, uint64_t seq);

#endif
