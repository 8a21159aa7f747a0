/* Point-to-point of the sim communicator across processes of one host:
 * each send is a file beside the world's shared state
 * (<shm_path>[.pg.<group's name>].p2p.<src>.<dst>.<k>, the k-th send of
 * that pair, published whole: its dtype, then its bytes); the recv waits for
 * its k-th file from its peer, checks it and takes it (removes it); a call
 * returns once its recvs have their bytes and its sends' files are gone.
 * Every wait is bounded by the timeout and ends at the world's failure. A
 * failure found here is published where every process finds it. Internal
 * to the communicator. */
#ifndef BS_P2P_FILES_H
#define BS_P2P_FILES_H

#include "comm/front/bs_comm_state.h"

/* c's ops (peers: ranks of its group), its recvs waiting together (a
 * send is a file at once: a ring's sends wait for no recv, and a recv
 * whose send never comes holds up no other); done[i] set as op i
 * completes; publish(w): the world's failure to the other processes. */
bs_status bs_p2p_files_run(bs_comm *c, const bs_p2p_op *ops, size_t n,
                           bool *done, void (*publish)(bs_world *w));
/* What c kept of its pairs' counts (its impl), at its end. */
void bs_p2p_files_free(bs_comm *c);

#endif
