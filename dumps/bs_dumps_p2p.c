/* p2p ops of one group: the k-th send from a to b is the k-th receive of
 * b from a (a pair's messages arrive in order; p2p_seq_id numbers each
 * rank's own ops, so it orders them, it does not pair them). An op whose
 * counterpart was never issued cannot be done, whatever its state says
 * (PyTorch's FlightRecorderHook retires an op when it is issued). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_dumps_judge.h"
#include "bs_vec.h"

/* ---- counting a rank's ops to and from each peer ---- */

typedef struct tally {
  int peer; /* global */
  size_t sends, recvs;
  /* Where the pair's ops are numbered from (first_wait's tallies). */
  enum { FROM_UNSET, FROM_START, FROM_ANCHOR, FROM_SEQ, FROM_NONE } from;
  uint64_t after;                /* FROM_ANCHOR: its place in this dump */
  size_t peer_sends, peer_recvs; /* the peer's toward it past its anchor */
  uint64_t peer_last;            /* FROM_SEQ: the peer's last p2p_seq_id */
} tally;

typedef struct tallies {
  tally *t;
  size_t n;
} tallies;

static tally *tally_of(tallies *ts, int peer) {
  for (size_t i = 0; i < ts->n; i++)
    if (ts->t[i].peer == peer)
      return &ts->t[i];
  if (!bs_vec_grow(&ts->t, NULL, ts->n + 1, sizeof *ts->t))
    return NULL;
  ts->t[ts->n] = (tally){.peer = peer};
  return &ts->t[ts->n++];
}

/* The p2p entries of op c (a batch: its parts, its end marker left out). */
static size_t parts_of(const bs_dump_coll *c, const bs_dump_coll **out,
                       size_t max) {
  size_t k = 0;
  if (!c->p2p)
    return 0;
  if (!c->nparts) {
    out[0] = c;
    return c->kind != BS_DUMP_COLL;
  }
  for (int i = 0; i < c->nparts && k < max; i++)
    if (c->parts[i].kind != BS_DUMP_COLL)
      out[k++] = &c->parts[i];
  return k;
}

enum { MAX_PARTS = 64 };

static bool count(const bs_dump_pg *p, tallies *ts) {
  const bs_dump_coll *part[MAX_PARTS];
  for (size_t k = 0; p && k < p->n; k++) {
    size_t np = parts_of(&p->c[k], part, MAX_PARTS);
    for (size_t j = 0; j < np; j++) {
      tally *t = tally_of(ts, part[j]->peer);
      if (!t)
        return false;
      t->sends += part[j]->kind == BS_DUMP_SEND;
      t->recvs += part[j]->kind == BS_DUMP_RECV;
    }
  }
  return true;
}

/* What first_wait judges by: every rank's tallies, and, once a first
 * look (reach NULL: no op with a peer without a dump taken as done by its
 * alikes) found them, how many ranks wait for a peer with a dump
 * (stuck), and by member index how many of those wait for it, peer
 * after peer, itself among them (reach). */
typedef struct judge {
  const tallies *all;
  const int *reach;
  int stuck;
} judge;

static int member_index(const bs_dumps_view *v, int rank) {
  for (int i = 0; i < v->n; i++)
    if (v->members[i] == rank)
      return i;
  return -1;
}

/* Whether rank dp issued ops past part (not the other half of an isend
 * and irecv issued with it: a p2p op of the group next, unless, where
 * ops retire when issued, one more of part's own kind to its peer, which
 * follows it: blocking ops in a row): it went on, so part was done. */
static bool moved_on(const bs_dump *dp, const bs_dump_coll *part, int g) {
  for (size_t k = 0; dp && k < dp->npg; k++)
    for (size_t j = 0; j < dp->pg[k].n; j++) {
      const bs_dump_coll *c = &dp->pg[k].c[j];
      bool again = dp->retires_at_issue && c->kind == part->kind &&
                   c->peer == part->peer;
      if (c->rid >= part->rid + 2 ||
          (c->rid == part->rid + 1 &&
           (!c->p2p || dp->pg[k].group != g || again)))
        return true;
    }
  return false;
}

/* The ops of part's kind and number in dump dp's entries pg whose peer
 * is another rank that left no dump (alike), and those dp went past. */
