/* Point-to-point through the front (bs_comm.h): checks, numbering
 * (p2p_seq_id per group, PyTorch's), flight-recorder entries as PyTorch
 * writes them, the watchdog, and the world's failure in the error record;
 * the backend moves the bytes. */
#include "comm/front/bs_comm_state.h"

#include <stdint.h>
#include <stdlib.h>

/* Most ops of one batch (batch_isend_irecv): a send and a recv per peer of
 * the largest world. */
#define P2P_MAX_OPS (2 * BS_WORLD_MAX_RANKS)

static bs_status check_op(const bs_comm *c, const bs_p2p_op *op) {
  int size = bs_comm_front_size(c), me = bs_comm_front_rank(c);
  size_t es = bs_dtype_size(op->dt);
  const char *what = op->send ? "send" : "recv";
  if (es == 0)
    return bs_err_fail(BS_ERR_INVALID, NULL, "%s: unknown dtype %d", what,
                       (int)op->dt);
  if (op->peer < 0 || op->peer >= size || op->peer == me)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "%s: peer %d is not another rank of the group's 0..%d",
                       what, op->peer, size - 1);
  if (op->count > SIZE_MAX / es)
    return bs_err_fail(BS_ERR_INVALID, NULL, "%s: %zu elements overflow", what,
                       op->count);
  if (op->count && !op->buf)
    return bs_err_fail(BS_ERR_INVALID, NULL, "%s: NULL buffer for %zu elements",
                       what, op->count);
  return BS_OK;
}

static int global_of(const bs_comm *c, int peer) {
  return c->pg ? c->pg->members[peer] : peer;
}

/* What the report shows of op (its p2p_seq_id in seq). */
static bs_coll_args shown_of(const bs_comm *c, const bs_p2p_op *op,
                             uint64_t seq) {
  return (bs_coll_args){.op = op->send ? BS_COLL_SEND : BS_COLL_RECV,
                        .count = op->count,
                        .dt = op->dt,
                        .seq = seq,
                        .pg = c->pg ? c->pg->id : 0,
                        .peer = global_of(c, op->peer)};
}

/* The p2p_seq_id op is numbered by: its own, or its call's (a batch's ops
 * share one, as PyTorch's coalesced p2p do). */
static uint64_t seq_of(const bs_comm *c, const bs_p2p_op *op) {
  return op->seq ? op->seq : c->p2p_seq;
}

void bs_comm_p2p_show(bs_comm *c, const bs_p2p_op *op) {
  if (op->seq) {
    bs_coll_args shown = shown_of(c, op, op->seq);
    bs_comm_front_show_wait(c, &shown);
  }
}

static uint64_t record(bs_comm *c, const bs_p2p_op *op) {
  bs_flight_entry e = {.collective_seq_id = c->seq,
                       .p2p_seq_id = seq_of(c, op),
                       .profiling_name =
                           bs_coll_name(op->send ? BS_COLL_SEND : BS_COLL_RECV),
                       .has_data = true,
                       .input_numel = op->count,
                       .output_numel = op->count,
                       .input_dtype = op->dt,
                       .output_dtype = op->dt,
                       .pg = c->pg ? c->pg->id : 0,
                       .is_p2p = true,
                       .me = bs_comm_front_rank(c),
                       .peer = op->peer};
  return bs_flight_record(c->fr, &e);
}

/* Every op to st, or (done given) those done. */
static void advance_all(bs_comm *c, const uint64_t *ids, size_t n,
                        bs_flight_state st, const bool *done) {
  for (size_t i = 0; i < n; i++)
    if (!done || done[i])
      bs_flight_advance(c->fr, ids[i], st);
}

/* Own seqs: every op's, ascending past the last; else none. */
static bs_status check_seqs(const bs_comm *c, const bs_p2p_op *ops, size_t n) {
  uint64_t last = c->p2p_seq;
  for (size_t i = 0; ops[0].seq && i < n; i++) {
    if (ops[i].seq <= last)
      return bs_err_fail(BS_ERR_INVALID, NULL,
                         "p2p: op %zu's seq %llu is not past %llu (own seqs "
                         "ascend, every op has one)",
                         i, (unsigned long long)ops[i].seq,
                         (unsigned long long)last);
    last = ops[i].seq;
  }
  for (size_t i = 1; !ops[0].seq && i < n; i++)
    if (ops[i].seq)
      return bs_err_fail(BS_ERR_INVALID, NULL,
                         "p2p: op %zu has its own seq, op 0 has none", i);
  return BS_OK;
}

