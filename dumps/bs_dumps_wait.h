/* The wait-for graph's parts (bs_dumps_graph.h): its stuck ops, roots
 * and cycles, as its builders (bs_dumps_roots, bs_dumps_cycles) and its
 * readers (the report, its JSON, DOT and trace) share them. */
#ifndef BS_DUMPS_WAIT_H
#define BS_DUMPS_WAIT_H

#include "bs_dumps_judge.h"
#include "bs_dumps_order.h"

typedef enum bs_dumps_root_kind {
  BS_ROOT_STALLED = 0, /* idle, it never issued the op */
  BS_ROOT_SKIPPED,     /* it ran past the op */
  BS_ROOT_NO_DUMP,     /* it left no dump: where it is is not known */
  BS_ROOT_UNREADABLE,  /* its dump does not read */
  BS_ROOT_MISMATCH,    /* it issued another op than its peers (desync) */
} bs_dumps_root_kind;

/* A stuck op. */
typedef struct bs_dumps_node {
  bs_dumps_ref at;
  const bs_dump_coll *c;  /* a waiter's entry of it (what it is) */
  int waiter;             /* p2p: the rank that waits in it */
  int *waiting, nwaiting; /* global ranks in it, ascending */
  /* Global ranks it waits for: missing from it, or (matched) in it but
   * held by an earlier op of theirs; ascending. */
  int *missing, nmissing;
  bool matched; /* every member issued it */
  bool desync;  /* the group's first mismatch */
  /* Every member the dumps name is in it, but no pg_config lists its
   * group's: it waits for a member they do not name (bs_dumps_unnamed.h). */
  bool unnamed;
  char *may_be; /* unnamed: the ranks that may be that member, as text */
  /* unnamed, every rank waiting: the op that waits for exactly its ranks,
   * whose ranks it is taken to wait for (-1: none; bs_dumps_unnamed.c) */
  int closed_by;
  /* unnamed, not every rank waiting: the one rank it may be that waits in
   * no stuck op and is missing from another, taken as its member (-1:
   * none) */
  int idle;
  int scc; /* its cycle (bs_dumps_graph.cycle), -1: none */
} bs_dumps_node;

typedef struct bs_dumps_root {
  int rank;
  bs_dumps_root_kind kind;
  bs_dumps_mismatch mismatch; /* kind MISMATCH: what differs */
  bs_dumps_ref at;            /* the op it is the root of */
  bool order_known;           /* at is first in its order, as dumps tell */
  /* Every stuck op it is missing from, what it did there (kind) and,
   * where it ran past it, the op it went on into. */
  bs_dumps_ref *held;
  bs_dumps_root_kind *held_kind;
  bs_dumps_ref *held_went;
  int nheld;
  size_t capheld;
  bs_dumps_ref went; /* SKIPPED: the op it went on into */
  bool waits;        /* SKIPPED: and it waits in a stuck op */
  bs_dumps_ref now;  /* that stuck op (waits) */
  uint64_t last;     /* STALLED: its last op of at.group (0: none) */
  const char *frame; /* its last entry's call site, "" if none */
} bs_dumps_root;

/* A cycle of waits that reaches no root. */
typedef struct bs_dumps_cycle {
  int *nodes, n;
} bs_dumps_cycle;

typedef struct bs_dumps_graph {
  const bs_dumps *d;
  bs_dumps_finding finding;
  bs_dumps_view *view; /* by group */
  bs_dumps_gres *gres; /* by group: its judge's */
  bs_dumps_order *order;
  bs_dumps_node *node;
  size_t nnodes, capnodes;
  bs_dumps_root *root; /* by rank, ascending */
  size_t nroots, caproots;
  int *rootix; /* by global rank: its index in root (-1: not a root) */
  bs_dumps_cycle *cycle;
  size_t ncycles;
  int *in;        /* by global rank: the node it waits in (-1: none) */
  char **unknown; /* what the dumps cannot tell, a line each */
  size_t nunknown, capunknown;
} bs_dumps_graph;

#endif
