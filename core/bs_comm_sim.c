/* The sim communicator: ranks are threads of one process and every
 * collective is a rendezvous in shared memory that moves real bytes.
 *
 * A round (one collective on every rank) goes: wait for the previous round
 * to drain; stage this rank's input into its host slot; arrive; when all N
 * arrived with matching collectives, every rank computes its own output from
 * the staged inputs (reductions in rank order 0..N-1, so every rank gets the
 * same bits) and copies it to its buffer. Staging first is what makes the
 * in-place forms safe. Because one lock sees every rank, a deadlock (every
 * live rank arrived, and a rank is gone or the collectives differ) is seen
 * the moment it happens, without waiting for the timeout. */
#include "bs_comm_backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_kernels.h"

typedef struct sim_slot {
  void *buf; /* staged input, host memory, kept across rounds */
  size_t cap;
  bs_coll_args a; /* what the rank arrived with */
  bool arrived, gone;
  uint64_t gone_ns, arrived_ns;
  uint64_t next; /* the round this rank joins next; its own thread only */
} sim_slot;

typedef struct sim {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int n;
  uint64_t timeout_ns;
  sim_slot *s;
  uint64_t round;    /* the round being assembled or executed */
  int arrived, done; /* this round */
  bool executing;
} sim;

static struct timespec ts_at(uint64_t ns) {
  return (struct timespec){.tv_sec = (time_t)(ns / 1000000000ull),
                           .tv_nsec = (long)(ns % 1000000000ull)};
}

static bool gate_open(const sim *s, uint64_t round) {
  return s->round == round;
}

static bool exec_ready(const sim *s, uint64_t round) {
  return s->executing && s->round == round;
}

/* Waits (s->mu held) until ready; a timeout fails the world itself rather
 * than trusting the watchdog thread to be scheduled. */
static bs_status sim_wait(sim *s, bs_comm *c, uint64_t since,
                          bool (*ready)(const sim *, uint64_t)) {
  uint64_t round = s->s[c->rank].next;
  struct timespec until = ts_at(since + s->timeout_ns);
  for (;;) {
    if (ready(s, round))
      return BS_OK;
    bs_status ab = bs_world_abort_status(c->w);
    if (ab != BS_OK)
      return ab;
    if (pthread_cond_timedwait(&s->cv, &s->mu, &until) == ETIMEDOUT &&
        !ready(s, round)) {
      ab = bs_world_timeout(c->w, c->rank, since);
      pthread_cond_broadcast(&s->cv);
      return ab;
    }
  }
}

/* What must agree across ranks for the bytes to line up, as NCCL needs:
 * the collective, the byte count, and for reductions the type and op. */
static bool same_coll(const bs_coll_args *x, const bs_coll_args *y) {
  size_t bx = x->count * bs_dtype_size(x->dt);
  size_t by = y->count * bs_dtype_size(y->dt);
  if (x->op != y->op || x->seq != y->seq)
    return false;
  if (x->op == BS_COLL_BARRIER)
    return true;
  if (bx != by)
    return false;
  if (x->op == BS_COLL_BROADCAST)
    return x->root == y->root;
  if (x->op == BS_COLL_ALL_GATHER)
    return true;
  return x->dt == y->dt && x->redop == y->redop;
}

static int first_mismatch(const sim *s) {
  for (int i = 1; i < s->n; i++)
    if (!same_coll(&s->s[i].a, &s->s[0].a))
      return i;
  return -1;
}

