/* Inside the dump reader (bs_dumps_int.h): the members of groups no
 * pg_config lists (torch 2.15's gloo), past the ranks whose dumps hold
 * their entries. A rank's pg_ids number the groups it is in, from 1, in
 * the order they were made, as torch names groups ("1", "2", ...): a pg_id
 * its entries skip between two it used is a group made between those two,
 * where that many were made that its dump does not rule out. And the groups of
 * one DeviceMesh dimension or one loop of new_group (one desc, made one after
 * another, no rank in two) split the job's ranks in groups of one size: a rank
 * in none of them, with one group short, is that group's; named one after
 * another, they get the lines of the one layout that fits them
 * (bs_dumps_family.h). A DeviceMesh's groups are first given their grid's
 * lines (bs_dumps_mesh.h). */
#ifndef BS_DUMPS_MEMBERS_H
#define BS_DUMPS_MEMBERS_H

#include "bs_dumps.h"

bs_status bs_dumps_members_infer(bs_dumps *d);
/* Rank r joins group g where it is not in it, g->ranks kept ascending;
 * false: no memory. */
bool bs_dumps_members_add(bs_dump_group *g, int r);
/* Whether rank r's dump shows it is not in group k (numbered by torch),
 * though no entry of k names it: k completed a collective every member
 * must issue that r's whole ring does not hold, or r's pg_ids number two
 * groups one after the other made before and after k. */
bool bs_dumps_members_out(const bs_dumps *d, int r, int k);

#endif
