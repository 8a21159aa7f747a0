/* The nccl communicator: one rank per GPU, on a thread of this process (the
 * unique id made once by ncclGetUniqueId) or in a process of its own (the
 * id travels through a file: global rank 0 writes it, the others poll for
 * it within the timeout). Communicators are non-blocking (config.blocking
 * = 0) so that no NCCL call can hold a rank forever: every wait polls
 * ncclCommGetAsyncError and the stream, and gives up on the world's abort
 * or the timeout by handing its communicator to an aborter thread and
 * returning at once (ncclCommAbort can take hundreds of milliseconds; the
 * rank no longer touches the communicator, so another thread may free it,
 * and the rank's later CUDA calls that wait for the stuck kernel wait for
 * the abort to kill it). Buffers are device pointers. */
#include "comm/backend/bs_comm_backend.h"

#include "bs_clock.h"
#include "bs_file.h"
#include "bs_vec.h"
#include "comm/backend/nccl/bs_nccl_lib.h"
#include "comm/backend/nccl/bs_nccl_reap.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How bs_comm_destroy tears a healthy communicator down: as PyTorch's
 * ProcessGroupNCCL::shutdown does under destroy_process_group, which is
 * what miles' groups go through at sleep and after an asleep sync
 * (ReloadableProcessGroup.destroy_process_groups, radixark/miles
 * miles/utils/reloadable_process_group.py). Chosen by BS_NCCL_TEARDOWN:
 * finalize (the default; torch >= 2.6, pytorch/pytorch#141510:
 * NCCLComm::finalize = ncclCommFinalize, waitReady, then NCCLComm::destroy
 * = ncclCommDestroy, torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp and
 * NCCLUtils.cpp) or abort (torch 2.3 to 2.5, pytorch/pytorch#119250:
 * shutdown() is abort(), ncclCommAbort of every communicator, as torch's
 * destructor still does when destroy_process_group was not called). A
 * failed world's communicator is aborted in either. */
typedef enum teardown { TEARDOWN_FINALIZE, TEARDOWN_ABORT } teardown;

/* A unique id one rank makes for others of this process (have: made). A
 * pair communicator's is keyed by its group (NULL: the world), group
 * ranks lo < hi and the generation of the group's communicator (pairs
 * made again after bs_comm_destroy get new ids). */
typedef struct id_slot {
  ncclUniqueId id;
  int have;
  const void *pg;
  int lo, hi, gen;
  struct id_slot *next;
} id_slot;

/* The unique id of the communicator generation `gen` (0: the world's
 * first; each bs_comm_init makes the next). Local rank 0 gets it (makes it
 * on global rank 0, reads it from the run's folder elsewhere) and hands it
 * to its process's other ranks here; one slot suffices, since no rank can
 * finish an init before every rank has read that init's id. */
typedef struct nccl_world {
  ncclUniqueId id;
  int gen;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int ndev;
  teardown teardown; /* how bs_comm_destroy ends a communicator */
  id_slot *pair_ids; /* the pairs' ids made here (under mu) */
} nccl_world;

/* Device scratch of the front's host exchanges, kept across collectives:
 * cudaMalloc and cudaFree between collectives serialise against peers'
 * NCCL kernels on a shared GPU. */
typedef struct scratch {
  void *p;
  size_t n;
} scratch;

/* A communicator and stream of two ranks for their lone p2p ops, as
 * ProcessGroupNCCL keys one per "lowRank:highRank" (getKeySendRecv) and
 * runs it on a stream of its own: ops to other peers go on beside it,
 * ops to this peer stay in order. */
typedef struct pair_comm {
  int peer; /* group rank */
  ncclComm_t comm;
  cudaStream_t stream;
} pair_comm;

typedef struct nccl_rank {
  const bs_nccl_lib *nc;
  ncclComm_t comm;
  cudaStream_t stream;
  float *one;        /* the barrier's one element */
  scratch xin, xout; /* host exchanges */
  int gen;           /* of the communicator it has, or last had */
  pair_comm *pairs;  /* bs_comm_p2p_pair's, in the order made */
  size_t npairs, cap;
} nccl_rank;

static void nap_us(long us) {
  struct timespec ts = {.tv_sec = 0, .tv_nsec = us * 1000L};
  nanosleep(&ts, NULL);
}

static nccl_rank *nr_of(const bs_comm *c) {
  return bs_comm_front_impl(c);
}

static nccl_world *nw_of(const bs_comm *c) {
  return bs_world_impl(bs_comm_front_world(c));
}

/* Processes sharing a GPU create their CUDA contexts one after another, so
 * a communicator's init waits for its slowest peer's start: the watchdog's
 * timeout plus this grace. */
enum { INIT_GRACE_MS = 5000 };

static uint64_t deadline_of(const bs_world *w, uint64_t since, bool init) {
  int ms = bs_world_options(w)->timeout_ms + (init ? INIT_GRACE_MS : 0);
  return since + (uint64_t)ms * 1000000ull;
}

static bs_status status_of(ncclResult_t r) {
  switch (r) {
  case ncclInvalidArgument:
  case ncclInvalidUsage:
    return BS_ERR_INVALID;
  case ncclRemoteError:
    return BS_ERR_RANK_DEAD;
  default:
    return BS_ERR_ABORTED;
  }
}

static void reap_abort(ncclComm_t *comm) {
  if (*comm)
    bs_nccl_reap(*comm, true);
  *comm = NULL;
}

/* The communicators go to threads of their own for ncclCommAbort (joined
 * when the next world starts or at exit, bs_nccl_reap.h); the rank returns
 * without waiting for NCCL's teardown. Its pairs' go with its group's: a
 * rank stuck in either stops in both. */
