/* Point-to-point of the sim communicator, between threads of one process:
 * each send is posted (its bytes staged) on the group's list, a recv takes
 * the first post from its peer to it (pairs match in order, as NCCL's do),
 * and a batch returns once its recvs have their bytes and its sends were
 * taken. One lock sees every rank of the group, so a peer that left, two
 * ranks that wait to receive from each other (or whose sends each wait for
 * the other) and a send and recv that differ in bytes or dtype fail the
 * world at once; anything else waits for the watchdog. Internal to the
 * communicator. */
#ifndef BS_P2P_H
#define BS_P2P_H

#include "comm/front/bs_comm_state.h"

typedef struct bs_p2p bs_p2p;

/* n ranks; pg: their group (NULL: the world, slot i global rank i). */
bs_status bs_p2p_create(int n, const bs_pg *pg, int timeout_ms, bs_p2p **out);
void bs_p2p_destroy(bs_p2p *p);
/* Rank me's ops (peers: slots), on its thread: its recvs wait together
 * (one whose send never comes holds up none of the others); done[i] set
 * as op i completes. */
bs_status bs_p2p_run(bs_p2p *p, bs_comm *c, int me, const bs_p2p_op *ops,
                     size_t n, bool *done);
/* Without the lock (any lock may be held): every waiter looks again at
 * the world's failure, set before. */
void bs_p2p_nudge(bs_p2p *p, bs_world *w);
/* Rank me left: its peers must not wait for it. */
void bs_p2p_leave(bs_p2p *p, bs_world *w, int me);

#endif
