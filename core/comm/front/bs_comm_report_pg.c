/* The report of a failure in a process group or at a point-to-point op
 * (bs_comm_backend.h). Sequence numbers count per group, so the block
 * looks at one op: the stuck one, that of the lowest rank waiting on a
 * rank that is in no op (running, exited, dead: the root of the hang,
 * not a rank stuck behind it), else (every rank waits on another) that of
 * the lowest waiting rank. A collective's block holds its group's
 * members, each described in that group (the last collective it
 * completed there); a send's or recv's holds its rank and its peer, and
 * blames the peer when it is in no matching op. */
#include "comm/front/bs_comm_report.h"

#include "comm/front/bs_comm_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_p2p(bs_coll op) {
  return op == BS_COLL_SEND || op == BS_COLL_RECV;
}

/* Some rank is in an op, and a group or a p2p op is about. */
bool bs_comm_report_pg_applies(const bs_report_in *in) {
  bool waits = false, p2p = false;
  for (int i = 0; i < in->size; i++) {
    const bs_rank_pos *p = &in->pos[i];
    waits = waits || p->state == BS_RANK_IN_COLL;
    p2p = p2p || (p->state == BS_RANK_IN_COLL && is_p2p(p->at.op));
  }
  return waits && (in->npgs > 0 || p2p);
}

static const bs_pg *pg_of(const bs_report_in *in, int id) {
  return id > 0 && id <= in->npgs ? in->pgs[id - 1] : NULL;
}

/* The position of global rank g, NULL when not in the block. */
static const bs_rank_pos *pos_of(const bs_report_in *in, int g) {
  int i = g - in->first_rank;
  return i >= 0 && i < in->size ? &in->pos[i] : NULL;
}

/* The k-th global rank that group pg's block can hold, ascending, -1 past
 * the last: the group's members (thousands of small groups in a world of
 * thousands: not every rank asked whether it is one), else every rank of
 * the block. A member may be outside the block (another process's). */
static int nth_member(const bs_report_in *in, int pg, int k) {
  const bs_pg *p = pg_of(in, pg);
  if (p)
    return k < p->n ? p->members[k] : -1;
  return k < in->size ? in->first_rank + k : -1;
}

/* Whether global rank j has completed collective pi in its group: it is
 * not what pi waits on, wherever it went after (it may have returned). */
static bool done_it(const bs_report_in *in, const bs_rank_pos *pi, int j) {
  const bs_pg *g = pg_of(in, pi->at.pg);
  const bs_rank_pos *pj = pos_of(in, j);
  if (g)
    return bs_pg_rank_of(g, j) >= 0 &&
           g->last_done[bs_pg_rank_of(g, j)] >= pi->at.seq;
  return pj && pj->last_seq >= pi->at.seq;
}

/* Whether global rank j is where rank i's op needs it, or past it. */
static bool there(const bs_report_in *in, const bs_rank_pos *pi, int gi,
                  int j) {
  const bs_rank_pos *pj = pos_of(in, j);
  if (!is_p2p(pi->at.op) && done_it(in, pi, j))
    return true;
  if (!pj || pj->state != BS_RANK_IN_COLL || pj->at.pg != pi->at.pg)
    return false;
  if (is_p2p(pi->at.op))
    return is_p2p(pj->at.op) && pj->at.peer == gi;
  return !is_p2p(pj->at.op) && pj->at.seq == pi->at.seq;
}

/* How surely a rank is in no op, strongest first: dead, gone (returned
 * or dead: one that returned may have finished the op its waiter has not
 * run on from yet), anywhere but in an op. */
typedef enum idle_kind {
  IDLE_DEAD,
  IDLE_GONE,
  IDLE_ELSEWHERE,
  IDLE_KINDS
} idle_kind;

static bool idle(const bs_rank_pos *p, idle_kind k) {
  switch (k) {
  case IDLE_DEAD:
    return p->state == BS_RANK_DEAD;
  case IDLE_GONE:
    return p->state == BS_RANK_EXITED || p->state == BS_RANK_DEAD;
  default:
    return p->state != BS_RANK_IN_COLL;
  }
}