static void abort_local(nccl_rank *nr) {
  reap_abort(&nr->comm);
  for (size_t i = 0; i < nr->npairs; i++)
    reap_abort(&nr->pairs[i].comm);
}

/* An NCCL error on one rank (NCCL's last error of comm, NULL: none) ends
 * the world: its local peers stop waiting. */
static bs_status fail_nccl_on(bs_comm *c, ncclComm_t comm, ncclResult_t r,
                              const char *what) {
  nccl_rank *nr = nr_of(c);
  bs_status st = status_of(r);
  const bs_nccl_lib *nc = nr->nc;
  const char *last = comm ? nc->GetLastError(comm) : "";
  bs_world_fail(bs_comm_front_world(c), st, 0, NULL, 0,
                "rank %d: %s: NCCL %s%s%s", bs_comm_rank(c), what,
                nc->GetErrorString(r), last[0] ? ": " : "", last);
  abort_local(nr);
  return bs_err_fail(st, NULL, "rank %d: %s: NCCL %s", bs_comm_rank(c), what,
                     nc->GetErrorString(r));
}

static bs_status fail_nccl(bs_comm *c, ncclResult_t r, const char *what) {
  return fail_nccl_on(c, nr_of(c)->comm, r, what);
}

static bs_status fail_cuda(bs_comm *c, cudaError_t e, const char *what) {
  return bs_err_fail(BS_ERR_COPY, NULL, "rank %d: %s: CUDA %s", bs_comm_rank(c),
                     what, cudaGetErrorString(e));
}

/* The world's abort, or the timeout past deadline (since: when the wait
 * began): this rank's communicators aborted, its status. */
static bs_status given_up(bs_comm *c, uint64_t since, uint64_t deadline) {
  bs_world *w = bs_comm_front_world(c);
  bs_status ab = bs_world_abort_status(w);
  bs_rank_pos p = bs_comm_front_pos(c);
  /* A collective its failer went through completes here too. */
  if (ab != BS_OK && bs_world_joined_by_failer(w, &p))
    ab = BS_OK;
  if (ab == BS_OK && bs_clock_mono_ns() >= deadline)
    ab = bs_world_timeout(w, bs_comm_front_local(c), since);
  if (ab != BS_OK)
    abort_local(nr_of(c));
  return ab;
}

/* Polls until comm's work (and stream's, if asked) is done; the world's
 * abort or the timeout abort this rank's communicators. */
static bs_status settle_on(bs_comm *c, ncclComm_t comm, cudaStream_t s,
                           bool stream, uint64_t since, const char *what) {
  nccl_rank *nr = nr_of(c);
  uint64_t deadline = deadline_of(bs_comm_front_world(c), since, !stream);
  for (;;) {
    ncclResult_t ae = ncclSuccess;
    nr->nc->CommGetAsyncError(comm, &ae);
    if (ae != ncclSuccess && ae != ncclInProgress)
      return fail_nccl_on(c, comm, ae, what);
    cudaError_t q =
        stream && ae == ncclSuccess ? cudaStreamQuery(s) : cudaErrorNotReady;
    if (ae == ncclSuccess && (!stream || q == cudaSuccess))
      return BS_OK;
    if (q != cudaSuccess && q != cudaErrorNotReady)
      return fail_cuda(c, q, what);
    bs_status ab = given_up(c, since, deadline);
    if (ab != BS_OK)
      return ab;
    nap_us(50);
  }
}

static bs_status settle(bs_comm *c, uint64_t since, bool stream,
                        const char *what) {
  nccl_rank *nr = nr_of(c);
  return settle_on(c, nr->comm, nr->stream, stream, since, what);
}

static ncclDataType_t nccl_type(bs_dtype dt) {
  switch (dt) {
  case BS_BF16:
    return ncclBfloat16;
  case BS_F32:
    return ncclFloat32;
  case BS_I32:
    return ncclInt32;
  case BS_I64:
    return ncclInt64;
  default:
    return ncclUint8;
  }
}

static ncclRedOp_t nccl_op(bs_redop op) {
  return op == BS_MAX ? ncclMax : op == BS_MIN ? ncclMin : ncclSum;
}

static ncclResult_t enqueue(nccl_rank *nr, const bs_coll_args *a,
                            const void *send, void *recv) {
  const bs_nccl_lib *nc = nr->nc;
  ncclDataType_t t = nccl_type(a->dt);
  switch (a->op) {
  case BS_COLL_ALL_GATHER:
    return nc->AllGather(send, recv, a->count, t, nr->comm, nr->stream);
  case BS_COLL_REDUCE_SCATTER:
    return nc->ReduceScatter(send, recv, a->count, t, nccl_op(a->redop),
                             nr->comm, nr->stream);
  case BS_COLL_ALL_REDUCE:
    return nc->AllReduce(send, recv, a->count, t, nccl_op(a->redop), nr->comm,
                         nr->stream);
  case BS_COLL_BROADCAST:
    return nc->Broadcast(send, recv, a->count, t, a->root, nr->comm,
                         nr->stream);
  default: /* barrier: NCCL has none; a one-element all-reduce is one */
    return nc->AllReduce(nr->one, nr->one, 1, ncclFloat32, ncclSum, nr->comm,
                         nr->stream);
  }
}

static bs_status run(bs_comm *c, const bs_coll_args *a, const void *send,
                     void *recv) {
  nccl_rank *nr = nr_of(c);
  uint64_t since = bs_clock_mono_ns();
  if (!nr->comm)
    return bs_err_fail(BS_ERR_ABORTED, NULL, "rank %d: communicator aborted",
                       bs_comm_rank(c));
  ncclResult_t r = enqueue(nr, a, send, recv);
  if (r != ncclSuccess && r != ncclInProgress)
    return fail_nccl(c, r, bs_coll_name(a->op));
  return settle(c, since, true, bs_coll_name(a->op));
}

