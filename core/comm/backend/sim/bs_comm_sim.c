/* The sim communicator: ranks are threads of one process and every
 * collective is the staged rendezvous of bs_rdv.c, on a board in this
 * process's memory, that moves real bytes. Each rank's staged input is a
 * host buffer of its own, grown as needed and kept across rounds. */
#include "comm/backend/sim/bs_rdv.h"

#include <stdlib.h>

typedef struct sim {
  bs_rdv r; /* first: w->impl */
  pthread_mutex_t mu;
  bs_rdv_board b;
  size_t *cap; /* of each rank's staging buffer */
} sim;

static bs_status sim_room(bs_rdv *r, int rank, const bs_coll_args *a,
                          size_t n) {
  sim *s = (sim *)r;
  (void)a;
  if (n <= s->cap[rank])
    return BS_OK;
  void *p = realloc(r->in[rank], n);
  if (!p)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "sim: %zu bytes of staging", n);
  r->in[rank] = p;
  s->cap[rank] = n;
  return BS_OK;
}

static bs_status sim_world_init(bs_world *w) {
  bs_status st = BS_OK;
  sim *s = calloc(1, sizeof *s);
  size_t n = (size_t)w->o.size;
  if (w->o.global_size != w->o.size)
    BS_FAIL(BS_ERR_CONFIG, NULL,
            "sim backend: every rank is a thread of this process (size %d, "
            "global size %d)",
            w->o.size, w->o.global_size);
  if (!s || !(s->r.s = calloc(n, sizeof *s->r.s)) ||
      !(s->r.in = calloc(n, sizeof *s->r.in)) ||
      !(s->cap = calloc(n, sizeof *s->cap)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "sim: %d ranks", w->o.size);
  s->b.n = w->o.size;
  s->r.b = &s->b;
  s->r.mu = &s->mu;
  s->r.timeout_ns = (uint64_t)w->o.timeout_ms * 1000000ull;
  s->r.room = sim_room;
  s->r.one_process = true;
  pthread_mutex_init(&s->mu, NULL);
  w->impl = s;
  s = NULL;
out:
  if (s) {
    free(s->r.s);
    free(s->r.in);
    free(s->cap);
  }
  free(s);
  return st;
}

static void sim_world_fini(bs_world *w) {
  sim *s = w->impl;
  for (int i = 0; i < s->b.n; i++)
    free(s->r.in[i]);
  free(s->r.in);
  free(s->r.s);
  free(s->cap);
  free(s->r.red[0]);
  free(s->r.red[1]);
  pthread_mutex_destroy(&s->mu);
  free(s);
  w->impl = NULL;
}

const bs_comm_backend bs_comm_sim_backend = {
    .name = "sim",
    .shares = true,
    .world_init = sim_world_init,
    .world_fini = sim_world_fini,
    .rank_init = bs_rdv_rank_init,
    .rank_fini = bs_rdv_rank_fini,
    .coll = bs_rdv_coll,
    .rank_gone = bs_rdv_rank_gone,
    .wake = bs_rdv_wake,
};