static void fail_gone(sim *s, bs_world *w, int nwait) {
  int first = -1, ngone = 0;
  for (int i = 0; i < s->n; i++)
    if (s->s[i].gone) {
      first = first < 0 ? i : first;
      ngone++;
    }
  /* The round was stuck once a rank had left and another had arrived. */
  uint64_t left = UINT64_MAX, came = UINT64_MAX;
  for (int i = 0; i < s->n; i++) {
    if (s->s[i].gone && s->s[i].gone_ns < left)
      left = s->s[i].gone_ns;
    if (s->s[i].arrived && !s->s[i].gone && s->s[i].arrived_ns < came)
      came = s->s[i].arrived_ns;
  }
  uint64_t stall = left > came ? left : came;
  char who[48];
  if (ngone == 1)
    snprintf(who, sizeof who, "rank %d is", w->comms[first].grank);
  else
    snprintf(who, sizeof who, "ranks %d and %d more are", w->comms[first].grank,
             ngone - 1);
  bs_world_fail(w, BS_ERR_RANK_DEAD, stall, NULL, 0,
                "%s gone while %d rank%s wait%s for %s in a collective", who,
                nwait, nwait == 1 ? "" : "s", nwait == 1 ? "s" : "",
                ngone == 1 ? "it" : "them");
}

static void fail_desync(sim *s, bs_world *w, int bad) {
  const bs_coll_args *x = &s->s[0].a, *y = &s->s[bad].a;
  const char *nx = bs_coll_name(x->op) + strlen("nccl:");
  const char *ny = bs_coll_name(y->op) + strlen("nccl:");
  if (x->op != y->op || x->seq != y->seq)
    bs_world_fail(w, BS_ERR_DESYNC, 0, NULL, 0,
                  "ranks wait in different collectives (rank %d: %s #%llu, "
                  "rank %d: %s #%llu)",
                  w->comms[0].grank, nx, (unsigned long long)x->seq,
                  w->comms[bad].grank, ny, (unsigned long long)y->seq);
  else
    bs_world_fail(w, BS_ERR_DESYNC, 0, NULL, 0,
                  "ranks wait in %s #%llu with different sizes (rank %d: "
                  "%zu x %s, rank %d: %zu x %s)",
                  nx, (unsigned long long)x->seq, w->comms[0].grank, x->count,
                  bs_dtype_name(x->dt), w->comms[bad].grank, y->count,
                  bs_dtype_name(y->dt));
}

/* s->mu held. Every live rank blocked in this round, and it cannot
 * complete: fail the world and wake everyone. A rank that is merely slow is
 * neither arrived nor gone, so nothing happens until it shows up. */
static void deadlock_check(sim *s, bs_world *w) {
  int nwait = 0, ngone = 0;
  if (s->executing || bs_world_abort_status(w) != BS_OK)
    return;
  for (int i = 0; i < s->n; i++) {
    nwait += s->s[i].arrived && !s->s[i].gone;
    ngone += s->s[i].gone;
  }
  if (nwait == 0 || nwait + ngone < s->n)
    return;
  if (ngone > 0)
    fail_gone(s, w, nwait);
  else if (first_mismatch(s) > 0)
    fail_desync(s, w, first_mismatch(s));
  else
    return;
  pthread_cond_broadcast(&s->cv);
}

static bs_status copy(bs_comm *c, const bs_coll_args *a, void *dst,
                      const void *src, size_t n, bs_copy_dir dir) {
  if (n == 0)
    return BS_OK;
  if (a->host || !c->dev) {
    memcpy(dst, src, n);
    return BS_OK;
  }
  return c->dev->ops->copy(c->dev, dst, src, n, dir);
}

static bs_status stage(bs_comm *c, const bs_coll_args *a, sim_slot *me) {
  bs_status st = BS_OK;
  size_t n = bs_coll_in_bytes(a, c->w->o.size);
  if (a->op == BS_COLL_BROADCAST && a->root != c->rank)
    n = 0;
  if (n > me->cap) {
    void *p = realloc(me->buf, n);
    if (!p)
      BS_FAIL(BS_ERR_NOMEM, NULL, "sim: %zu bytes of staging", n);
    me->buf = p;
    me->cap = n;
  }
  BS_CHECK(copy(c, a, me->buf, a->send, n, BS_D2H));
out:
  return st;
}

static float load_f(const void *p, size_t i, bs_dtype dt) {
  return dt == BS_BF16 ? bs_k_bf16_to_f32(((const uint16_t *)p)[i])
                       : ((const float *)p)[i];
}

