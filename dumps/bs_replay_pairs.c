/* Where a group's p2p ops are replayed from (bs_replay_int.h). A send
 * from a to b is matched with b's receive from a by their places in the
 * job: the k-th of one is the k-th of the other, counted from its start.
 * A ring that forgot entries leaves the count unknown, so nothing of such
 * a group is paired, except in a group of two ranks (a pipeline's pair, a
 * context-parallel ring of two): there both sides number the same calls
 * (p2p_seq_id), so from the later of the two rings' first p2p op on, the
 * k-th send of one is the k-th receive of the other. That is checked, not
 * assumed: in each direction the pairs must be of one size and done alike,
 * and an op whose pair the other side never issued must not be done; a
 * batch, or what fails that, leaves the group unpaired, as before. */
#include <stdint.h>

#include "bs_replay_int.h"

/* The p2p ops of pg, in the order it holds them (their numbers' order). */
static const bs_dump_coll *next_p2p(const bs_dump_pg *pg, size_t *k) {
  for (; pg && *k < pg->n; (*k)++)
    if (pg->c[*k].p2p)
      return &pg->c[(*k)++];
  return NULL;
}

/* pg's first p2p op's number (UINT64_MAX: it holds none, or a batch). */
static uint64_t first_p2p(const bs_dump_pg *pg) {
  size_t k = 0;
  const bs_dump_coll *c = next_p2p(pg, &k);
  return c && !c->nparts && c->kind != BS_DUMP_COLL ? c->seq : UINT64_MAX;
}

/* pg's next p2p op of one kind from `from` on (NULL: none); a batch sets
 * *batch. */
static const bs_dump_coll *next_of(const bs_dump_pg *pg, size_t *k,
                                   uint64_t from, bs_dump_kind kind,
                                   bool *batch) {
  for (const bs_dump_coll *c; (c = next_p2p(pg, k));) {
    *batch = *batch || c->nparts || c->kind == BS_DUMP_COLL;
    if (c->seq >= from && c->kind == kind)
      return c;
  }
  return NULL;
}

static bool done(const bs_dump_coll *c) {
  return c && c->state == BS_DUMP_COMPLETED;
}

/* a's sends to b and b's receives from a, from `from` on, k-th with k-th:
 * each pair of one size, both done or neither; what is left over (issued
 * on one side only: the hang) not done. */
static bool one_way(const bs_dump_pg *a, const bs_dump_pg *b, uint64_t from) {
  size_t i = 0, j = 0;
  bool batch = false;
  for (;;) {
    const bs_dump_coll *x = next_of(a, &i, from, BS_DUMP_SEND, &batch);
    const bs_dump_coll *y = next_of(b, &j, from, BS_DUMP_RECV, &batch);
    if (batch || done(x) != done(y) || (x && y && x->in_numel != y->in_numel))
      return false;
    if (!x && !y)
      return true;
  }
}

uint64_t bs_replay_pairs_from(const bs_dumps *d, int g) {
  const bs_dump_group *dg = &d->groups[g];
  const bs_dump_pg *side[2] = {NULL, NULL};
  bool lost = false;
  uint64_t from = 0;
  for (int m = 0; m < dg->n; m++) {
    const bs_dump *dm = bs_dumps_rank(d, dg->ranks[m]);
    lost = lost || (dm && dm->lost);
    if (m < 2 && dm)
      side[m] = bs_dumps_pg_of(dm, g);
  }
  if (!lost)
    return 0;
  if (dg->n != 2)
    return UINT64_MAX;
  for (int m = 0; m < 2; m++) {
    const bs_dump *dm = bs_dumps_rank(d, dg->ranks[m]);
    uint64_t first = dm && dm->lost ? first_p2p(side[m]) : 0;
    from = first > from ? first : from;
  }
  if (from == UINT64_MAX ||
      (side[0] && side[1] &&
       !(one_way(side[0], side[1], from) && one_way(side[1], side[0], from))))
    return UINT64_MAX;
  return from;
}
