/* One replayed rank (bs_replay_int.h): its buffers, its groups' handles,
 * its plan issued step by step, and the waits outside every collective
 * before and after it. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bs_clock.h"
#include "bs_replay_int.h"
#include "bs_replay_procs.h"
#include "dev/bs_dev.h"

static void *buffer(bs_dev *dev, size_t n, bs_status *st) {
  void *p = NULL;
  if (n == 0)
    n = 1;
  if (!dev) {
    if (!(p = malloc(n)))
      *st = bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu bytes", n);
    return p;
  }
  size_t page = bs_dev_page(dev), len = (n + page - 1) / page * page;
  *st = bs_dev_va_reserve(dev, len, &p);
  if (*st == BS_OK && (*st = bs_dev_phys_map(dev, p, len)) != BS_OK) {
    bs_dev_va_release(dev, p, len);
    p = NULL;
  }
  return *st == BS_OK ? p : NULL;
}

static void buffer_free(bs_dev *dev, void *p, size_t n) {
  if (!p)
    return;
  if (!dev) {
    free(p);
    return;
  }
  size_t page = bs_dev_page(dev), len = ((n ? n : 1) + page - 1) / page * page;
  bs_dev_phys_unmap(dev, p, len);
  bs_dev_va_release(dev, p, len);
}

/* The same bytes every time: a pattern of the rank. */
static bs_status fill(bs_dev *dev, void *buf, size_t n, int rank) {
  bs_status st = BS_OK;
  unsigned char *host = dev ? malloc(n ? n : 1) : buf;
  if (!host)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu bytes", n);
  for (size_t i = 0; i < n; i++)
    host[i] = (unsigned char)(rank * 131 + i * 7);
  if (dev) {
    st = bs_dev_copy_observe(dev, buf, host, n, BS_H2D);
    free(host);
  }
  return st;
}

static bs_status issue(bs_comm *c, const bs_replay_step *s, void *send,
                       void *recv) {
  bs_status st = BS_OK;
  if (bs_comm_seq(c) + 1 != s->seq && s->seq > bs_comm_seq(c))
    BS_CHECK(bs_comm_set_next_seq(c, s->seq));
  bs_comm_set_next_name(c, s->name); /* a stand-in's, else none */
  switch (s->op) {
  case BS_COLL_ALL_GATHER:
    return bs_comm_all_gather(c, send, recv, s->count, s->dt);
  case BS_COLL_REDUCE_SCATTER:
    return bs_comm_reduce_scatter(c, send, recv, s->count, s->dt, BS_SUM);
  case BS_COLL_ALL_REDUCE:
    return bs_comm_all_reduce(c, send, recv, s->count, s->dt, BS_SUM);
  case BS_COLL_BROADCAST:
    return bs_comm_broadcast(c, recv, s->count, s->dt, 0);
  case BS_COLL_COMM_INIT: /* the communicator made again, as recorded */
    if (bs_comm_ready(c))
      BS_CHECK(bs_comm_destroy(c));
    return bs_comm_init(c, "replay");
  default:
    return bs_comm_barrier(c);
  }
out:
  return st;
}

static int group_rank(const bs_replay_group *g, int rank) {
  for (int i = 0; i < g->n; i++)
    if (g->members[i] == rank)
      return i;
  return -1;
}

/* The p2p steps s[0..n) of one batch as one call, numbered as recorded
 * (own: each step by its own seq, as isend/irecv issued one after another
 * are). */
static bs_status issue_p2p(const bs_replay_state *r, bs_comm *c,
                           const bs_replay_step *s, size_t n, bool own,
                           void *send, void *recv) {
  bs_status st = BS_OK;
  bs_p2p_op *ops = calloc(n, sizeof *ops);
  if (!ops)
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %zu p2p ops", n);
  for (size_t k = 0; k < n; k++)
    ops[k] = (bs_p2p_op){.send = s[k].op == BS_COLL_SEND,
                         .buf = s[k].op == BS_COLL_SEND ? send : recv,
                         .count = s[k].count,
                         .dt = s[k].dt,
                         .peer = group_rank(&r->g[s[k].group], s[k].peer),
                         .seq = own ? s[k].seq : 0};
  if (!own && s->seq > bs_comm_p2p_seq(c) + 1)
    BS_CHECK(bs_comm_set_next_p2p_seq(c, s->seq));
  BS_CHECK(bs_comm_p2p(c, ops, n));
out:
  free(ops);
  return st;
}