/* Room for n bytes of device scratch. Not bs_vec: this is GPU memory
 * (cudaMalloc, no realloc), and what it held need not be kept, so a
 * larger one replaces it. */
static bs_status scratch_room(bs_comm *c, scratch *s, size_t n) {
  if (s->n >= n)
    return BS_OK;
  cudaFree(s->p);
  s->p = NULL;
  s->n = 0;
  size_t want = n < 4096 ? 4096 : n;
  cudaError_t e = cudaMalloc(&s->p, want);
  if (e != cudaSuccess)
    return bs_err_fail(BS_ERR_NOMEM, NULL,
                       "rank %d: exchange scratch of %zu bytes: CUDA %s",
                       bs_comm_rank(c), want, cudaGetErrorString(e));
  s->n = want;
  return BS_OK;
}

/* The front's host-memory exchanges go through device scratch, copied on
 * the rank's own stream (never the legacy default stream, which would wait
 * for a peer's kernel on a shared GPU). */
static bs_status run_host(bs_comm *c, const bs_coll_args *a) {
  bs_status st = BS_OK;
  nccl_rank *nr = nr_of(c);
  size_t in = bs_coll_in_bytes(a, bs_comm_front_size(c));
  size_t outn = bs_coll_out_bytes(a, bs_comm_front_size(c));
  cudaError_t e = cudaSuccess;
  BS_CHECK(scratch_room(c, &nr->xin, in ? in : 1));
  BS_CHECK(scratch_room(c, &nr->xout, outn ? outn : 1));
  if (in && (e = cudaMemcpyAsync(nr->xin.p, a->send, in, cudaMemcpyHostToDevice,
                                 nr->stream)))
    BS_CHECK(fail_cuda(c, e, "exchange upload"));
  BS_CHECK(run(c, a, nr->xin.p, nr->xout.p));
  if (outn && (e = cudaMemcpyAsync(a->recv, nr->xout.p, outn,
                                   cudaMemcpyDeviceToHost, nr->stream)))
    BS_CHECK(fail_cuda(c, e, "exchange download"));
  if ((e = cudaStreamSynchronize(nr->stream)))
    BS_CHECK(fail_cuda(c, e, "exchange download"));
out:
  return st;
}

/* Published whole: a reader sees the whole id or nothing. */
static bs_status uid_write(const char *path, const ncclUniqueId *id) {
  return bs_file_publish(path, id, sizeof *id);
}

static bool world_failed(const void *w) {
  return bs_world_abort_status(w) != BS_OK;
}

/* The id global rank 0 publishes; a world that fails meanwhile (rank 0's
 * init failed, its note came in) stops the wait with its status. */
static bs_status uid_read(const bs_world *w, const char *path, ncclUniqueId *id,
                          int timeout_ms) {
  bs_status st = BS_OK;
  char *data = NULL;
  size_t n = 0;
  bs_status got = bs_file_wait_or(path, timeout_ms, world_failed, w, &data, &n);
  if (got != BS_OK) {
    bs_err_clear(); /* the reason below says more */
    if (got == BS_ERR_ABORTED)
      BS_FAIL(bs_world_abort_status(w), NULL,
              "nccl: the world failed while waiting for the unique id in %s",
              path);
    BS_FAIL(BS_ERR_TIMEOUT, NULL,
            "nccl: no unique id in %s after %d ms (is global rank 0 up?)", path,
            timeout_ms);
  }
  if (n != sizeof *id)
    BS_FAIL(BS_ERR_CONFIG, NULL,
            "nccl: %s holds %zu bytes, not a unique id (%zu)", path, n,
            sizeof *id);
  memcpy(id, data, sizeof *id);
out:
  free(data);
  return st;
}

/* A fresh unique id, published in path for other processes ("": none). */
static bs_status make_id(const bs_nccl_lib *nc, const char *path,
                         ncclUniqueId *id) {
  ncclResult_t r = nc->GetUniqueId(id);
  if (r != ncclSuccess)
    return bs_err_fail(BS_ERR_UNSUPPORTED, NULL, "nccl: ncclGetUniqueId: %s",
                       nc->GetErrorString(r));
  return path[0] ? uid_write(path, id) : BS_OK;
}

/* Generation 0's id travels in uid_path, later ones in uid_path.<gen>. */
static void uid_file(const bs_world *w, int gen, char *out, size_t n) {
  if (gen == 0)
    snprintf(out, n, "%s", bs_world_options(w)->uid_path);
  else
    snprintf(out, n, "%s.%d", bs_world_options(w)->uid_path, gen);
}

static bs_status unique_id(const bs_world *w, int gen, ncclUniqueId *id) {
  bs_status st = BS_OK;
  const bs_world_opts *o = bs_world_options(w);
  char path[4200] = "";
  bool local = o->global_size == o->size;
  if (!local && !o->uid_path)
    BS_FAIL(BS_ERR_CONFIG, NULL,
            "nccl: ranks in several processes need uid_path to share the "
            "unique id");
  const bs_nccl_lib *nc = NULL;
  BS_CHECK(bs_nccl_lib_get(&nc));
  if (!local)
    uid_file(w, gen, path, sizeof path);
  if (local || o->first_rank == 0) {
    BS_CHECK(make_id(nc, path, id));
  } else {
    BS_CHECK(uid_read(w, path, id, o->timeout_ms + INIT_GRACE_MS));
  }
out:
  return st;
}

