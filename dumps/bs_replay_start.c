/* Where a group's replay starts (bs_replay_int.h). In a job of thousands
 * of ranks, a collective that every member's dump shows done, alike on
 * all, has nothing to show: replaying it only takes time (a job's dumps hold up
 * to 2000 entries a rank, and thousands of ranks' collectives take turns on a
 * few cores). Leaving it out removes no wait that could hang, only one that
 * every rank passed; the last of them stays, so that a rank's "last completed"
 * reads as in the dumps. A desync is never left out: its entries differ. */
#include <stdint.h>

#include "bs_replay_int.h"

/* Up to so many ranks a job's collectives are replayed whole: the order
 * of a rank's ops across its groups (how analyze finds a rank that ran
 * past an op) reads back as in the dumps. */
#define BS_REPLAY_WHOLE_RANKS 1024

/* Done alike: as analyze compares them (op, sizes, dtypes; interned). */
static bool settled_alike(const bs_dump_coll *x, const bs_dump_coll *y) {
  return x->state == BS_DUMP_COMPLETED && y->state == BS_DUMP_COMPLETED &&
         x->op == y->op && x->in == y->in && x->out == y->out &&
         x->in_dt == y->in_dt && x->out_dt == y->out_dt;
}

/* The first collective of pg from first on that is missing, not done, or
 * not ref's alike (both in the order of their numbers). */
static uint64_t unsettled(const bs_dump_pg *pg, const bs_dump_pg *ref,
                          uint64_t first) {
  size_t j = 0;
  uint64_t seq = first;
  for (size_t k = 0; k < pg->n; k++) {
    const bs_dump_coll *c = &pg->c[k];
    if (c->p2p || c->seq < first)
      continue;
    while (j < ref->n && (ref->c[j].p2p || ref->c[j].seq < seq))
      j++;
    if (c->seq != seq || j == ref->n || ref->c[j].seq != seq ||
        !settled_alike(c, &ref->c[j]))
      return seq;
    seq++;
  }
  return seq;
}

uint64_t bs_replay_start_of(const bs_dumps *d, int g) {
  const bs_dump_group *dg = &d->groups[g];
  const bs_dump_pg *ref = NULL;
  uint64_t first = bs_dumps_group_first_seq(d, g), until = UINT64_MAX;
  if (d->ranks <= BS_REPLAY_WHOLE_RANKS)
    return first;
  for (int m = 0; m < dg->n; m++) {
    const bs_dump *dm = bs_dumps_rank(d, dg->ranks[m]);
    const bs_dump_pg *pg = dm ? bs_dumps_pg_of(dm, g) : NULL;
    if (!pg) /* what this member did is not known */
      return first;
    ref = ref ? ref : pg;
    uint64_t u = unsettled(pg, ref, first);
    until = u < until ? u : until;
  }
  return until > first + 1 && until != UINT64_MAX ? until - 1 : first;
}