static void alike_in(const bs_dumps *d, const bs_dump *dp, const bs_dump_pg *pg,
                     const bs_dump_coll *part, int *alike, int *went) {
  const bs_dump_coll *pp[MAX_PARTS];
  for (size_t j = 0; j < pg->n; j++) {
    size_t np = parts_of(&pg->c[j], pp, MAX_PARTS);
    for (size_t q = 0; q < np; q++) {
      const bs_dump_coll *c = pp[q];
      if (c->kind != part->kind || c->seq != part->seq || c->peer < 0 ||
          c->peer == part->peer || c->peer >= BS_DUMPS_MAX_RANKS ||
          d->seen[c->peer])
        continue;
      (*alike)++;
      *went += moved_on(dp, c, pg->group);
    }
  }
}

/* Whether every op of part's kind and number, in a group of as many
 * members, whose peer is another rank that left no dump, was gone past
 * by its rank (and there is one): those peers did their part. */
static bool alike_went_on(const bs_dumps *d, const bs_dump *self,
                          const bs_dump_coll *part, int members) {
  int alike = 0, went = 0;
  for (size_t r = 0; r < d->n; r++)
    for (size_t k = 0; &d->d[r] != self && k < d->d[r].npg; k++)
      if (d->groups[d->d[r].pg[k].group].n == members)
        alike_in(d, &d->d[r], &d->d[r].pg[k], part, &alike, &went);
  return alike > 0 && went == alike;
}

/* Whether a rank of the group waits for a peer with a dump, and not
 * through self: others hold the group up, and a peer without a dump may
 * wait with them. */
static bool held_up(const bs_dumps_view *v, const judge *j, int self) {
  return j->stuck > j->reach[member_index(v, self)];
}

/* An op with a peer that left no dump is done where its rank went on
 * past it. Where ops are retired when issued, their state says nothing,
 * and the rank's last op looks the same whether it waits in it or
 * stalled after it: the peer is taken to have done as the other peers
 * without a dump did with their ranks (a node's folder lost is dumps
 * lost, not a fault: its ranks ran as their node-mates did), unless the
 * group is held up by others. */
static bool dumpless_matched(const bs_dumps_view *v, const judge *j,
                             const bs_dump_coll *part, int self) {
  const bs_dump *me = v->dump[member_index(v, self)];
  return moved_on(me, part, v->g) ||
         (me->retires_at_issue && j->reach && !held_up(v, j, self) &&
          alike_went_on(v->d, me, part, v->n));
}

/* Whether the peer of part (the k-th of its kind to that peer) issued
 * its counterpart; an unknown peer (any source) counts as matched. */
static bool matched(const bs_dumps_view *v, const judge *j,
                    const bs_dump_coll *part, size_t k, int self) {
  int pi = part->peer < 0 ? -1 : member_index(v, part->peer);
  if (part->peer < 0)
    return true;
  if (pi >= 0 && !v->dump[pi]) /* what the peer did is not known */
    return dumpless_matched(v, j, part, self);
  if (pi < 0)
    return false;
  const tallies *ts = &j->all[pi];
  for (size_t i = 0; i < ts->n; i++)
    if (ts->t[i].peer == self)
      return (part->kind == BS_DUMP_SEND ? ts->t[i].recvs : ts->t[i].sends) >=
             k;
  return false;
}

/* ---- rings that forgot entries ---- */

/* The latest collective both ranks issued (of a group they share): every
 * op either issued before it was issued before the other reached it, so
 * past it each numbers the pair's ops alike, where the ring forgot their
 * start. False where they share none their rings hold. */
static bool anchor(const bs_dump *self, const bs_dump *peer, uint64_t *at_self,
                   uint64_t *at_peer) {
  bool any = false;
  for (size_t k = 0; k < self->npg; k++) {
    const bs_dump_pg *mine = &self->pg[k];
    const bs_dump_pg *theirs = bs_dumps_pg_of(peer, mine->group);
    for (size_t j = mine->n; theirs && j-- > 0;) {
      const bs_dump_coll *c = &mine->c[j], *o;
      if (c->p2p || (any && c->rid <= *at_self))
        continue;
      if ((o = bs_dumps_pg_find(theirs, c->seq))) {
        *at_self = c->rid;
        *at_peer = o->rid;
        any = true;
        break;
      }
    }
  }
  return any;
}

/* Whether d holds every p2p op of group pg it issued: its ring forgot
 * none, or its first held p2p op is the group's first (p2p_seq_id 1). */
static bool whole(const bs_dump *d, const bs_dump_pg *pg) {
  for (size_t k = 0; d->lost && pg && k < pg->n; k++)
    if (pg->c[k].p2p)
      return pg->c[k].seq == 1;
  return !d->lost;
}

