/* The sim communicator: ranks are threads of one process and every
 * collective is the staged rendezvous of bs_rounds.c, on a board in this
 * process's memory, that moves real bytes. A rank's input is read in
 * place where it is this process's memory (bs_rounds.c, borrows), else
 * staged in a host buffer of its own, grown as needed and kept across
 * rounds. A
 * process group has a board of its own over its members, and the world
 * and each group a list of point-to-point posts (bs_p2p.h). */
#include "comm/backend/sim/bs_rounds.h"

#include <stdlib.h>

#include "bs_vec.h"
#include "comm/backend/sim/bs_p2p.h"

typedef struct sim {
  bs_rounds r; /* first: w->impl, pg->impl */
  pthread_mutex_t mu;
  bs_rounds_board b;
  void **buf;  /* each rank's staging buffer: r.in[rank] when it stages */
  size_t *cap; /* of each rank's staging buffer */
  bs_p2p *p2p;
} sim;

static bs_status sim_room(bs_rounds *r, int rank, const bs_coll_args *a,
                          size_t n) {
  sim *s = (sim *)r;
  (void)a;
  /* Exactly n (cap NULL): a rank's input can be a model's weights, too
   * big to double. */
  if (n > s->cap[rank]) {
    if (!bs_vec_grow(&s->buf[rank], NULL, n, 1))
      return bs_err_fail(BS_ERR_NOMEM, NULL, "sim: %zu bytes of staging", n);
    s->cap[rank] = n;
  }
  r->in[rank] = s->buf[rank]; /* its last input may have been borrowed */
  return BS_OK;
}

static void sim_free(sim *s) {
  if (!s)
    return;
  for (int i = 0; s->buf && i < s->b.n; i++)
    free(s->buf[i]);
  free(s->buf);
  free(s->r.in);
  free(s->r.s);
  free(s->cap);
  free(s->r.red[0]);
  free(s->r.red[1]);
  free(s->r.sum[0]);
  free(s->r.sum[1]);
  bs_p2p_destroy(s->p2p);
  if (s->r.mu)
    pthread_mutex_destroy(&s->mu);
  free(s);
}

/* A board of n ranks (pg's members, or the world's). */
static bs_status sim_new(int n, const bs_pg *pg, int timeout_ms, sim **out) {
  bs_status st = BS_OK;
  sim *s = calloc(1, sizeof *s);
  if (!s || !(s->r.s = calloc((size_t)n, sizeof *s->r.s)) ||
      !(s->r.in = calloc((size_t)n, sizeof *s->r.in)) ||
      !(s->buf = calloc((size_t)n, sizeof *s->buf)) ||
      !(s->cap = calloc((size_t)n, sizeof *s->cap)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "sim: %d ranks", n);
  s->b.n = n;
  s->r.b = &s->b;
  s->r.timeout_ns = (uint64_t)timeout_ms * 1000000ull;
  s->r.room = sim_room;
  s->r.one_process = true;
  s->r.pg = pg;
  pthread_mutex_init(&s->mu, NULL);
  s->r.mu = &s->mu;
  BS_CHECK(bs_p2p_create(n, pg, timeout_ms, &s->p2p));
  *out = s;
  s = NULL;
out:
  sim_free(s);
  return st;
}

static bs_status sim_world_init(bs_world *w) {
  sim *s = NULL;
  if (w->o.global_size != w->o.size)
    return bs_err_fail(BS_ERR_CONFIG, NULL,
                       "sim backend: every rank is a thread of this process "
                       "(size %d, global size %d)",
                       w->o.size, w->o.global_size);
  bs_status st = sim_new(w->o.size, NULL, w->o.timeout_ms, &s);
  w->impl = s;
  return st;
}

static void sim_world_fini(bs_world *w) {
  sim_free(w->impl);
  w->impl = NULL;
}

static bs_status sim_group_new(bs_world *w, bs_pg *pg) {
  sim *s = NULL;
  bs_status st = sim_new(pg->n, pg, w->o.timeout_ms, &s);
  pg->impl = s;
  return st;
}

static void sim_group_free(bs_world *w, bs_pg *pg) {
  (void)w;
  sim_free(pg->impl);
  pg->impl = NULL;
}

static bs_status sim_p2p(bs_comm *c, const bs_p2p_op *ops, size_t n,
                         bool *done) {
  sim *s = c->pg ? c->pg->impl : c->w->impl;
  return bs_p2p_run(s->p2p, c, bs_comm_front_rank(c), ops, n, done);
}

/* The rank's p2p posts of every group it is in: its peers must not wait
 * for it. The groups are copied under the world's lock, which a p2p
 * waiter takes with its list's held. */
static void leave_p2p(bs_comm *c) {
  bs_world *w = c->w;
  int n = 0;
  bs_pg **pgs = bs_world_pgs_copy(w, &n);
  for (int i = 0; pgs && i < n; i++) {
    int me = bs_pg_rank_of(pgs[i], c->grank);
    if (me >= 0)
      bs_p2p_leave(((sim *)pgs[i]->impl)->p2p, w, me);
  }
  free(pgs);
}

/* Every board's waiters, the groups' too, wake to the world's failure
 * (bs_comm_backend.h). */
static void sim_nudge(bs_world *w) {
  int n = 0;
  bs_pg **pgs = bs_world_pgs_copy(w, &n);
  sim *s = w->impl;
  bs_rounds_nudge(&s->r, w);
  bs_p2p_nudge(s->p2p, w);
  for (int i = 0; pgs && i < n; i++)
    if ((s = pgs[i]->impl)) {
      bs_rounds_nudge(&s->r, w);
      bs_p2p_nudge(s->p2p, w);
    }
  free(pgs);
}

static void sim_rank_gone(bs_comm *c) {
  sim *s = c->w->impl;
  bs_rounds_rank_gone(c);
  bs_p2p_leave(s->p2p, c->w, c->grank);
  bs_rounds_leave_groups(c);
  leave_p2p(c);
}

const bs_comm_backend bs_comm_sim_backend = {
    .name = "sim",
    .shares = true,
    .world_init = sim_world_init,
    .world_fini = sim_world_fini,
    .rank_init = bs_rounds_rank_init,
    .rank_fini = bs_rounds_rank_fini,
    .coll = bs_rounds_coll,
    .rank_gone = sim_rank_gone,
    .wake = sim_nudge, /* one process: no lock needed to tell its waiters */
    .nudge = sim_nudge,
    .group_new = sim_group_new,
    .group_free = sim_group_free,
    .p2p = sim_p2p,
};