static void store_f(void *p, size_t i, bs_dtype dt, float v) {
  if (dt == BS_BF16)
    ((uint16_t *)p)[i] = bs_k_f32_to_bf16(v);
  else
    ((float *)p)[i] = v;
}

static int64_t load_i(const void *p, size_t i, bs_dtype dt) {
  if (dt == BS_I32)
    return ((const int32_t *)p)[i];
  if (dt == BS_I64)
    return ((const int64_t *)p)[i];
  return ((const uint8_t *)p)[i];
}

/* Integer sums wrap in the element's width, like NCCL's. */
static void store_i(void *p, size_t i, bs_dtype dt, int64_t v) {
  uint64_t u = (uint64_t)v;
  if (dt == BS_I32)
    ((int32_t *)p)[i] = (int32_t)(uint32_t)u;
  else if (dt == BS_I64)
    ((int64_t *)p)[i] = v;
  else
    ((uint8_t *)p)[i] = (uint8_t)u;
}

static float comb_f(float x, float y, bs_redop op) {
  if (op == BS_SUM)
    return x + y;
  if (op == BS_MAX)
    return y > x ? y : x;
  return y < x ? y : x;
}

static int64_t comb_i(int64_t x, int64_t y, bs_redop op) {
  if (op == BS_SUM)
    return (int64_t)((uint64_t)x + (uint64_t)y);
  if (op == BS_MAX)
    return y > x ? y : x;
  return y < x ? y : x;
}

/* out[i] = in[0][i] op in[1][i] op ... in rank order. bf16 accumulates in
 * fp32 and rounds once at the end. */
static void reduce(void *out, const void *const *in, int n, size_t count,
                   bs_dtype dt, bs_redop op) {
  bool fl = dt == BS_BF16 || dt == BS_F32;
  for (size_t i = 0; i < count; i++) {
    if (fl) {
      float acc = load_f(in[0], i, dt);
      for (int j = 1; j < n; j++)
        acc = comb_f(acc, load_f(in[j], i, dt), op);
      store_f(out, i, dt, acc);
    } else {
      int64_t acc = load_i(in[0], i, dt);
      for (int j = 1; j < n; j++)
        acc = comb_i(acc, load_i(in[j], i, dt), op);
      store_i(out, i, dt, acc);
    }
  }
}

static bs_status reduce_out(bs_comm *c, const bs_coll_args *a, const sim *s,
                            size_t off) {
  bs_status st = BS_OK;
  size_t chunk = a->count * bs_dtype_size(a->dt);
  const void **in = malloc((size_t)s->n * sizeof *in);
  void *out = malloc(chunk);
  if (!in || !out)
    BS_FAIL(BS_ERR_NOMEM, NULL, "sim: %zu bytes of reduction", chunk);
  for (int j = 0; j < s->n; j++)
    in[j] = (const char *)s->s[j].buf + off;
  reduce(out, in, s->n, a->count, a->dt, a->redop);
  BS_CHECK(copy(c, a, a->recv, out, chunk, BS_H2D));
out:
  free(in);
  free(out);
  return st;
}

/* This rank's share of the round: only its own output is written. */
static bs_status execute(bs_comm *c, const bs_coll_args *a, const sim *s) {
  bs_status st = BS_OK;
  size_t chunk = a->count * bs_dtype_size(a->dt);
  if (chunk == 0 || a->op == BS_COLL_BARRIER)
    goto out;
  switch (a->op) {
  case BS_COLL_ALL_GATHER:
    for (int j = 0; j < s->n; j++)
      BS_CHECK(copy(c, a, (char *)a->recv + (size_t)j * chunk, s->s[j].buf,
                    chunk, BS_H2D));
    break;
  case BS_COLL_REDUCE_SCATTER:
    BS_CHECK(reduce_out(c, a, s, (size_t)c->rank * chunk));
    break;
  case BS_COLL_ALL_REDUCE:
    BS_CHECK(reduce_out(c, a, s, 0));
    break;
  default: /* broadcast */
    BS_CHECK(copy(c, a, a->recv, s->s[a->root].buf, chunk, BS_H2D));
    break;
  }
out:
  return st;
}

