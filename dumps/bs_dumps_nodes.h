/* A multi-node job's dumps gathered a folder per node: a launcher gives
 * every node as many ranks, rank r on node r / per, so the world is a
 * whole number of nodes, and a node whose folder was lost still counts.
 * Only where the folders say so: the dumps read from sub-folders
 * (bs_dumps.walked), every one in one, each folder's ranks inside one
 * block of per (the most any folder spans), no two folders in one block,
 * and two folders or more (or one named as a node's: "node0"). */
#ifndef BS_DUMPS_NODES_H
#define BS_DUMPS_NODES_H

#include "bs_dumps.h"

/* Ranks a node (0: the folders do not tell). */
int bs_dumps_nodes_ranks(const bs_dumps *d);

#endif
