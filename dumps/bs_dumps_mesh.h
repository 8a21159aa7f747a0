/* Inside the dump reader (bs_dumps_members.c): the members of a
 * DeviceMesh's groups no pg_config lists. init_device_mesh makes one group
 * per line of each dimension, dimension by dimension, named one after
 * another and described "mesh_<dim>": the job's ranks laid out in a grid.
 * Where exactly one grid (its world, its dimensions' sizes) holds every
 * member the dumps name in the group of its name, each group gets the
 * ranks of its line, those that left no dump too (a node's folder lost),
 * and the job's world grows to the grid's where its highest ranks left no
 * dump. */
#ifndef BS_DUMPS_MESH_H
#define BS_DUMPS_MESH_H

#include "bs_dumps.h"

/* A world larger than the ranks named (its highest ranks left no dump) is
 * searched for up to twice them, in jobs of up to this many ranks. */
enum { BS_DUMPS_SEARCH_RANKS = 512 };

/* Rank r joins group g where it is not in it (kept in order); false: no
 * memory (bs_dumps_members_add). */
typedef bool (*bs_dumps_add_fn)(bs_dump_group *g, int r);

/* per: ranks a node, where the folders tell (bs_dumps_nodes.h): the
 * grid's world is a whole number of nodes; 0: any. */
bs_status bs_dumps_mesh_infer(bs_dumps *d, bs_dumps_add_fn add, int per);

#endif