/* This rank's handle of every group it is in (the world's own for the
 * default group), made in the groups' order on every rank. */
static bs_status open_groups(const bs_replay_state *r, bs_comm *world,
                             bs_comm **h) {
  bs_status st = BS_OK;
  int rank = bs_comm_rank(world);
  for (size_t i = 0; i < r->d->ngroups; i++) {
    const bs_replay_group *g = &r->g[i];
    if (g->world)
      h[i] = world;
    else if (group_rank(g, rank) >= 0)
      BS_CHECK(bs_comm_group(world, r->d->groups[i].name, r->d->groups[i].desc,
                             g->members, g->n, &h[i]));
  }
out:
  return st;
}

/* This rank's pair communicators for lone p2p ops (bs_replay_calls_pairs:
 * made eagerly, every rank in the same sorted order, so that the pairwise
 * inits cannot wait on each other in a cycle, as making each at its first
 * op could: rank 0's first op with 1, 1's with 2, 2's with 0). */
static bs_status open_pairs(const bs_replay_state *r, int rank, bs_comm **h) {
  bs_status st = BS_OK;
  int me = -1, at = -1;
  for (size_t i = 0; i < r->npairs; i++) {
    const bs_replay_pair *p = &r->pairs[i];
    if (p->group != at)
      me = group_rank(&r->g[at = p->group], rank);
    if (me == p->lo || me == p->hi)
      BS_CHECK(bs_comm_p2p_pair(h[p->group], me == p->lo ? p->hi : p->lo));
  }
out:
  return st;
}

static void close_groups(const bs_replay_state *r, bs_comm **h) {
  for (size_t i = 0; h && i < r->d->ngroups; i++)
    if (h[i] && !r->g[i].world)
      bs_comm_group_free(h[i]);
}

static bool is_p2p(const bs_replay_step *s) {
  return s->op == BS_COLL_SEND || s->op == BS_COLL_RECV;
}

/* A rank comes into a call, or out of it (in: false): a replay that ends
 * when no rank can move counts them (its last call always; every call
 * where it settles by itself: a rank may wait for good mid-plan, where
 * the replay issues ops in another order than the job did). */