static bs_status teardown_of(teardown *out) {
  const char *v = getenv("BS_NCCL_TEARDOWN");
  *out = TEARDOWN_FINALIZE;
  if (!v || !*v || strcmp(v, "finalize") == 0)
    return BS_OK;
  if (strcmp(v, "abort") == 0) {
    *out = TEARDOWN_ABORT;
    return BS_OK;
  }
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "BS_NCCL_TEARDOWN='%s': finalize (torch >= 2.6) or abort "
                     "(torch 2.3 to 2.5)",
                     v);
}

static bs_status nccl_world_init(bs_world *w) {
  bs_status st = BS_OK;
  teardown how;
  nccl_world *nw = calloc(1, sizeof *nw);
  if (!nw)
    BS_FAIL(BS_ERR_NOMEM, NULL, "nccl: out of memory");
  BS_CHECK(teardown_of(&how));
  nw->teardown = how;
  bs_nccl_reap_all(); /* the last world's communicators */
  /* NVLink SHARP (NVLS) multicast is off on the lent machines. */
  setenv("NCCL_NVLS_ENABLE", "0", 0);
  cudaError_t e = cudaGetDeviceCount(&nw->ndev);
  if (e != cudaSuccess || nw->ndev < 1)
    BS_FAIL(BS_ERR_UNSUPPORTED, NULL,
            "backend nccl: no usable GPU here (cudaGetDeviceCount: %s, %d "
            "devices)",
            cudaGetErrorString(e), e == cudaSuccess ? nw->ndev : 0);
  BS_CHECK(unique_id(w, 0, &nw->id));
  pthread_mutex_init(&nw->mu, NULL);
  pthread_cond_init(&nw->cv, NULL);
  bs_world_set_impl(w, nw);
  nw = NULL;
out:
  free(nw);
  return st;
}

static void nccl_world_fini(bs_world *w) {
  nccl_world *nw = bs_world_impl(w);
  if (nw) {
    pthread_mutex_destroy(&nw->mu);
    pthread_cond_destroy(&nw->cv);
    while (nw->pair_ids) {
      id_slot *next = nw->pair_ids->next;
      free(nw->pair_ids);
      nw->pair_ids = next;
    }
  }
  free(nw);
  bs_world_set_impl(w, NULL);
}

/* Locked (mu): waits on cv until *have reaches want, the world fails or
 * the init's deadline passes; whether it did. */
static bool wait_have(bs_comm *c, pthread_mutex_t *mu, pthread_cond_t *cv,
                      const int *have, int want) {
  bs_world *w = bs_comm_front_world(c);
  uint64_t until = deadline_of(w, bs_clock_mono_ns(), true);
  while (*have < want && bs_world_abort_status(w) == BS_OK &&
         bs_clock_mono_ns() < until) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cv, mu, &ts);
  }
  return *have >= want;
}

static bs_status no_id(bs_comm *c, const char *what) {
  bs_status ab = bs_world_abort_status(bs_comm_front_world(c));
  return bs_err_fail(ab != BS_OK ? ab : BS_ERR_TIMEOUT, NULL,
                     "rank %d: no unique id for %s", bs_comm_rank(c), what);
}

/* Generation gen's id: local rank 0 fetches and hands it out, the others
 * wait for it (bounded; the world's failure ends the wait). */
static bs_status id_of(bs_comm *c, int gen, ncclUniqueId *out) {
  bs_status st = BS_OK;
  nccl_world *nw = nw_of(c);
  if (bs_comm_front_local(c) == 0) {
    ncclUniqueId id;
    BS_CHECK(unique_id(bs_comm_front_world(c), gen, &id));
    pthread_mutex_lock(&nw->mu);
    nw->id = id;
    nw->gen = gen;
    pthread_cond_broadcast(&nw->cv);
    pthread_mutex_unlock(&nw->mu);
  }
  pthread_mutex_lock(&nw->mu);
  bool got = wait_have(c, &nw->mu, &nw->cv, &nw->gen, gen);
  *out = nw->id;
  pthread_mutex_unlock(&nw->mu);
  if (!got) {
    char what[32];
    snprintf(what, sizeof what, "communicator #%d", gen);
    st = no_id(c, what);
  }
out:
  return st;
}

/* A non-blocking init of *comm (rank of n), settled within the timeout
 * and the start grace. */
static bs_status init_comm(bs_comm *c, ncclComm_t *comm, int n, int rank,
                           ncclUniqueId id) {
  nccl_rank *nr = nr_of(c);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  uint64_t since = bs_clock_mono_ns();
  ncclResult_t r = nr->nc->CommInitRankConfig(comm, n, id, rank, &cfg);
  if (r != ncclSuccess && r != ncclInProgress)
    return fail_nccl_on(c, *comm, r, "ncclCommInitRankConfig");
  return settle_on(c, *comm, NULL, false, since, "ncclCommInitRankConfig");
}

static bs_status create_comm(bs_comm *c, ncclUniqueId id) {
  return init_comm(c, &nr_of(c)->comm, bs_comm_front_size(c),
                   bs_comm_front_rank(c), id);
}

/* bs_comm_init after bs_comm_destroy: the next generation's communicator. */
static bs_status recreate(bs_comm *c) {
  bs_status st = BS_OK;
  nccl_rank *nr = nr_of(c);
  ncclUniqueId id;
  if (nr->comm)
    BS_FAIL(BS_ERR_STATE, NULL, "rank %d: comm_init over a live communicator",
            bs_comm_rank(c));
  if (bs_comm_front_pg(c))
    BS_FAIL(BS_ERR_UNSUPPORTED, NULL,
            "rank %d: group %s: only the world's communicator is made again "
            "(make a new group instead)",
            bs_comm_rank(c), bs_comm_front_pg(c)->name);
  BS_CHECK(id_of(c, nr->gen + 1, &id));
  nr->gen++;
  BS_CHECK(create_comm(c, id));
out:
  return st;
}

