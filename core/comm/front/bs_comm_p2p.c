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

/* A batch's ops share one p2p_seq_id, as PyTorch's coalesced p2p do. */
static uint64_t record(bs_comm *c, const bs_p2p_op *op) {
  bs_flight_entry e = {.collective_seq_id = c->seq,
                       .p2p_seq_id = c->p2p_seq,
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

static void advance_all(bs_comm *c, const uint64_t *ids, size_t n,
                        bs_flight_state st) {
  for (size_t i = 0; i < n; i++)
    bs_flight_advance(c->fr, ids[i], st);
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
  *shown = shown_of(c, &ops[0], c->p2p_seq + 1);
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
} batch;

static bs_status p2p_op(bs_comm *c, const void *arg) {
  const batch *b = arg;
  return c->w->be->p2p(c, b->ops, b->n);
}

bs_status bs_comm_p2p(bs_comm *c, const bs_p2p_op *ops, size_t n) {
  bs_status st = BS_OK;
  bs_coll_args shown;
  uint64_t *ids = NULL;
  BS_CHECK(checked(c, ops, n, &shown));
  if (!(ids = malloc(n * sizeof *ids)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "p2p: %zu ops", n);
  c->p2p_seq++;
  for (size_t i = 0; i < n; i++)
    ids[i] = record(c, &ops[i]);
  advance_all(c, ids, n, BS_FLIGHT_STARTED);
  batch b = {ops, n};
  BS_CHECK(bs_comm_front_wait(c, &shown, 0, p2p_op, &b));
  advance_all(c, ids, n, BS_FLIGHT_COMPLETED);
out:
  free(ids);
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

uint64_t bs_comm_p2p_seq(const bs_comm *c) {
  return c ? c->p2p_seq : 0;
}