static bs_status checked(bs_comm *c, const bs_p2p_op *ops, size_t n,
                         bs_coll_args *shown) {
  bs_status st = BS_OK;
  if (!c)
    BS_FAIL(BS_ERR_INVALID, NULL, "p2p on a NULL communicator");
  if (!ops || n < 1 || n > P2P_MAX_OPS)
    BS_FAIL(BS_ERR_INVALID, NULL, "p2p: %zu ops (1..%d)", n, P2P_MAX_OPS);
  for (size_t i = 0; i < n; i++)
    BS_CHECK(check_op(c, &ops[i]));
  BS_CHECK(check_seqs(c, ops, n));
  *shown = shown_of(c, &ops[0], ops[0].seq ? ops[0].seq : c->p2p_seq + 1);
  BS_CHECK(bs_comm_front_admit(c, shown));
  if (c->destroyed)
    BS_FAIL(BS_ERR_STATE, NULL,
            "p2p on rank %d: its communicator was destroyed (asleep) and not "
            "created again",
            c->grank);
  if (!c->w->be->p2p)
    BS_FAIL(BS_ERR_UNSUPPORTED, NULL,
            "p2p: the %s backend%s has none (its ranks as threads of one "
            "process have)",
            c->w->be->name,
            c->w->o.global_size > c->w->o.size ? " across processes" : "");
out:
  return st;
}

typedef struct batch {
  const bs_p2p_op *ops;
  size_t n;
  bool *done;
  bs_coll_args *shown; /* what the error record names */
} batch;

/* Failed, ops with their own seqs name the first still waiting. */
static bs_status p2p_op(bs_comm *c, const void *arg) {
  const batch *b = arg;
  bs_status st = c->w->be->p2p(c, b->ops, b->n, b->done);
  for (size_t i = 0; st != BS_OK && b->ops[0].seq && i < b->n; i++)
    if (!b->done[i]) {
      *b->shown = shown_of(c, &b->ops[i], b->ops[i].seq);
      break;
    }
  return st;
}

bs_status bs_comm_p2p(bs_comm *c, const bs_p2p_op *ops, size_t n) {
  bs_status st = BS_OK;
  bs_coll_args shown;
  uint64_t *ids = NULL;
  bool *done = NULL;
  BS_CHECK(checked(c, ops, n, &shown));
  if (!(ids = malloc(n * sizeof *ids)) || !(done = calloc(n, sizeof *done)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "p2p: %zu ops", n);
  c->p2p_seq = ops[0].seq ? ops[n - 1].seq : c->p2p_seq + 1;
  for (size_t i = 0; i < n; i++)
    ids[i] = record(c, &ops[i]);
  advance_all(c, ids, n, BS_FLIGHT_STARTED, NULL);
  /* Its modelled time on a virtual clock, before the rank posts: it moves
   * the bytes shown. */
  bs_world_sched_spend(
      c->w, bs_world_sched_cost(shown.count * bs_dtype_size(shown.dt)));
  batch b = {ops, n, done, &shown};
  st = bs_comm_front_wait(c, &shown, 0, p2p_op, &b);
  /* Failed, the ops that completed show so (a ring's other half). */
  advance_all(c, ids, n, BS_FLIGHT_COMPLETED, st == BS_OK ? NULL : done);
out:
  free(ids);
  free(done);
  return st;
}

bs_status bs_comm_p2p_send(bs_comm *c, const void *buf, size_t count,
                           bs_dtype dt, int peer) {
  bs_p2p_op op = {.send = true,
                  .buf = (void *)(uintptr_t)buf,
                  .count = count,
                  .dt = dt,
                  .peer = peer};
  return bs_comm_p2p(c, &op, 1);
}

bs_status bs_comm_p2p_recv(bs_comm *c, void *buf, size_t count, bs_dtype dt,
                           int peer) {
  bs_p2p_op op = {.buf = buf, .count = count, .dt = dt, .peer = peer};
  return bs_comm_p2p(c, &op, 1);
}

bs_status bs_comm_p2p_pair(bs_comm *c, int peer) {
  if (!c)
    return bs_err_fail(BS_ERR_INVALID, NULL, "p2p pair on a NULL communicator");
  if (peer < 0 || peer >= bs_comm_front_size(c) ||
      peer == bs_comm_front_rank(c))
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "p2p pair: peer %d is not another rank of the group's "
                       "0..%d",
                       peer, bs_comm_front_size(c) - 1);
  if (c->destroyed || !c->w->be->p2p_pair)
    return BS_OK; /* lone ops then go as a batch does */
  return c->w->be->p2p_pair(c, peer);
}

uint64_t bs_comm_p2p_seq(const bs_comm *c) {
  return c ? c->p2p_seq : 0;
}