/* Whether rank gi's op waits on a rank that is idle so (a peer of no
 * known position counts as elsewhere). */
static bool waits_on_idle(const bs_report_in *in, int gi, idle_kind k) {
  const bs_rank_pos *pi = pos_of(in, gi);
  if (is_p2p(pi->at.op)) {
    const bs_rank_pos *pj = pos_of(in, pi->at.peer);
    return !there(in, pi, gi, pi->at.peer) &&
           (pj ? idle(pj, k) : k == IDLE_ELSEWHERE);
  }
  for (int m = 0, j; (j = nth_member(in, pi->at.pg, m)) >= 0; m++) {
    const bs_rank_pos *pj = pos_of(in, j);
    /* idle first: the cheap test, false for the many that wait too */
    if (j != gi && pj && idle(pj, k) && !there(in, pi, gi, j))
      return true;
  }
  return false;
}

/* How much rank gi's wait says of the hang (lower: more): the kind of
 * peer it waits on, a send after a recv or a collective; IDLE_KINDS * 2
 * where it waits on no idle peer. */
static int wait_weight(const bs_report_in *in, int gi) {
  int send = pos_of(in, gi)->at.op == BS_COLL_SEND ? IDLE_KINDS : 0;
  for (int k = 0; k < IDLE_KINDS; k++)
    if (waits_on_idle(in, gi, (idle_kind)k))
      return send + k;
  return 2 * IDLE_KINDS;
}

/* The global rank whose op the block is about; -1: no rank is in one. The
 * lowest rank waiting on a peer that is in no op of its group, by what
 * says most (wait_weight): waiting on a peer that died before one that
 * returned (it may have finished the op), and that before one only
 * elsewhere (between ops, it may be coming), and a recv or a collective
 * before a send (a send the peer took can show as waiting until its thread
 * runs again); else the lowest rank in an op. */
int bs_comm_report_pg_focus(const bs_report_in *in) {
  int best = -1, best_weight = 2 * IDLE_KINDS, lowest = -1;
  for (int i = 0; i < in->size; i++) {
    int g = in->first_rank + i;
    if (in->pos[i].state != BS_RANK_IN_COLL)
      continue;
    if (lowest < 0)
      lowest = g;
    int weight = wait_weight(in, g);
    if (weight < best_weight) {
      best_weight = weight;
      best = g;
    }
  }
  return best >= 0 ? best : lowest;
}

/* The block's ranks, by global rank, ascending: the group's members here,
 * or the p2p op's two. */
static int block_ranks(const bs_report_in *in, int f, int *out) {
  const bs_rank_pos *pf = pos_of(in, f);
  int m = 0;
  if (is_p2p(pf->at.op)) {
    int peer = pf->at.peer;
    if (peer < f && pos_of(in, peer))
      out[m++] = peer;
    out[m++] = f;
    if (peer > f && pos_of(in, peer))
      out[m++] = peer;
    return m;
  }
  for (int k = 0, j; (j = nth_member(in, pf->at.pg, k)) >= 0; k++)
    if (pos_of(in, j))
      out[m++] = j;
  return m;
}

/* Rank g as the block on group pg describes it: in its op when that is
 * the block's kind, else where it is, its last collective counted in pg. */
static void describe_in(const bs_report_in *in, int pg, bool p2p, int g,
                        bs_report_rank *r) {
  bs_rank_pos p = *pos_of(in, g);
  const bs_pg *grp = pg_of(in, pg);
  if (grp)
    p.last_seq = grp->last_done[bs_pg_rank_of(grp, g)];
  bs_report_block_describe(&p, r);
  bool here =
      p.state == BS_RANK_IN_COLL && p.at.pg == pg && is_p2p(p.at.op) == p2p;
  r->in_coll = here;
  const bs_pg *at = pg_of(in, p.at.pg);
  size_t len = strlen(r->desc);
  if (p.state == BS_RANK_IN_COLL && at)
    snprintf(r->desc + len, sizeof r->desc - len, " of group %s", at->name);
  if (p.state == BS_RANK_IN_COLL && !here) {
    memmove(r->desc + 3, r->desc, sizeof r->desc - 3);
    memcpy(r->desc, "in ", 3);
    r->desc[sizeof r->desc - 1] = '\0';
  }
}