/* ncclCommFinalize flushes *comm's work (settled, bounded: settle_on
 * aborts the rank's communicators past the timeout, *comm among them),
 * then ncclCommDestroy frees it, off the rank's path (bs_nccl_reap.h). */
static bs_status finalize_destroy(bs_comm *c, ncclComm_t *comm) {
  nccl_rank *nr = nr_of(c);
  bs_status st = BS_OK;
  ncclResult_t r = nr->nc->CommFinalize(*comm);
  if (r == ncclSuccess || r == ncclInProgress)
    st = settle_on(c, *comm, NULL, false, bs_clock_mono_ns(),
                   "ncclCommFinalize");
  if (*comm)
    bs_nccl_reap(*comm, false);
  *comm = NULL;
  return st;
}

/* The pair communicators end before the group's, each rank's in the
 * order made (the same order on every rank, should a finalize wait for
 * its peer); then none is left: lone ops of a communicator made again go
 * as a batch does. */
static bs_status pairs_destroy(bs_comm *c, bool finalize) {
  nccl_rank *nr = nr_of(c);
  bs_status st = BS_OK;
  for (size_t i = 0; i < nr->npairs; i++) {
    if (finalize && st == BS_OK && nr->pairs[i].comm)
      st = finalize_destroy(c, &nr->pairs[i].comm);
    reap_abort(&nr->pairs[i].comm);
    cudaStreamDestroy(nr->pairs[i].stream);
  }
  free(nr->pairs);
  nr->pairs = NULL;
  nr->npairs = nr->cap = 0;
  return st;
}

/* The exchange scratch goes too: it is GPU memory the engine needs while
 * asleep. */
static bs_status nccl_comm_destroy(bs_comm *c) {
  nccl_rank *nr = nr_of(c);
  bs_status st = BS_OK;
  teardown how = nw_of(c)->teardown;
  bool finalize = bs_world_abort_status(bs_comm_front_world(c)) == BS_OK &&
                  how == TEARDOWN_FINALIZE;
  st = pairs_destroy(c, finalize);
  if (nr->comm && finalize && st == BS_OK)
    st = finalize_destroy(c, &nr->comm);
  abort_local(nr);
  cudaFree(nr->xin.p);
  cudaFree(nr->xout.p);
  nr->xin = nr->xout = (scratch){0};
  return st;
}

static bs_status nccl_coll(bs_comm *c, const bs_coll_args *a) {
  if (a->op == BS_COLL_COMM_INIT)
    return recreate(c);
  if (a->host)
    return run_host(c, a);
  return run(c, a, a->send, a->recv);
}

/* A handle's own NCCL state: its GPU, stream and barrier element. */
static bs_status rank_setup(bs_comm *c) {
  bs_status st = BS_OK;
  nccl_world *nw = nw_of(c);
  nccl_rank *nr = calloc(1, sizeof *nr);
  if (!nr)
    BS_FAIL(BS_ERR_NOMEM, NULL, "nccl: rank %d", bs_comm_rank(c));
  bs_comm_front_set_impl(c, nr);
  BS_CHECK(bs_nccl_lib_get(&nr->nc));
  cudaError_t e = cudaSetDevice(bs_comm_rank(c) % nw->ndev);
  if (e == cudaSuccess)
    e = cudaStreamCreateWithFlags(&nr->stream, cudaStreamNonBlocking);
  if (e == cudaSuccess)
    e = cudaMalloc((void **)&nr->one, sizeof *nr->one);
  if (e == cudaSuccess)
    e = cudaMemsetAsync(nr->one, 0, sizeof *nr->one, nr->stream);
  if (e == cudaSuccess)
    e = cudaStreamSynchronize(nr->stream);
  if (e != cudaSuccess)
    BS_CHECK(fail_cuda(c, e, "rank setup"));
out:
  return st;
}

/* The world's communicator: shown as a comm_init the rank waits in (a
 * peer process that never comes leaves it there). */
static bs_status nccl_rank_init(bs_comm *c) {
  bs_status st = BS_OK;
  nccl_world *nw = nw_of(c);
  bs_coll_args shown = {.op = BS_COLL_COMM_INIT, .label = "init"};
  BS_CHECK(rank_setup(c));
  bs_comm_front_show_wait(c, &shown);
  st = create_comm(c, nw->id);
  bs_comm_front_show_running(c);
out:
  return st;
}

static void nccl_rank_fini(bs_comm *c) {
  nccl_rank *nr = nr_of(c);
  if (!nr)
    return;
  if (nr->nc)
    nccl_comm_destroy(c);
  if (nr->stream)
    cudaStreamDestroy(nr->stream);
  cudaFree(nr->one);
  free(nr);
  bs_comm_front_set_impl(c, NULL);
}

/* NCCL has no deadlock detector, but this process knows when one of its
 * ranks dies (as a launcher's agent knows a worker died): every NCCL
 * collective needs that rank, so its local peers stop at once, and the
 * report names it. Ranks in other processes learn of it from their own
 * watchdog timeout in settle(). A rank that merely returned is no failure. */
static void nccl_rank_gone(bs_comm *c) {
  bs_rank_pos p = bs_comm_front_pos(c);
  if (p.state == BS_RANK_DEAD)
    bs_world_fail(bs_comm_front_world(c), BS_ERR_RANK_DEAD, p.since_ns, NULL, 0,
                  "rank %d died: %s", bs_comm_rank(c), p.why);
}

/* The pollers see the world's abort status on their next turn. */
static void nccl_wake(bs_world *w) {
  (void)w;
}