/* Where rank i numbers its ops with t's peer from: the rings' start,
 * or, where either forgot entries, the pair's anchor, else (a group of
 * two) their p2p_seq_ids (none: an op not done is not matched; one done
 * at a time is, in first_wait). */
static void anchor_tally(const bs_dumps_view *v, int i, tally *t) {
  int pi = member_index(v, t->peer);
  const bs_dump *self = v->dump[i], *peer = pi >= 0 ? v->dump[pi] : NULL;
  const bs_dump_coll *part[MAX_PARTS];
  uint64_t at_peer = 0;
  t->from = FROM_START;
  if (!peer || (whole(self, v->pg[i]) && whole(peer, v->pg[pi])))
    return;
  t->from = FROM_NONE;
  if (!anchor(self, peer, &t->after, &at_peer)) {
    /* Two ranks alone: p2p_seq_id counts each one's ops with the other
     * from the start, lost or not; every op has one counterpart, so the
     * ops past the other's count are the unmatched ones. */
    const bs_dump_pg *p = v->pg[pi];
    for (size_t k = p ? p->n : 0; v->n == 2 && k > 0 && !t->peer_last; k--)
      if (p->c[k - 1].p2p)
        t->peer_last = p->c[k - 1].seq;
    if (t->peer_last)
      t->from = FROM_SEQ;
    return;
  }
  t->from = FROM_ANCHOR;
  for (size_t k = 0; v->pg[pi] && k < v->pg[pi]->n; k++) {
    size_t np = parts_of(&v->pg[pi]->c[k], part, MAX_PARTS);
    for (size_t j = 0; j < np; j++)
      if (part[j]->rid > at_peer && part[j]->peer == v->members[i]) {
        t->peer_sends += part[j]->kind == BS_DUMP_SEND;
        t->peer_recvs += part[j]->kind == BS_DUMP_RECV;
      }
  }
}

/* Numbers part among rank i's ops of its kind to its peer and says
 * whether the peer issued the counterpart. */
static bool counted(const bs_dumps_view *v, const judge *j, tally *t,
                    const bs_dump_coll *part, int i) {
  bool send = part->kind == BS_DUMP_SEND;
  if (t->from == FROM_UNSET)
    anchor_tally(v, i, t);
  if (t->from == FROM_ANCHOR && part->rid <= t->after)
    return true; /* issued before a collective its peer went through */
  size_t nth = send ? ++t->sends : ++t->recvs;
  if (t->from == FROM_ANCHOR)
    return (send ? t->peer_recvs : t->peer_sends) >= nth;
  if (t->from == FROM_SEQ)
    return part->seq <= t->peer_last;
  return t->from == FROM_START && matched(v, j, part, nth, v->members[i]);
}

/* Rank i's first op not done: walked in order, each part numbered among
 * those of its kind to its peer. In a batch, the part whose counterpart
 * was never issued is the wait (its other parts matched), else, where the
 * batch is not done, its first. */
static bool first_wait(const bs_dumps_view *v, const judge *j, int i,
                       bs_dumps_p2p_wait *w) {
  const bs_dump_pg *p = v->pg[i];
  const bs_dump_coll *part[MAX_PARTS];
  tallies run = {0};
  bool ok = true;
  for (size_t k = 0; p && k < p->n && !w->op && ok; k++) {
    size_t np = parts_of(&p->c[k], part, MAX_PARTS);
    const bs_dump_coll *waits = NULL;
    bool m = true;
    /* Done at a time it completed at: its peer was there. */
    bool timed = p->c[k].state == BS_DUMP_COMPLETED && p->c[k].completed_ns;
    for (size_t q = 0; q < np && ok; q++) {
      tally *t = tally_of(&run, part[q]->peer);
      if (!(ok = t != NULL))
        break;
      if (!counted(v, j, t, part[q], i) && m && !timed) {
        m = false;
        waits = part[q];
      }
    }
    if (m && np && p->c[k].state != BS_DUMP_COMPLETED)
      waits = part[0];
    if (waits)
      *w = (bs_dumps_p2p_wait){
          .op = waits, .matched = m, .peer_i = member_index(v, waits->peer)};
  }
  free(run.t);
  return ok;
}

/* Every rank's first op not done, as judge j says. */
static bool waits_of(const bs_dumps_view *v, const judge *j,
                     bs_dumps_p2p_wait *w) {
  for (int i = 0; i < v->n; i++) {
    w[i] = (bs_dumps_p2p_wait){.peer_i = -1};
    if (!first_wait(v, j, i, &w[i]))
      return false;
  }
  return true;
}

