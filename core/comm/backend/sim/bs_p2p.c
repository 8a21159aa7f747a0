/* Point-to-point of the sim communicator (bs_p2p.h). */
#include "comm/backend/sim/bs_p2p.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bs_clock.h"

typedef struct post {
  int src, dst;
  size_t op; /* its index in the sender's ops */
  size_t bytes;
  bs_dtype dt;
  void *data; /* the staged bytes */
  bool taken;
  struct post *next;
} post;

/* What a rank waits for, for the deadlock checks. */
typedef enum wait_kind { NOT_WAITING = 0, RECEIVING, DRAINING } wait_kind;

struct bs_p2p {
  pthread_mutex_t mu;
  /* Moved by every change of the list and by the world's failure
   * (bs_p2p_nudge): waiters sleep on it until then, or their timeout. */
  _Atomic uint32_t epoch;
  int n;
  const bs_pg *pg;
  uint64_t timeout_ns;
  post *head; /* in order of posting */
  bool *gone;
  wait_kind *waits;
  int *on; /* the peer it waits on */
};

bs_status bs_p2p_create(int n, const bs_pg *pg, int timeout_ms, bs_p2p **out) {
  bs_status st = BS_OK;
  bs_p2p *p = calloc(1, sizeof *p);
  if (!p || !(p->gone = calloc((size_t)n, sizeof *p->gone)) ||
      !(p->waits = calloc((size_t)n, sizeof *p->waits)) ||
      !(p->on = calloc((size_t)n, sizeof *p->on)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "sim p2p: %d ranks", n);
  p->n = n;
  p->pg = pg;
  p->timeout_ns = (uint64_t)timeout_ms * 1000000ull;
  pthread_mutex_init(&p->mu, NULL);
  *out = p;
  p = NULL;
out:
  if (p) {
    free(p->gone);
    free(p->waits);
    free(p->on);
    free(p);
  }
  return st;
}

void bs_p2p_destroy(bs_p2p *p) {
  if (!p)
    return;
  for (post *q = p->head, *next; q; q = next) {
    next = q->next;
    free(q->data);
    free(q);
  }
  pthread_mutex_destroy(&p->mu);
  free(p->gone);
  free(p->waits);
  free(p->on);
  free(p);
}

static int global_of(const bs_p2p *p, int i) {
  return bs_pg_global(p->pg, i);
}

static const char *in_group(const bs_p2p *p, char *buf, size_t n) {
  return bs_pg_of_text(p->pg, buf, n);
}

static bs_status copy(bs_comm *c, void *dst, const void *src, size_t n,
                      bs_copy_dir dir) {
  if (n == 0)
    return BS_OK;
  if (!c->dev) {
    memcpy(dst, src, n);
    return BS_OK;
  }
  return bs_dev_copy_observe(c->dev, dst, src, n, dir);
}

void bs_p2p_nudge(bs_p2p *p, bs_world *w) {
  bs_world_sched_bump(w, &p->epoch);
}

/* When rank c's wait from since times out: a timeout after the world's
 * last progress (bs_watchdog_hold), not after its own start. */
static uint64_t until_of(const bs_p2p *p, bs_comm *c, uint64_t since) {
  return bs_watchdog_since(c->w->wd, since) + p->timeout_ns;
}

/* Locked: sleeps, unlocked, until the epoch moves from seen (read before
 * the waiter looked at the list and the world) or its timeout. */
static void nap(bs_p2p *p, bs_comm *c, uint32_t seen, uint64_t since) {
  uint64_t now = bs_clock_mono_ns(), until = until_of(p, c, since);
  pthread_mutex_unlock(&p->mu);
  if (until > now)
    bs_world_sched_wait(c->w, &p->epoch, seen, until - now);
  pthread_mutex_lock(&p->mu);
}

/* Locked, whenever a wait goes round: the world's failure, or this rank's
 * own timeout (failing the world). */
static bs_status still(bs_p2p *p, bs_comm *c, uint64_t since) {
  bs_status st = bs_world_abort_status(c->w);
  if (st == BS_OK && bs_clock_mono_ns() >= until_of(p, c, since))
    st = bs_world_timeout(c->w, c->rank, bs_watchdog_since(c->w->wd, since));
  return st;
}

/* Locked: the world fails with why, every waiter wakes (the failure's
 * nudge wakes this list's). */
static bs_status fail(bs_comm *c, bs_status why, const char *cause) {
  bs_world_fail(c->w, why, 0, NULL, 0, "%s", cause);
  c->w->be->wake(c->w);
  return bs_world_abort_status(c->w);
}

static bs_status post_sends(bs_p2p *p, bs_comm *c, int me, const bs_p2p_op *ops,
                            size_t n) {
  bs_status st = BS_OK;
  for (size_t i = 0; i < n; i++) {
    if (!ops[i].send)
      continue;
    size_t bytes = ops[i].count * bs_dtype_size(ops[i].dt);
    post *q = calloc(1, sizeof *q);
    if (!q || !(q->data = malloc(bytes ? bytes : 1))) {
      free(q);
      BS_FAIL(BS_ERR_NOMEM, NULL, "sim p2p: %zu bytes", bytes);
    }
    *q = (post){.src = me,
                .dst = ops[i].peer,
                .op = i,
                .bytes = bytes,
                .dt = ops[i].dt,
                .data = q->data};
    if ((st = copy(c, q->data, ops[i].buf, bytes, BS_D2H)) != BS_OK) {
      free(q->data);
      free(q);
      goto out;
    }
    pthread_mutex_lock(&p->mu);
    post **tail = &p->head;
    while (*tail)
      tail = &(*tail)->next;
    *tail = q;
    bs_world_sched_bump(c->w, &p->epoch);
    pthread_mutex_unlock(&p->mu);
  }
out:
  return st;
}

static post *first_from(const bs_p2p *p, int src, int dst) {
  for (post *q = p->head; q; q = q->next)
    if (q->src == src && q->dst == dst && !q->taken)
      return q;
  return NULL;
}

/* Locked: me waits (kind) on peer, which waits on me the same way, with
 * nothing posted between them that would free either: neither moves. */
static bool each_waits(const bs_p2p *p, int me, int peer, wait_kind kind) {
  if (p->waits[peer] != kind || p->on[peer] != me)
    return false;
  if (kind == RECEIVING)
    return !first_from(p, me, peer) && !first_from(p, peer, me);
  return first_from(p, me, peer) && first_from(p, peer, me);
}

/* Locked: why the op me waits in on peer can never complete, or BS_OK. */
static bs_status stuck(bs_p2p *p, bs_comm *c, int me, int peer,
                       wait_kind kind) {
  char cause[256], g[BS_PG_NAME + 16];
  int gm = global_of(p, me), gp = global_of(p, peer);
  in_group(p, g, sizeof g);
  if (p->gone[peer]) {
    snprintf(cause, sizeof cause,
             "rank %d is gone while rank %d waits to %s it%s", gp, gm,
             kind == RECEIVING ? "receive from" : "send to", g);
    return fail(c, BS_ERR_RANK_DEAD, cause);
  }
  if (each_waits(p, me, peer, kind)) {
    snprintf(cause, sizeof cause,
             "ranks %d and %d each wait to %s the other first%s",
             gm < gp ? gm : gp, gm < gp ? gp : gm,
             kind == RECEIVING ? "receive from" : "be received by", g);
    return fail(c, BS_ERR_DESYNC, cause);
  }
  return BS_OK;
}

/* Locked: q's bytes into op's buffer, or the desync of a mismatch. */
static bs_status take(bs_p2p *p, bs_comm *c, int me, post *q,
                      const bs_p2p_op *op) {
  size_t want = op->count * bs_dtype_size(op->dt);
  if (q->bytes != want || q->dt != op->dt) {
    char cause[256], g[BS_PG_NAME + 16];
    snprintf(cause, sizeof cause,
             "rank %d sends %zu bytes of %s to rank %d, which receives %zu "
             "bytes of %s%s",
             global_of(p, q->src), q->bytes, bs_dtype_name(q->dt),
             global_of(p, me), want, bs_dtype_name(op->dt),
             in_group(p, g, sizeof g));
    return fail(c, BS_ERR_DESYNC, cause);
  }
  bs_status st = copy(c, op->buf, q->data, want, BS_H2D);
  q->taken = true;
  bs_world_sched_bump(c->w, &p->epoch);
  return st;
}

/* Locked: each recv of ops not done that has its post takes it, in order
 * (a pair's posts match its recvs in order); *first: the first recv still
 * waiting, NULL when none does. */
static bs_status take_posted(bs_p2p *p, bs_comm *c, int me,
                             const bs_p2p_op *ops, size_t n, bool *done,
                             const bs_p2p_op **first) {
  *first = NULL;
  for (size_t i = 0; i < n; i++) {
    if (ops[i].send || done[i])
      continue;
    post *q = first_from(p, ops[i].peer, me);
    if (!q) {
      *first = *first ? *first : &ops[i];
      continue;
    }
    bs_status st = take(p, c, me, q, &ops[i]);
    if (st != BS_OK)
      return st;
    done[i] = true;
  }
  return BS_OK;
}

static bs_status recv_all(bs_p2p *p, bs_comm *c, int me, const bs_p2p_op *ops,
                          size_t n, bool *done, uint64_t since) {
  bs_status st = BS_OK;
  const bs_p2p_op *first = NULL, *shown = NULL;
  pthread_mutex_lock(&p->mu);
  p->waits[me] = RECEIVING;
  for (;;) {
    uint32_t seen = atomic_load(&p->epoch);
    if ((st = take_posted(p, c, me, ops, n, done, &first)) != BS_OK || !first)
      break;
    p->on[me] = first->peer;
    if (first != shown)
      bs_comm_p2p_show(c, shown = first);
    if ((st = stuck(p, c, me, first->peer, RECEIVING)) != BS_OK ||
        (st = still(p, c, since)) != BS_OK)
      break;
    nap(p, c, seen, since);
  }
  p->waits[me] = NOT_WAITING;
  pthread_mutex_unlock(&p->mu);
  return st;
}

/* Locked: the first of me's posts not taken yet. */
static post *pending(const bs_p2p *p, int me) {
  for (post *q = p->head; q; q = q->next)
    if (q->src == me && !q->taken)
      return q;
  return NULL;
}

/* Locked: me's posts off the list (taken or not: the batch is over), the
 * taken ones done. */
static void unpost(bs_p2p *p, int me, bool *done) {
  for (post **at = &p->head; *at;) {
    post *q = *at;
    if (q->src != me) {
      at = &q->next;
      continue;
    }
    done[q->op] = q->taken;
    *at = q->next;
    free(q->data);
    free(q);
  }
}

static bs_status drain(bs_p2p *p, bs_comm *c, int me, const bs_p2p_op *ops,
                       bool *done, uint64_t since) {
  bs_status st = BS_OK;
  const post *shown = NULL;
  pthread_mutex_lock(&p->mu);
  p->waits[me] = DRAINING;
  for (;;) {
    uint32_t seen = atomic_load(&p->epoch);
    post *q = pending(p, me);
    if (!q)
      break;
    p->on[me] = q->dst;
    if (q != shown)
      bs_comm_p2p_show(c, &ops[(shown = q)->op]);
    if ((st = stuck(p, c, me, q->dst, DRAINING)) != BS_OK ||
        (st = still(p, c, since)) != BS_OK)
      break;
    nap(p, c, seen, since);
  }
  p->waits[me] = NOT_WAITING;
  unpost(p, me, done);
  pthread_mutex_unlock(&p->mu);
  return st;
}

bs_status bs_p2p_run(bs_p2p *p, bs_comm *c, int me, const bs_p2p_op *ops,
                     size_t n, bool *done) {
  bs_status st = BS_OK;
  uint64_t since = bs_clock_mono_ns();
  st = post_sends(p, c, me, ops, n);
  if (st == BS_OK)
    st = recv_all(p, c, me, ops, n, done, since);
  bs_status drained = drain(p, c, me, ops, done, since);
  return st != BS_OK ? st : drained;
}

void bs_p2p_leave(bs_p2p *p, bs_world *w, int me) {
  pthread_mutex_lock(&p->mu);
  p->gone[me] = true;
  bs_world_sched_bump(w, &p->epoch);
  pthread_mutex_unlock(&p->mu);
}