bs_status bs_comm_nccl_info(bs_nccl_info *out) {
  bs_status st = BS_OK;
  const bs_nccl_lib *nc = NULL;
  memset(out, 0, sizeof *out);
  BS_CHECK(bs_nccl_lib_get(&nc));
  out->version = nc->version;
  snprintf(out->lib, sizeof out->lib, "%s", nc->path);
  if (cudaGetDeviceCount(&out->gpus) != cudaSuccess)
    out->gpus = 0;
out:
  return st;
}

/* ---- process groups: a communicator of the members, its own id ---- */

/* The id of a group's communicator: its rank 0 makes it, hands it to the
 * members of its process here and, when members are elsewhere, publishes
 * it in uid_path.pg.<name>. */
typedef struct nccl_group {
  id_slot slot;
  pthread_mutex_t mu;
  pthread_cond_t cv;
} nccl_group;

static bs_status nccl_group_new(bs_world *w, bs_pg *pg) {
  nccl_group *g = calloc(1, sizeof *g);
  (void)w;
  if (!g)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "nccl: group %s", pg->name);
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  pg->impl = g;
  return BS_OK;
}

static void nccl_group_free(bs_world *w, bs_pg *pg) {
  nccl_group *g = pg->impl;
  (void)w;
  if (!g)
    return;
  pthread_mutex_destroy(&g->mu);
  pthread_cond_destroy(&g->cv);
  free(g);
  pg->impl = NULL;
}

static bool here(const bs_world *w, int rank) {
  const bs_world_opts *o = bs_world_options(w);
  return rank >= o->first_rank && rank < o->first_rank + o->size;
}

/* Whether every member of pg is a rank of this process. */
static bool all_here(const bs_world *w, const bs_pg *pg) {
  for (int i = 0; i < pg->n; i++)
    if (!here(w, pg->members[i]))
      return false;
  return true;
}

/* Where an id one rank makes reaches the others: in slot (under mu, cv)
 * for those of this process, in path ("": none) for those elsewhere;
 * maker: this rank makes it, maker_here: its maker is of this process. */
typedef struct id_way {
  id_slot *slot;
  pthread_mutex_t *mu;
  pthread_cond_t *cv;
  const char *path, *what;
  bool maker, maker_here;
} id_way;

static bs_status shared_id(bs_comm *c, const id_way *y, ncclUniqueId *id) {
  bs_status st = BS_OK;
  bs_world *w = bs_comm_front_world(c);
  if (y->maker) {
    BS_CHECK(make_id(nr_of(c)->nc, y->path, id));
    pthread_mutex_lock(y->mu);
    y->slot->id = *id;
    y->slot->have = 1;
    pthread_cond_broadcast(y->cv);
    pthread_mutex_unlock(y->mu);
  } else if (!y->maker_here) {
    int ms = bs_world_options(w)->timeout_ms + INIT_GRACE_MS;
    BS_CHECK(uid_read(w, y->path, id, ms));
  } else {
    pthread_mutex_lock(y->mu);
    bool got = wait_have(c, y->mu, y->cv, &y->slot->have, 1);
    *id = y->slot->id;
    pthread_mutex_unlock(y->mu);
    if (!got)
      BS_CHECK(no_id(c, y->what));
  }
out:
  return st;
}

static bs_status group_id(bs_comm *c, ncclUniqueId *id) {
  bs_status st = BS_OK;
  bs_world *w = bs_comm_front_world(c);
  const bs_world_opts *o = bs_world_options(w);
  bs_pg *pg = bs_comm_front_pg(c);
  nccl_group *ng = pg->impl;
  char path[4200] = "";
  bool local = all_here(w, pg);
  if (!local && !o->uid_path)
    BS_FAIL(BS_ERR_CONFIG, NULL,
            "nccl: group %s spans processes: it needs uid_path for its id",
            pg->name);
  if (!local)
    bs_pg_file(pg, o->uid_path, path, sizeof path);
  id_way y = {.slot = &ng->slot,
              .mu = &ng->mu,
              .cv = &ng->cv,
              .path = path,
              .what = pg->name,
              .maker = bs_comm_front_rank(c) == 0,
              .maker_here = here(w, pg->members[0])};
  BS_CHECK(shared_id(c, &y, id));
out:
  return st;
}

/* A member's own stream and communicator of the group (its size, its
 * rank in it). */
static bs_status nccl_group_rank_init(bs_comm *c) {
  bs_status st = BS_OK;
  ncclUniqueId id;
  BS_CHECK(rank_setup(c));
  BS_CHECK(group_id(c, &id));
  BS_CHECK(create_comm(c, id));
out:
  return st;
}

/* ---- point-to-point: a batch in one NCCL group of the group's
 * communicator, settled as one (batch_isend_irecv: ProcessGroupNCCL
 * issues it on the group's communicator too); lone ops each on its pair's
 * communicator and stream, each done by itself (isend/irecv) ---- */

static pair_comm *pair_of(const nccl_rank *nr, int peer) {
  for (size_t i = 0; i < nr->npairs; i++)
    if (nr->pairs[i].peer == peer)
      return &nr->pairs[i];
  return NULL;
}

/* Locked (mu): the slot of the pair's id (key as id_slot's), made on
 * first ask. */
static id_slot *pair_slot(nccl_world *nw, const id_slot *key) {
  id_slot *s = nw->pair_ids;
  while (s && !(s->pg == key->pg && s->lo == key->lo && s->hi == key->hi &&
                s->gen == key->gen))
    s = s->next;
  if (!s && (s = calloc(1, sizeof *s))) {
    *s = *key;
    s->next = nw->pair_ids;
    nw->pair_ids = s;
  }
  return s;
}