/* s->mu held: the last rank out starts the next round. */
static void depart(sim *s, sim_slot *me) {
  me->next++;
  if (++s->done < s->n)
    return;
  for (int i = 0; i < s->n; i++)
    s->s[i].arrived = false;
  s->executing = false;
  s->arrived = s->done = 0;
  s->round++;
  pthread_cond_broadcast(&s->cv);
}

static void arrive(sim *s, bs_comm *c, sim_slot *me, const bs_coll_args *a) {
  me->a = *a;
  me->arrived = true;
  me->arrived_ns = bs_watchdog_now_ns();
  if (++s->arrived == s->n && first_mismatch(s) < 0) {
    s->executing = true;
    pthread_cond_broadcast(&s->cv);
  } else {
    deadlock_check(s, c->w);
  }
}

static bs_status sim_coll(bs_comm *c, const bs_coll_args *a) {
  sim *s = c->w->impl;
  sim_slot *me = &s->s[c->rank];
  uint64_t since = bs_watchdog_now_ns();
  pthread_mutex_lock(&s->mu);
  bs_status st = sim_wait(s, c, since, gate_open);
  pthread_mutex_unlock(&s->mu);
  if (st != BS_OK)
    return st;
  /* Nobody reads this slot until this rank arrives: stage unlocked. */
  st = stage(c, a, me);
  if (st != BS_OK)
    return st;
  pthread_mutex_lock(&s->mu);
  st = bs_world_abort_status(c->w);
  if (st == BS_OK) {
    arrive(s, c, me, a);
    st = sim_wait(s, c, since, exec_ready);
  }
  pthread_mutex_unlock(&s->mu);
  if (st != BS_OK)
    return st;
  st = execute(c, a, s);
  pthread_mutex_lock(&s->mu);
  depart(s, me);
  pthread_mutex_unlock(&s->mu);
  return st;
}

static void sim_rank_gone(bs_comm *c) {
  sim *s = c->w->impl;
  pthread_mutex_lock(&s->mu);
  s->s[c->rank].gone = true;
  s->s[c->rank].gone_ns = bs_watchdog_now_ns();
  deadlock_check(s, c->w);
  pthread_mutex_unlock(&s->mu);
}

static void sim_wake(bs_world *w) {
  sim *s = w->impl;
  pthread_mutex_lock(&s->mu);
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

static bs_status sim_world_init(bs_world *w) {
  bs_status st = BS_OK;
  pthread_condattr_t ca;
  sim *s = calloc(1, sizeof *s);
  if (w->o.global_size != w->o.size)
    BS_FAIL(BS_ERR_CONFIG, NULL,
            "sim backend: every rank is a thread of this process (size %d, "
            "global size %d)",
            w->o.size, w->o.global_size);
  if (!s || !(s->s = calloc((size_t)w->o.size, sizeof *s->s)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "sim: %d ranks", w->o.size);
  s->n = w->o.size;
  s->timeout_ns = (uint64_t)w->o.timeout_ms * 1000000ull;
  pthread_mutex_init(&s->mu, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cv, &ca);
  pthread_condattr_destroy(&ca);
  w->impl = s;
  s = NULL;
out:
  free(s);
  return st;
}

static void sim_world_fini(bs_world *w) {
  sim *s = w->impl;
  for (int i = 0; i < s->n; i++)
    free(s->s[i].buf);
  free(s->s);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  free(s);
  w->impl = NULL;
}

static bs_status sim_rank_init(bs_comm *c) {
  (void)c;
  return BS_OK;
}

static void sim_rank_fini(bs_comm *c) {
  (void)c;
}

const bs_comm_backend bs_comm_sim_backend = {
    .name = "sim",
    .world_init = sim_world_init,
    .world_fini = sim_world_fini,
    .rank_init = sim_rank_init,
    .rank_fini = sim_rank_fini,
    .coll = sim_coll,
    .rank_gone = sim_rank_gone,
    .wake = sim_wake,
};