static void last_call(bs_replay_state *r, int rank, const bs_replay_step *s,
                      size_t m, bool in) {
  pthread_mutex_lock(&r->mu);
  r->last += in ? 1 : -1;
  if (r->last_step) {
    r->last_step[rank] = in ? s : NULL;
    r->last_len[rank] = in ? m : 0;
  }
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  r->moved_ns = (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
  pthread_mutex_unlock(&r->mu);
}

/* The plan's steps, a p2p batch as one call. */
static bs_status run_plan(bs_replay_state *r, int rank, const bs_replay_plan *p,
                          bs_comm **h, void *send, void *recv) {
  bs_status st = BS_OK;
  for (size_t k = 0; st == BS_OK && k < p->n;) {
    const bs_replay_step *s = &p->s[k];
    bool own;
    size_t m = bs_replay_calls_len(r, s, p->n - k, &own);
    bool track = k + m == p->n || r->settle_ms > 0;
    if (track)
      last_call(r, rank, s, m, true);
    if (!is_p2p(s))
      st = issue(h[s->group], s, send, recv);
    else
      st = issue_p2p(r, h[s->group], s, m, own, send, recv);
    if (track)
      last_call(r, rank, s, m, false);
    k += m;
  }
  return st;
}

/* The rank counts itself in (ready, or done): a handle to abort with. */
static void count_in(bs_replay_state *r, bs_comm *c, int *count) {
  pthread_mutex_lock(&r->mu);
  if (!r->any)
    r->any = c;
  bool all = ++*count == r->local;
  if (all)
    pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  if (all)
    bs_comm_wake_word(c, &r->word);
}

/* Whether every rank counted itself in, or the replay ended. */
static bool all_in(bs_replay_state *r, const int *count) {
  pthread_mutex_lock(&r->mu);
  bool all = *count >= r->local || r->stopped;
  pthread_mutex_unlock(&r->mu);
  return all;
}

/* wait_all in a scheduled world: inside the schedule, on its clock, woken
 * by the last rank's count or the replay's end. */
static void wait_scheduled(bs_replay_state *r, bs_comm *c, const int *count,
                           long long bound_ms) {
  uint64_t until = bs_clock_mono_ns() + (uint64_t)bound_ms * 1000000ull;
  for (;;) {
    uint32_t seen = atomic_load(&r->word);
    uint64_t now = bs_clock_mono_ns();
    if (all_in(r, count) || now >= until)
      return;
    bs_comm_wait_word(c, &r->word, seen, until - now);
  }
}

/* Outside every collective until this process's ranks have counted
 * themselves in (in a process per rank, bs_replay_procs waits after the
 * plan): before the first collective (thousands of threads take a while to
 * start, and the watchdog must not count that; a scheduled world has no
 * start line), and after the last. On real threads it gives its turn
 * meanwhile (the ranks still to come need one); it ends after bound_ms
 * (the watchdog then judges who is missing) or once a signal stopped the
 * replay. Counted before it waits: a scheduled world's quiet hook may look
 * at the counts the moment it does. */
static void wait_all(bs_replay_state *r, bs_comm *c, int *count,
                     long long bound_ms) {
  struct timespec until;
  if (r->sched) {
    count_in(r, c, count);
    wait_scheduled(r, c, count, bound_ms);
    return;
  }
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += (time_t)(bound_ms / 1000);
  until.tv_nsec += (long)(bound_ms % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  count_in(r, c, count);
  bs_comm_idle(c, true);
  pthread_mutex_lock(&r->mu);
  int rc = 0;
  while (*count < r->local && !r->stopped && rc != ETIMEDOUT)
    rc = pthread_cond_timedwait(&r->cv, &r->mu, &until);
  pthread_mutex_unlock(&r->mu);
  bs_comm_idle(c, false);
}

bs_status bs_replay_rank_run(bs_comm *c, void *arg) {
  bs_status st = BS_OK;
  bs_replay_rank_arg *a = arg;
  bs_replay_state *r = a->r;
  const bs_replay_plan *p = &r->plan[a->i];
  bs_dev *dev = bs_comm_dev(c);
  bs_comm **h = calloc(r->d->ngroups ? r->d->ngroups : 1, sizeof *h);
  void *send = buffer(dev, p->send_bytes, &st);
  void *recv = st == BS_OK ? buffer(dev, p->recv_bytes, &st) : NULL;
  if (st == BS_OK && !h)
    st = bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu groups", r->d->ngroups);
  if (st == BS_OK)
    st = fill(dev, send, p->send_bytes, bs_comm_rank(c));
  if (st == BS_OK)
    st = open_groups(r, c, h);
  if (st == BS_OK)
    st = open_pairs(r, a->i, h);
  /* A scheduled world's ranks all begin before its clock starts: no start
   * line, whose waits outside would let ranks that come back late (as the
   * OS wakes them) wait for those outside at the end. */
  if (r->sched)
    count_in(r, c, &r->ready);
  else
    wait_all(r, c, &r->ready, BS_REPLAY_START_MS);
  if (r->meet_procs) /* the other processes' ranks */
    r->meet_procs();
  if (st == BS_OK)
    st = run_plan(r, a->i, p, h, send, recv);
  wait_all(r, c, &r->done, 2LL * r->timeout_ms + BS_REPLAY_DONE_SLACK_MS);
  close_groups(r, h);
  free(h);
  buffer_free(dev, send, p->send_bytes);
  buffer_free(dev, recv, p->recv_bytes);
  return st;
}