/* Where the pair's id goes between processes: uid_path (the group's file
 * for a group) and ".p2p.<lo>.<hi>", then ".<gen>" past the first. */
static void pair_file(const bs_comm *c, const id_slot *key, char *out,
                      size_t n) {
  const bs_world_opts *o = bs_world_options(bs_comm_front_world(c));
  const bs_pg *pg = bs_comm_front_pg(c);
  char base[4200];
  bs_pg_file(pg, o->uid_path, base, sizeof base);
  if (key->gen)
    snprintf(out, n, "%s.p2p.%d.%d.%d", base, key->lo, key->hi, key->gen);
  else
    snprintf(out, n, "%s.p2p.%d.%d", base, key->lo, key->hi);
}

/* The pair's id: its lower rank makes it (as the group's rank 0 does the
 * group's). */
static bs_status pair_id(bs_comm *c, int peer, ncclUniqueId *id) {
  bs_status st = BS_OK;
  bs_world *w = bs_comm_front_world(c);
  nccl_world *nw = nw_of(c);
  const bs_pg *pg = bs_comm_front_pg(c);
  int me = bs_comm_front_rank(c);
  int lo = me < peer ? me : peer, hi = me < peer ? peer : me;
  int glo = pg ? pg->members[lo] : lo, ghi = pg ? pg->members[hi] : hi;
  char path[4400] = "";
  bool local = here(w, glo) && here(w, ghi);
  if (!local && !bs_world_options(w)->uid_path)
    BS_FAIL(BS_ERR_CONFIG, NULL,
            "nccl: p2p pair %d:%d spans processes: it needs uid_path for its "
            "id",
            glo, ghi);
  id_slot key = {.pg = pg, .lo = lo, .hi = hi, .gen = nr_of(c)->gen};
  if (!local)
    pair_file(c, &key, path, sizeof path);
  pthread_mutex_lock(&nw->mu);
  id_slot *slot = pair_slot(nw, &key);
  pthread_mutex_unlock(&nw->mu);
  if (!slot)
    BS_FAIL(BS_ERR_NOMEM, NULL, "nccl: p2p pair %d:%d", glo, ghi);
  id_way y = {.slot = slot,
              .mu = &nw->mu,
              .cv = &nw->cv,
              .path = path,
              .what = "a p2p pair",
              .maker = me == lo,
              .maker_here = here(w, glo)};
  BS_CHECK(shared_id(c, &y, id));
out:
  return st;
}

/* bs_comm_p2p_pair: a stream, then a communicator of two (rank 0 the
 * lower, as ProcessGroupNCCL's p2pRank), listed before its init so that
 * an abort meanwhile takes it too. */
static bs_status nccl_p2p_pair(bs_comm *c, int peer) {
  bs_status st = BS_OK;
  nccl_rank *nr = nr_of(c);
  pair_comm p = {.peer = peer};
  ncclUniqueId id;
  if (pair_of(nr, peer))
    return BS_OK;
  cudaError_t e = cudaStreamCreateWithFlags(&p.stream, cudaStreamNonBlocking);
  if (e != cudaSuccess)
    BS_CHECK(fail_cuda(c, e, "p2p pair stream"));
  if ((st = bs_vec_push(&nr->pairs, &nr->npairs, &nr->cap, &p, sizeof p,
                        "nccl: p2p pairs")) != BS_OK) {
    cudaStreamDestroy(p.stream);
    goto out;
  }
  BS_CHECK(pair_id(c, peer, &id));
  BS_CHECK(init_comm(c, &nr->pairs[nr->npairs - 1].comm, 2,
                     bs_comm_front_rank(c) < peer ? 0 : 1, id));
out:
  return st;
}

/* A lone op's way: waiting for the op before it on its pair to be on the
 * stream (ops to one peer stay in order), enqueued (NCCL may finish that
 * in the background), on the stream behind its event, done. */
typedef enum lone_state {
  LONE_WAITING,
  LONE_ENQUEUING,
  LONE_RUNNING,
  LONE_DONE
} lone_state;

typedef struct lone_op {
  const bs_p2p_op *op;
  pair_comm *pair;
  lone_state state;
  cudaEvent_t ev; /* recorded behind the op: its completion */
} lone_op;

/* Whether each op has its own seq and its pair's communicator. */
static bool lone_ops(const nccl_rank *nr, const bs_p2p_op *ops, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!ops[i].seq || !pair_of(nr, ops[i].peer))
      return false;
  return true;
}

static bs_status lone_prepare(bs_comm *c, const bs_p2p_op *ops, size_t n,
                              lone_op *v) {
  nccl_rank *nr = nr_of(c);
  for (size_t i = 0; i < n; i++) {
    v[i] = (lone_op){.op = &ops[i], .pair = pair_of(nr, ops[i].peer)};
    if (!v[i].pair->comm)
      return bs_err_fail(BS_ERR_ABORTED, NULL,
                         "rank %d: p2p pair communicator aborted",
                         bs_comm_rank(c));
    cudaError_t e = cudaEventCreateWithFlags(&v[i].ev, cudaEventDisableTiming);
    if (e != cudaSuccess)
      return fail_cuda(c, e, "p2p event");
  }
  return BS_OK;
}

/* Whether an op before v[i] on its pair is not on the stream yet. */
static bool behind(const lone_op *v, size_t i) {
  for (size_t j = 0; j < i; j++)
    if (v[j].pair == v[i].pair && v[j].state < LONE_RUNNING)
      return true;
  return false;
}

/* The op as an NCCL op of its own on its pair (the peer: the pair's other
 * rank). */