/* The peer each rank waits for, where it has a dump (-1: none), and
 * (reach) how many such waiters come to each rank, peer after peer, each
 * counted once where waits go round; returns how many wait. */
static int waiters(const bs_dumps_view *v, const bs_dumps_p2p_wait *w, int *to,
                   int *reach, int *seen) {
  int n = 0;
  for (int i = 0; i < v->n; i++) {
    int p = w[i].peer_i;
    to[i] = w[i].op && !w[i].matched && p >= 0 && v->dump[p] ? p : -1;
    reach[i] = 0;
    seen[i] = -1;
  }
  for (int i = 0; i < v->n; i++) {
    n += to[i] >= 0;
    for (int x = i; to[i] >= 0 && x >= 0 && seen[x] != i; x = to[x]) {
      seen[x] = i;
      reach[x]++;
    }
  }
  return n;
}

/* Two looks: the first finds the ranks that wait for a peer with a dump
 * (plain), the second takes the ops with a peer without one as done by
 * their alikes where no others hold the group up. */
bs_status bs_dumps_p2p_waits(const bs_dumps_view *v, bs_dumps_p2p_wait *w) {
  bs_status st = BS_OK;
  size_t n = v->n > 0 ? (size_t)v->n : 1;
  tallies *all = calloc(n, sizeof *all);
  int *to = malloc(3 * n * sizeof *to); /* then reach, then seen */
  judge j = {.all = all};
  if (!all || !to)
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: p2p of %d ranks", v->n);
  for (int i = 0; i < v->n; i++)
    if (!count(v->pg[i], &all[i]))
      BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: p2p of %d ranks", v->n);
  if (!waits_of(v, &j, w))
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: p2p of %d ranks", v->n);
  j = (judge){.all = all, .reach = to + n};
  j.stuck = waiters(v, w, to, to + n, to + 2 * n);
  if (!waits_of(v, &j, w))
    BS_FAIL(BS_ERR_NOMEM, NULL, "analyze: p2p of %d ranks", v->n);
out:
  for (int i = 0; all && i < v->n; i++)
    free(all[i].t);
  free(all);
  free(to);
  return st;
}

void bs_dumps_p2p_describe(const bs_dump_coll *c, char *buf, size_t n) {
  bool send = c->kind == BS_DUMP_SEND;
  const char *dt = send ? c->in_dt : c->out_dt;
  bs_dtype known;
  dt = bs_dumps_op_dtype(dt, &known) ? bs_dtype_name(known) : dt;
  uint64_t numel = send ? c->in_numel : c->out_numel;
  int k = c->peer >= 0 ? snprintf(buf, n, "%s %s rank %d, p2p #%llu",
                                  send ? "send" : "recv", send ? "to" : "from",
                                  c->peer, (unsigned long long)c->seq)
                       : snprintf(buf, n, "recv from any rank, p2p #%llu",
                                  (unsigned long long)c->seq);
  if (k >= 0 && (size_t)k < n && numel)
    snprintf(buf + k, n - (size_t)k, " (%llu x %s)", (unsigned long long)numel,
             dt[0] ? dt : "?");
}

int bs_dumps_p2p_blame(const bs_dumps_view *v, const bs_dumps_p2p_wait *w,
                       int i, char *why, size_t n) {
  char what[BS_REPORT_DESC];
  int at = i;
  if (!w[i].op || w[i].matched)
    return -1;
  bs_dumps_p2p_describe(w[i].op, what, sizeof what);
  /* The peer owes the op; a peer that itself waits in an op its own peer
   * owes may be held up by it: followed, at most once round the group. */
  for (int steps = 0; steps < v->n; steps++) {
    int next = w[at].peer_i;
    if (next < 0) {
      snprintf(why, n, "rank %d waits in %s, whose peer is not in the group",
               v->members[i], what);
      return -1;
    }
    bool free_ = !v->dump[next] || !w[next].op || w[next].matched;
    if (free_ || next == i) {
      snprintf(why, n, "rank %d waits in %s: rank %d never issued it%s%s",
               v->members[i], what, v->members[next],
               !v->dump[next] ? " (it left no dump)" : "",
               next == i ? ", and waits for it in turn" : "");
      return next;
    }
    at = next;
  }
  snprintf(why, n, "rank %d waits in %s, in a cycle of waits", v->members[i],
           what);
  return w[i].peer_i;
}