/* A p2p op's block blames the peer that is in no matching op. */
static void blame_peer(const bs_report_in *in, int f, const int *ranks, int m,
                       bool *culprit, char *why, size_t n) {
  const bs_rank_pos *pf = pos_of(in, f);
  for (int k = 0; k < m; k++)
    culprit[k] = ranks[k] == pf->at.peer && !there(in, pf, f, pf->at.peer);
  snprintf(why, n,
           "rank %d waits for it in %s #%llu, and it is in no %s to "
           "rank %d",
           f, bs_coll_args_name(&pf->at), (unsigned long long)pf->at.seq,
           pf->at.op == BS_COLL_RECV ? "send" : "recv", f);
}

/* A collective's block whose one missing member waits in a send or recv
 * with a member that is in the collective: that member never issues the
 * op's other half, so it is the culprit (analyze's rule). False, and
 * nothing set, where that is not so. */
static bool blame_p2p_peer(const bs_report_in *in, const int *ranks, int m,
                           const bs_report_rank *rr, bool *culprit, char *why,
                           size_t n) {
  int w = -1, q = -1;
  for (int k = 0; k < m; k++) {
    if (rr[k].in_coll)
      continue;
    if (w >= 0)
      return false;
    w = k;
  }
  const bs_rank_pos *pw = w >= 0 ? pos_of(in, ranks[w]) : NULL;
  if (!pw || pw->state != BS_RANK_IN_COLL || !is_p2p(pw->at.op))
    return false;
  for (int k = 0; k < m; k++)
    if (ranks[k] == pw->at.peer && rr[k].in_coll)
      q = k;
  if (q < 0)
    return false;
  for (int k = 0; k < m; k++)
    culprit[k] = k == q;
  snprintf(why, n, "rank %d waits %s: rank %d never issued it", ranks[w],
           rr[w].desc, ranks[q]);
  return true;
}

static char *format(const bs_report_in *in, const char *status,
                    const char *tail, int f, int *ranks, bs_report_rank *rr,
                    bool *culprit) {
  const bs_rank_pos *pf = pos_of(in, f);
  const bs_pg *grp = pg_of(in, pf->at.pg);
  bool p2p = is_p2p(pf->at.op);
  char source[BS_PG_NAME * 2 + 96], why[256] = "";
  int m = block_ranks(in, f, ranks);
  for (int k = 0; k < m; k++)
    describe_in(in, pf->at.pg, p2p, ranks[k], &rr[k]);
  bool blamed = p2p;
  if (p2p)
    blame_peer(in, f, ranks, m, culprit, why, sizeof why);
  else
    blamed = blame_p2p_peer(in, ranks, m, rr, culprit, why, sizeof why);
  int n = snprintf(source, sizeof source, "%d ranks, %s backend",
                   in->world > in->size ? in->world : in->size, in->backend);
  if (grp)
    snprintf(source + n, sizeof source - (size_t)n, ", group %s (%s)",
             grp->name, grp->desc);
  bs_report_block b = {.status = status,
                       .source = source,
                       .cause = in->cause,
                       .n = m,
                       .rank_of = ranks,
                       .ranks = rr,
                       .culprit = blamed ? culprit : NULL,
                       .culprit_why = blamed ? why : NULL,
                       .tail = tail};
  return bs_report_block_format(&b);
}

char *bs_comm_report_pg(const bs_report_in *in, const char *status,
                        const char *tail) {
  size_t n = in->size > 0 ? (size_t)in->size : 1;
  int *ranks = malloc(n * sizeof *ranks);
  bs_report_rank *rr = calloc(n, sizeof *rr);
  bool *culprit = calloc(n, sizeof *culprit);
  char *text = NULL;
  if (ranks && rr && culprit)
    text = format(in, status, tail, bs_comm_report_pg_focus(in), ranks, rr,
                  culprit);
  free(ranks);
  free(rr);
  free(culprit);
  return text;
}