static ncclResult_t lone_issue(bs_comm *c, const lone_op *o) {
  const bs_nccl_lib *nc = nr_of(c)->nc;
  const bs_p2p_op *op = o->op;
  int to = bs_comm_front_rank(c) < op->peer ? 1 : 0;
  pair_comm *p = o->pair;
  if (op->send)
    return nc->Send(op->buf, op->count, nccl_type(op->dt), to, p->comm,
                    p->stream);
  return nc->Recv(op->buf, op->count, nccl_type(op->dt), to, p->comm,
                  p->stream);
}

/* One look at v[i], moved on as far as it goes now (done[i] once done). */
static bs_status lone_step(bs_comm *c, lone_op *v, size_t i, bool *done) {
  lone_op *o = &v[i];
  ncclResult_t r = ncclSuccess;
  cudaError_t e = cudaSuccess;
  if (o->state == LONE_DONE || (o->state == LONE_WAITING && behind(v, i)))
    return BS_OK;
  if (o->state == LONE_WAITING) {
    r = lone_issue(c, o);
    o->state = LONE_ENQUEUING;
  } else {
    nr_of(c)->nc->CommGetAsyncError(o->pair->comm, &r);
  }
  if (r != ncclSuccess && r != ncclInProgress)
    return fail_nccl_on(c, o->pair->comm, r, "ncclSend/ncclRecv");
  if (o->state == LONE_ENQUEUING && r == ncclSuccess &&
      (e = cudaEventRecord(o->ev, o->pair->stream)) == cudaSuccess)
    o->state = LONE_RUNNING;
  else if (o->state == LONE_RUNNING &&
           (e = cudaEventQuery(o->ev)) == cudaSuccess)
    o->state = LONE_DONE;
  if (e != cudaSuccess && e != cudaErrorNotReady)
    return fail_cuda(c, e, "ncclSend/ncclRecv");
  done[i] = o->state == LONE_DONE;
  return BS_OK;
}

/* Every op moved on at each look, the first not done shown as the op the
 * rank waits in, until all are done, the world fails or the timeout. */
static bs_status lone_run(bs_comm *c, lone_op *v, size_t n, bool *done) {
  bs_status st = BS_OK;
  uint64_t since = bs_clock_mono_ns();
  uint64_t deadline = deadline_of(bs_comm_front_world(c), since, false);
  const bs_p2p_op *shown = NULL;
  for (;;) {
    const bs_p2p_op *first = NULL;
    for (size_t i = 0; i < n; i++) {
      BS_CHECK(lone_step(c, v, i, done));
      first = first || done[i] ? first : v[i].op;
    }
    if (!first)
      break;
    if (first != shown)
      bs_comm_p2p_show(c, shown = first);
    BS_CHECK(given_up(c, since, deadline));
    nap_us(50);
  }
out:
  return st;
}

static bs_status p2p_lone(bs_comm *c, const bs_p2p_op *ops, size_t n,
                          bool *done) {
  bs_status st = BS_OK;
  lone_op *v = calloc(n, sizeof *v);
  if (!v)
    BS_FAIL(BS_ERR_NOMEM, NULL, "nccl: %zu p2p ops", n);
  BS_CHECK(lone_prepare(c, ops, n, v));
  BS_CHECK(lone_run(c, v, n, done));
out:
  for (size_t i = 0; v && i < n; i++)
    if (v[i].ev)
      cudaEventDestroy(v[i].ev);
  free(v);
  return st;
}

/* A batch: done marks none until the group settles (the front marks them
 * all then). */
static bs_status p2p_batch(bs_comm *c, const bs_p2p_op *ops, size_t n) {
  nccl_rank *nr = nr_of(c);
  const bs_nccl_lib *nc = nr->nc;
  uint64_t since = bs_clock_mono_ns();
  if (!nr->comm)
    return bs_err_fail(BS_ERR_ABORTED, NULL, "rank %d: communicator aborted",
                       bs_comm_rank(c));
  ncclResult_t r = nc->GroupStart();
  for (size_t i = 0; r == ncclSuccess && i < n; i++)
    r = ops[i].send ? nc->Send(ops[i].buf, ops[i].count, nccl_type(ops[i].dt),
                               ops[i].peer, nr->comm, nr->stream)
                    : nc->Recv(ops[i].buf, ops[i].count, nccl_type(ops[i].dt),
                               ops[i].peer, nr->comm, nr->stream);
  ncclResult_t end = nc->GroupEnd();
  if (r == ncclSuccess)
    r = end;
  if (r != ncclSuccess && r != ncclInProgress)
    return fail_nccl(c, r, "ncclSend/ncclRecv");
  return settle(c, since, true, "ncclSend/ncclRecv");
}

/* Ops with their own seqs whose pairs were made (bs_comm_p2p_pair) go as
 * lone ops; any other call (a batch, or no pairs made) as a batch. */
static bs_status nccl_p2p(bs_comm *c, const bs_p2p_op *ops, size_t n,
                          bool *done) {
  if (lone_ops(nr_of(c), ops, n))
    return p2p_lone(c, ops, n, done);
  return p2p_batch(c, ops, n);
}

const bs_comm_backend bs_comm_nccl_backend = {
    .name = "nccl",
    .world_init = nccl_world_init,
    .world_fini = nccl_world_fini,
    .rank_init = nccl_rank_init,
    .rank_fini = nccl_rank_fini,
    .coll = nccl_coll,
    .comm_destroy = nccl_comm_destroy,
    .rank_gone = nccl_rank_gone,
    .wake = nccl_wake,
    .group_new = nccl_group_new,
    .group_free = nccl_group_free,
    .group_rank_init = nccl_group_rank_init,
    .group_rank_fini = nccl_rank_fini,
    .p2p = nccl_p2p,
    .p2p_pair = nccl_p2p_pair,
};
