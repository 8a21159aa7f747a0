/* Inside `analyze` (bs_dumps_graph.h): each rank's own order of ops across
 * its process groups, compared with its peers'. Groups come in kinds (a
 * DeviceMesh dimension's groups, named mesh_<dim>; a loop of new_group or
 * new_subgroups: groups of one size and desc, made one after another,
 * that share no rank), and ranks of the same kinds issue the same ops in
 * the same order: which of two ops comes first is put to a vote of every
 * rank that issued one of them (in its own groups of those kinds), and a
 * tie to the same vote one op back (its history). A rank missing from an
 * op that issued a later op of another group, against the vote, ran past
 * it (skipped it and went on, or swapped the two). */
#ifndef BS_DUMPS_ORDER_H
#define BS_DUMPS_ORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "bs_dumps.h"

typedef struct bs_dumps_order bs_dumps_order;

/* An op of a group: its collective_seq_id, or (p2p) a p2p_seq_id. */
typedef struct bs_dumps_ref {
  int group; /* in bs_dumps.groups; -1: none */
  uint64_t seq;
  bool p2p;
} bs_dumps_ref;

bs_status bs_dumps_order_make(const bs_dumps *d, bs_dumps_order **out);
void bs_dumps_order_free(bs_dumps_order *o);

/* Group g's kind (groups of one kind hold a rank at most once). */
int bs_dumps_order_kind(const bs_dumps_order *o, int g);

/* The last collective rank r issued in group g (0: none it holds). */
uint64_t bs_dumps_order_last(const bs_dumps_order *o, int r, int g);
/* Where rank r issued op `at` among its entries (its rid); false when its
 * dump does not hold it. */
bool bs_dumps_order_rid(const bs_dumps_order *o, int r, bs_dumps_ref at,
                        uint64_t *rid);

/* Rank r is taken as a member of group g, which no dump of it names
 * (bs_dumps_unnamed_close): the votes count it. False: no memory. */
bool bs_dumps_order_join(bs_dumps_order *o, int g, int r);

/* Whether rank r issued collective #s of its group of g's kind. */
bool bs_dumps_order_issued(bs_dumps_order *o, int r, int g, uint64_t s);
/* Rank m never issued collective #s of group g: whether it ran past it,
 * and then the op it went on into (the first it issued that its peers'
 * order puts after g #s). */
bool bs_dumps_order_ran_past(bs_dumps_order *o, int m, int g, uint64_t s,
                             bs_dumps_ref *went);
/* Rank m ran past g #s: the first op of g it ran past, back from s, where
 * its later ops of g were each its peers' next (a skip that ran ahead,
 * matched by the wrong op of its peers). */
uint64_t bs_dumps_order_first_past(bs_dumps_order *o, int m, int g, uint64_t s);

/* Of n ops rank m never issued, the one it would issue first: as a rank in
 * both groups issued them (*known), else as the ranks of their groups'
 * kinds issued them, else as the period of m's own record repeats (a last
 * step cut short allowed; *known where two whole repeats); else the first
 * of the lowest group. */
int bs_dumps_order_first(bs_dumps_order *o, int m, const bs_dumps_ref *at,
                         int n, bool *known);

#endif
