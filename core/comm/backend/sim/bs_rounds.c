/* The staged rendezvous of the sim communicator (bs_rounds.h). */
#include "comm/backend/sim/bs_rounds.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_clock.h"
#include "bs_kernels.h"
#include "bs_mutant.h"
#include "bs_pages.h"
#include "bs_vec.h"

void bs_rounds_lock(bs_rounds *r) {
  if (pthread_mutex_lock(r->mu) == EOWNERDEAD)
    pthread_mutex_consistent(r->mu);
}

void bs_rounds_unlock(bs_rounds *r) {
  pthread_mutex_unlock(r->mu);
}

/* Locked: every waiter re-checks, the other processes learn first. */
static void broadcast(bs_rounds *r, bs_world *w) {
  if (r->publish)
    r->publish(r, w);
  bs_rounds_nudge(r, w);
}

/* Locked: what waiters of key wait for happened; across processes every
 * waiter re-checks (the epoch moves either way). */
static void signal_waiters(bs_rounds *r, bs_world *w, const void *key) {
  if (r->publish)
    r->publish(r, w);
  bs_world_sched_signal(w, &r->b->epoch, key);
}

/* The epoch moves after the failure is set: a waiter that read it before
 * either sees the failure or finds the futex word changed. Under a
 * scheduler the waiters sleep on what they wait for (key_of): each wakes. */
void bs_rounds_nudge(bs_rounds *r, bs_world *w) {
  bs_world_sched_bump(w, &r->b->epoch);
  bs_world_sched_notify(w, &r->b->departed);
  bs_world_sched_notify(w, &r->b->executing[0]);
  bs_world_sched_notify(w, &r->b->executing[1]);
}

/* Every rank has left the rounds below `below`. */
static bool gate_open(const bs_rounds_board *b, uint64_t below) {
  return atomic_load(&b->departed) >= below;
}

/* Its parity's state is round's once a rank waits in it (bs_rounds.h). */
static bool exec_ready(const bs_rounds_board *b, uint64_t round) {
  return atomic_load(&b->executing[round & 1]);
}

/* The round being assembled: D, or D+1 while D executes. */
static uint64_t assembling(const bs_rounds_board *b) {
  uint64_t d = atomic_load(&b->departed);
  return atomic_load(&b->executing[d & 1]) ? d + 1 : d;
}

/* Mutant failure-before-ready (this sim before 69a4020): a waiter looks at
 * the world's failure before at its round, so a round its peers completed
 * fails here alone when one of them went on and failed the world before
 * this rank looked (a race of real threads; an interleaving of a
 * scheduled world's). */
static bool failure_first(const bs_comm *c) {
  return bs_mutant_on(BS_MUT_FAILURE_BEFORE_READY) &&
         bs_world_abort_status(c->w) != BS_OK;
}

/* What a waiter until ready(round) sleeps on under a scheduler: the word
 * whose change may make it ready (the gate's departures, the round's
 * parity executing), so that a round that completes wakes its own waiters
 * and not the gate's, nor those of the next round, which cannot go on. */
static const void *key_of(const bs_rounds_board *b, uint64_t round,
                          bool (*ready)(const bs_rounds_board *, uint64_t)) {
  return ready == gate_open ? (const void *)&b->departed
                            : (const void *)&b->executing[round & 1];
}

/* Waits (unlocked) until ready for round; a timeout fails the world itself
 * rather than trusting the watchdog thread to be scheduled. The epoch is
 * read before the checks: a broadcast after them ends the sleep at once. */
static bs_status wait_for(bs_rounds *r, bs_comm *c, uint64_t round,
                          uint64_t since,
                          bool (*ready)(const bs_rounds_board *, uint64_t)) {
  for (;;) {
    /* Moved on while the world comes up (bs_watchdog_hold). */
    bs_watchdog_hold(c->w->wd, atomic_load(&r->b->held_ns));
    since = bs_watchdog_since(c->w->wd, since);
    uint64_t until = since + r->timeout_ns;
    uint32_t seen = atomic_load(&r->b->epoch);
    if (failure_first(c))
      return bs_world_abort_status(c->w);
    if (ready(r->b, round))
      return BS_OK;
    if (r->poll) {
      bs_rounds_lock(r);
      r->poll(r, c->w);
      bs_rounds_unlock(r);
    }
    /* A failure seen after the check above may come from a peer that
     * went through this round meanwhile: the round completes here too, or
     * this rank alone would fail a collective its peers completed. */
    bs_status ab = bs_world_abort_status(c->w);
    if (ab != BS_OK)
      return ready(r->b, round) ? BS_OK : ab;
    uint64_t now = bs_clock_mono_ns();
    if (now >= until) {
      bs_rounds_lock(r);
      ab = bs_world_timeout(c->w, c->rank, since);
      broadcast(r, c->w);
      bs_rounds_unlock(r);
      return ab;
    }
    uint64_t ns = until - now;
    bs_world_sched_wait_key(c->w, &r->b->epoch, seen,
                            key_of(r->b, round, ready),
                            r->slice_ns && r->slice_ns < ns ? r->slice_ns : ns);
  }
}

/* What must agree across ranks for the bytes to line up, as NCCL needs:
 * the collective, the byte count, and for reductions the type and op. */
static bool same_coll(const bs_coll_args *x, const bs_coll_args *y) {
  size_t bx = x->count * bs_dtype_size(x->dt);
  size_t by = y->count * bs_dtype_size(y->dt);
  if (x->op != y->op || x->seq != y->seq || strcmp(x->name, y->name) != 0)
    return false;
  if (!bs_coll_has_data(x->op))
    return true;
  if (bx != by)
    return false;
  if (x->op == BS_COLL_BROADCAST)
    return x->root == y->root;
  if (x->op == BS_COLL_ALL_GATHER)
    return true;
  return x->dt == y->dt && x->redop == y->redop;
}

static int first_mismatch(const bs_rounds *r) {
  for (int i = 1; i < r->b->n; i++)
    if (!same_coll(&r->s[i].a, &r->s[0].a))
      return i;
  return -1;
}

/* The global rank of slot i, and the group it is in for messages. */
static int global_of(const bs_rounds *r, int i) {
  return bs_pg_global(r->pg, i);
}

static const char *in_group(const bs_rounds *r, char *buf, size_t n) {
  return bs_pg_of_text(r->pg, buf, n);
}

static void fail_gone(const bs_rounds *r, bs_world *w, int nwait,
                      uint64_t round) {
  int first = -1, ngone = 0;
  for (int i = 0; i < r->b->n; i++)
    if (r->s[i].gone) {
      first = first < 0 ? i : first;
      ngone++;
    }
  /* The round was stuck once a rank had left and another had arrived. */
  uint64_t left = UINT64_MAX, came = UINT64_MAX;
  for (int i = 0; i < r->b->n; i++) {
    const bs_rounds_slot *s = &r->s[i];
    if (s->gone && s->gone_ns < left)
      left = s->gone_ns;
    if (s->arrived_at == round + 1 && !s->gone && s->arrived_ns < came)
      came = s->arrived_ns;
  }
  uint64_t stall = left > came ? left : came;
  char who[48], g[BS_PG_NAME + 16];
  if (ngone == 1)
    snprintf(who, sizeof who, "rank %d is", global_of(r, first));
  else
    snprintf(who, sizeof who, "ranks %d and %d more are", global_of(r, first),
             ngone - 1);
  bs_world_fail(w, BS_ERR_RANK_DEAD, stall, NULL, 0,
                "%s gone while %d rank%s wait%s for %s in a collective%s", who,
                nwait, nwait == 1 ? "" : "s", nwait == 1 ? "s" : "",
                ngone == 1 ? "it" : "them", in_group(r, g, sizeof g));
}

static void fail_desync(const bs_rounds *r, bs_world *w, int bad) {
  const bs_coll_args *x = &r->s[0].a, *y = &r->s[bad].a;
  const char *nx = bs_coll_args_name(x), *ny = bs_coll_args_name(y);
  char g[BS_PG_NAME + 16];
  int r0 = global_of(r, 0), rb = global_of(r, bad);
  in_group(r, g, sizeof g);
  if (x->op != y->op || x->seq != y->seq || strcmp(nx, ny) != 0)
    bs_world_fail(w, BS_ERR_DESYNC, 0, NULL, 0,
                  "ranks wait in different collectives%s (rank %d: %s #%llu, "
                  "rank %d: %s #%llu)",
                  g, r0, nx, (unsigned long long)x->seq, rb, ny,
                  (unsigned long long)y->seq);
  else
    bs_world_fail(w, BS_ERR_DESYNC, 0, NULL, 0,
                  "ranks wait in %s #%llu%s with different sizes (rank %d: "
                  "%zu x %s, rank %d: %zu x %s)",
                  nx, (unsigned long long)x->seq, g, r0, x->count,
                  bs_dtype_name(x->dt), rb, y->count, bs_dtype_name(y->dt));
}

/* Every live rank blocked in round, and it cannot complete: fail the world
 * and wake everyone. A rank that is merely slow is neither arrived nor
 * gone, so nothing happens until it shows up. The board's counts say
 * when: a look at every slot only once every rank is in. */
static void check_round(bs_rounds *r, bs_world *w, uint64_t round) {
  int p = (int)(round & 1);
  int nwait = atomic_load(&r->b->arrived[p]), ngone = atomic_load(&r->b->gone);
  if (atomic_load(&r->b->executing[p]) || bs_world_abort_status(w) != BS_OK)
    return;
  if (nwait == 0 || nwait + ngone < r->b->n)
    return;
  if (ngone > 0)
    fail_gone(r, w, nwait, round);
  else if (first_mismatch(r) > 0)
    fail_desync(r, w, first_mismatch(r));
  else
    return;
  broadcast(r, w);
}

void bs_rounds_check(bs_rounds *r, bs_world *w) {
  check_round(r, w, assembling(r->b));
}

static bs_status copy(bs_comm *c, const bs_coll_args *a, void *dst,
                      const void *src, size_t n, bs_copy_dir dir) {
  if (n == 0)
    return BS_OK;
  if (a->host || !c->dev) {
    memcpy(dst, src, n);
    return BS_OK;
  }
  return bs_dev_copy_observe(c->dev, dst, src, n, dir);
}

/* Every rank a thread of this process and its send buffer this process's
 * memory: the rank that prepares the round reads it in place (its owner
 * waits in the round until the result is made), so no rank holds a copy.
 * The copies were N ranks x the world-padded grad buffer of every
 * reduce-scatter: 2 GiB of a 16,384-rank world. */
static bool borrows(const bs_rounds *r, const bs_comm *c,
                    const bs_coll_args *a) {
  return r->one_process && (a->host || !c->dev || bs_dev_in_process(c->dev));
}

/* Reads a byte of every page on the owner's thread: a paused region traps
 * here (bs_trap), on its own rank, as a copy of it would, and not on the
 * rank that prepares the round. */
static void touch(const void *p, size_t n) {
  const volatile char *b = p;
  for (size_t i = 0; i < n; i += 4096)
    (void)b[i];
  if (n)
    (void)b[n - 1];
}

static float load_f(const void *p, size_t i, bs_dtype dt) {
  return dt == BS_BF16 ? bs_k_cast_bf16_to_f32(((const uint16_t *)p)[i])
                       : ((const float *)p)[i];
}

static void store_f(void *p, size_t i, bs_dtype dt, float v) {
  if (dt == BS_BF16)
    ((uint16_t *)p)[i] = bs_k_cast_f32_to_bf16(v);
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

/* Max and min; sums add up in double (sum_add). */
static float comb_f(float x, float y, bs_redop op) {
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

/* A sum adds up in double and rounds once (sums_to): exact where the
 * addends' bits span under 53 (the sim's gradients: a sum of thousands of
 * them spans some 42), so neither the ranks' order nor the order they
 * arrive in (a consumed round's, add_in) changes a bit. */
static void sum_first(double *sum, const void *in, size_t count, bs_dtype dt) {
  for (size_t i = 0; i < count; i++)
    sum[i] = load_f(in, i, dt);
}

static void sum_add(double *sum, const void *in, size_t count, bs_dtype dt) {
  for (size_t i = 0; i < count; i++)
    sum[i] += load_f(in, i, dt);
}

static void sums_to(void *out, const double *sum, size_t count, bs_dtype dt) {
  for (size_t i = 0; i < count; i++)
    store_f(out, i, dt, (float)sum[i]);
}

static void reduce_f(float *acc, const void *const *in, int n, size_t count,
                     bs_dtype dt, bs_redop op) {
  for (size_t i = 0; i < count; i++)
    acc[i] = load_f(in[0], i, dt);
  for (int j = 1; j < n; j++)
    for (size_t i = 0; i < count; i++)
      acc[i] = comb_f(acc[i], load_f(in[j], i, dt), op);
}

/* A summing reduce-scatter of a dead input (bs_comm_reduce_scatter_made),
 * whose input this process can read: added in as it arrives. */
static bool consumed(const bs_rounds *r, const bs_comm *c,
                     const bs_coll_args *a) {
  return a->consume && a->op == BS_COLL_REDUCE_SCATTER && a->redop == BS_SUM &&
         (a->dt == BS_F32 || a->dt == BS_BF16) && a->count > 0 &&
         borrows(r, c, a);
}

/* Locked: the first input starts parity p's sum, the others add to it. */
static void add_in(bs_rounds *r, int p, const bs_coll_args *a, size_t n) {
  if (r->summed[p]++ == 0) {
    r->sum_a[p] = *a;
    r->sum_bad[p] =
        n > r->sum_cap[p] && !bs_vec_grow(&r->sum[p], NULL, n, sizeof(double));
    if (!r->sum_bad[p]) {
      r->sum_cap[p] = n > r->sum_cap[p] ? n : r->sum_cap[p];
      sum_first(r->sum[p], a->send, n, a->dt);
    }
  } else if (r->sum_bad[p] || !same_coll(a, &r->sum_a[p])) {
    r->sum_bad[p] = true;
  } else {
    sum_add(r->sum[p], a->send, n, a->dt);
  }
}

/* Dead bytes of a rank's buffer: host memory (the front's own, a world
 * without devices) or the device's. */
static void drop(const bs_comm *c, const bs_coll_args *a, char *p, size_t n) {
  if (a->host || !c->dev)
    bs_pages_drop(p, n);
  else
    bs_dev_discard(c->dev, p, n);
}

/* This rank's input goes into parity p's sum, then its pages, but for its
 * own shard (recv, inside it: in place), which it reads back. Read on the
 * owner's rank, as touch() does: a paused buffer traps here. */
static void consume(bs_rounds *r, bs_comm *c, int p, const bs_coll_args *a) {
  size_t n = a->count * (size_t)r->b->n, es = bs_dtype_size(a->dt);
  char *send = (char *)a->send, *recv = a->recv;
  touch(send, n * es);
  bs_rounds_lock(r);
  add_in(r, p, a, n);
  bs_rounds_unlock(r);
  bool inside = recv >= send && recv + a->count * es <= send + n * es;
  if (!inside) {
    drop(c, a, send, n * es);
    return;
  }
  drop(c, a, send, (size_t)(recv - send));
  drop(c, a, recv + a->count * es,
       n * es - (size_t)(recv - send) - a->count * es);
}

/* Nobody reads this rank's input until it arrives: staged unlocked. */
static bs_status stage(bs_rounds *r, bs_comm *c, int me, const bs_coll_args *a,
                       int p) {
  bs_status st = BS_OK;
  size_t n = bs_coll_in_bytes(a, r->b->n);
  if (consumed(r, c, a)) {
    consume(r, c, p, a);
    goto out;
  }
  if (a->op == BS_COLL_BROADCAST && a->root != me)
    n = 0;
  if (borrows(r, c, a)) {
    touch(a->send, n);
    r->in[me] = (void *)a->send; /* read only (prepare) */
    goto out;
  }
  BS_CHECK(r->room(r, me, a, n));
  BS_CHECK(copy(c, a, r->in[me], a->send, n, BS_D2H));
out:
  return st;
}

static void reduce_i(int64_t *acc, const void *const *in, int n, size_t count,
                     bs_dtype dt, bs_redop op) {
  for (size_t i = 0; i < count; i++)
    acc[i] = load_i(in[0], i, dt);
  for (int j = 1; j < n; j++)
    for (size_t i = 0; i < count; i++)
      acc[i] = comb_i(acc[i], load_i(in[j], i, dt), op);
}

/* out[i] = in[0][i] op in[1][i] op ... in rank order, reading one rank's
 * input after the other (thousands of ranks' inputs, each read once and
 * in order). bf16 accumulates in fp32 and rounds once at the end. */
static bs_status reduce(void *out, const void *const *in, int n, size_t count,
                        bs_dtype dt, bs_redop op) {
  bool fl = dt == BS_BF16 || dt == BS_F32;
  bool sum = fl && op == BS_SUM;
  void *acc = malloc((count ? count : 1) * (fl && !sum ? sizeof(float) : 8));
  if (!acc)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "sim: reduction of %zu elements",
                       count);
  if (sum) {
    sum_first(acc, in[0], count, dt);
    for (int j = 1; j < n; j++)
      sum_add(acc, in[j], count, dt);
    sums_to(out, acc, count, dt);
  } else if (fl) {
    reduce_f(acc, in, n, count, dt, op);
    for (size_t i = 0; i < count; i++)
      store_f(out, i, dt, ((float *)acc)[i]);
  } else {
    reduce_i(acc, in, n, count, dt, op);
    for (size_t i = 0; i < count; i++)
      store_i(out, i, dt, ((int64_t *)acc)[i]);
  }
  free(acc);
  return BS_OK;
}

/* The reduction of count elements of every rank's staged bytes at off. */
static bs_status reduce_into(const bs_rounds *r, const bs_coll_args *a,
                             size_t count, size_t off, void *out) {
  bs_status st = BS_OK;
  int n = r->b->n;
  const void **in = malloc((size_t)n * sizeof *in);
  if (!in)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "sim: reduction of %d ranks", n);
  for (int j = 0; j < n; j++)
    in[j] = (const char *)r->in[j] + off;
  st = reduce(out, in, n, count, a->dt, a->redop);
  free(in);
  return st;
}

static bs_status reduce_out(const bs_rounds *r, bs_comm *c,
                            const bs_coll_args *a, size_t off) {
  bs_status st = BS_OK;
  size_t chunk = a->count * bs_dtype_size(a->dt);
  void *out = malloc(chunk);
  if (!out)
    BS_FAIL(BS_ERR_NOMEM, NULL, "sim: %zu bytes of reduction", chunk);
  BS_CHECK(reduce_into(r, a, a->count, off, out));
  BS_CHECK(copy(c, a, a->recv, out, chunk, BS_H2D));
out:
  free(out);
  return st;
}

/* The round's whole result, made once: what each rank copies its part of
 * (all-reduce: the reduction; reduce-scatter: every rank's chunk of it;
 * all-gather: the inputs end to end). */
static bs_status prepare(bs_rounds *r, const bs_coll_args *a, size_t chunk,
                         int p) {
  int n = r->b->n;
  void *red = r->red[p];
  if (r->summed[p] > 0) { /* consumed: every input is in the sum already */
    if (r->sum_bad[p] || r->summed[p] != n)
      return BS_ERR_NOMEM;
    sums_to(red, r->sum[p], a->count * (size_t)n, a->dt);
    return BS_OK;
  }
  if (a->op == BS_COLL_ALL_REDUCE)
    return reduce_into(r, a, a->count, 0, red);
  if (a->op == BS_COLL_REDUCE_SCATTER)
    return reduce_into(r, a, a->count * (size_t)n, 0, red);
  if (a->op == BS_COLL_BROADCAST)
    memcpy(red, r->in[a->root], chunk);
  for (int j = 0; a->op == BS_COLL_ALL_GATHER && j < n; j++)
    memcpy((char *)red + (size_t)j * chunk, r->in[j], chunk);
  return BS_OK;
}

/* Locked, as the last rank arrives, when every rank is a thread of this
 * process: the result made once (bs_rounds.h), so a round's work grows with the
 * ranks and the bytes, not with their product. Without the room for it each
 * rank works for itself. */
static void prepare_for_all(bs_rounds *r, const bs_coll_args *a, int p) {
  size_t chunk = a->count * bs_dtype_size(a->dt);
  bool whole = a->op == BS_COLL_ALL_GATHER || a->op == BS_COLL_REDUCE_SCATTER;
  size_t need = whole ? chunk * (size_t)r->b->n : chunk;
  if (!bs_coll_has_data(a->op) || chunk == 0) {
    r->b->prepared[p] = true; /* nothing staged to keep */
    return;
  }
  /* Exactly need (cap NULL): the result of a collective of weights is too
   * big to double. */
  if (need > r->red_cap[p]) {
    if (!bs_vec_grow(&r->red[p], NULL, need, 1))
      return;
    r->red_cap[p] = need;
  }
  bs_error saved = *bs_err(); /* this rank's own failure, if it has one */
  r->b->prepared[p] = prepare(r, a, chunk, p) == BS_OK;
  *bs_err() = saved;
}

/* This rank's share of round p's collective, its own output only: its part
 * of the result made for all when the round was prepared, else worked out
 * from the staged inputs. */
static bs_status execute(const bs_rounds *r, bs_comm *c, int me,
                         const bs_coll_args *a, int p) {
  bs_status st = BS_OK;
  size_t chunk = a->count * bs_dtype_size(a->dt);
  size_t mine = (size_t)me * chunk;
  if (chunk == 0 || !bs_coll_has_data(a->op))
    goto out;
  /* Borrowed inputs are no longer there to work from: their owners write
   * their outputs now. */
  if ((a->view || borrows(r, c, a)) && !r->b->prepared[p])
    BS_FAIL(BS_ERR_NOMEM, NULL, "sim: no room for the %zu bytes of %s",
            chunk * (size_t)r->b->n, bs_coll_name(a->op) + strlen("nccl:"));
  if (a->view) { /* the one result, read where it was made */
    *a->view = r->red[p];
    goto out;
  }
  if (r->b->prepared[p]) {
    size_t off = a->op == BS_COLL_REDUCE_SCATTER ? mine : 0;
    size_t len = a->op == BS_COLL_ALL_GATHER ? chunk * (size_t)r->b->n : chunk;
    BS_CHECK(copy(c, a, a->recv, (const char *)r->red[p] + off, len, BS_H2D));
    goto out;
  }
  switch (a->op) {
  case BS_COLL_ALL_GATHER:
    for (int j = 0; j < r->b->n; j++)
      BS_CHECK(copy(c, a, (char *)a->recv + (size_t)j * chunk, r->in[j], chunk,
                    BS_H2D));
    break;
  case BS_COLL_REDUCE_SCATTER:
    BS_CHECK(reduce_out(r, c, a, mine));
    break;
  case BS_COLL_ALL_REDUCE:
    BS_CHECK(reduce_out(r, c, a, 0));
    break;
  default: /* broadcast */
    BS_CHECK(copy(c, a, a->recv, r->in[a->root], chunk, BS_H2D));
    break;
  }
out:
  return st;
}

/* Locked: the last rank out of round frees its parity's state for round+2
 * (no rank can arrive there before this rank arrives at round+1). */
static void next_round(bs_rounds *r, bs_world *w, uint64_t round) {
  bs_rounds_board *b = r->b;
  int p = (int)(round & 1);
  atomic_store(&b->executing[p], false);
  b->prepared[p] = false;
  r->summed[p] = 0;
  r->sum_bad[p] = false;
  atomic_store(&b->arrived[p], 0);
  atomic_store(&b->done[p], 0);
  atomic_store(&b->departed, round + 1);
  signal_waiters(r, w, &b->departed);
}

/* True for the last rank out of the round it is in. */
static bool depart(bs_rounds *r, int rank) {
  int p = (int)(r->s[rank].next++ & 1);
  return atomic_fetch_add(&r->b->done[p], 1) + 1 == r->b->n;
}

/* Unlocked until the last arrival (or an arrival that leaves the round
 * stuck, with ranks gone): that one decides, locked. */
static void arrived(bs_rounds *r, bs_world *w, const bs_coll_args *a,
                    uint64_t round) {
  bs_rounds_board *b = r->b;
  int p = (int)(round & 1);
  if (atomic_load(&b->executing[p]) || bs_world_abort_status(w) != BS_OK)
    return;
  if (atomic_load(&b->arrived[p]) == b->n && first_mismatch(r) < 0) {
    if (r->one_process)
      prepare_for_all(r, a, p);
    atomic_store(&b->executing[p], true);
    signal_waiters(r, w, &b->executing[p]);
  } else {
    check_round(r, w, round);
  }
}

/* How a rank counts itself on the board, as it arrives or leaves: in one
 * process unlocked, and only the rank that completes the count takes the
 * lock, to decide; across processes every count takes it (settled()). */
static void count_begin(bs_rounds *r) {
  if (!r->one_process)
    bs_rounds_lock(r);
}

/* After the count: true, locked, when this rank completed it and decides
 * (then unlocks); false, unlocked, when not. */
static bool count_decides(bs_rounds *r, bool completed) {
  if (completed && r->one_process)
    bs_rounds_lock(r);
  else if (!completed && !r->one_process)
    bs_rounds_unlock(r);
  return completed;
}

/* Unlocked: the round's modelled time on a virtual clock, spent once, by
 * the rank that completes it, before it executes (every other rank waits
 * in it meanwhile: one hand-over a rank and round, not two). */
static void spend_round(const bs_rounds *r, bs_world *w,
                        const bs_coll_args *a) {
  int n = r->b->n;
  size_t bytes = bs_coll_in_bytes(a, n) + bs_coll_out_bytes(a, n);
  bs_world_sched_spend(w, bs_world_sched_cost(bytes));
}

static void arrive(bs_rounds *r, bs_world *w, int rank, const bs_coll_args *a,
                   uint64_t round) {
  bs_rounds_slot *me = &r->s[rank];
  me->a = *a;
  me->a.send = me->a.recv = NULL; /* another process cannot follow them */
  me->a.view = NULL;
  me->a.label = NULL;
  me->arrived_at = round + 1;
  me->arrived_ns = bs_clock_mono_ns();
  uint64_t held = atomic_load(&r->b->held_ns);
  while (held < me->arrived_ns &&
         !atomic_compare_exchange_weak(&r->b->held_ns, &held, me->arrived_ns))
    ;
  count_begin(r);
  int k = atomic_fetch_add(&r->b->arrived[round & 1], 1) + 1;
  bool completes = k + atomic_load(&r->b->gone) >= r->b->n;
  if (completes && r->one_process)
    spend_round(r, w, a);
  if (count_decides(r, completes)) {
    arrived(r, w, a, round);
    bs_rounds_unlock(r);
  }
  /* Every rank of the round may leave it first, not only the one that
   * completed it: the schedule picks among them all. */
  if (completes && r->one_process)
    bs_world_sched_yield(w);
}

/* Ranks in other processes: their counts on the board order this
 * process's threads as the lock does, but a race detector sees only the
 * lock, so across processes arrivals and departures take it and a waiter
 * takes it once woken. */
static void settled(bs_rounds *r) {
  if (r->one_process)
    return;
  bs_rounds_lock(r);
  bs_rounds_unlock(r);
}

static void leave_round(bs_rounds *r, bs_world *w, int rank, uint64_t round) {
  count_begin(r);
  if (count_decides(r, depart(r, rank))) {
    next_round(r, w, round);
    bs_rounds_unlock(r);
  }
}

bs_status bs_rounds_coll(bs_comm *c, const bs_coll_args *a) {
  bs_rounds *r = c->pg ? c->pg->impl : c->w->impl;
  int slot = c->pg ? c->pg_rank : c->grank;
  bs_rounds_slot *me = &r->s[slot];
  uint64_t since = bs_clock_mono_ns();
  uint64_t round = me->next; /* only this rank moves it */
  /* After a prepared round nobody reads this rank's staged input again. */
  uint64_t below = me->fast && round ? round - 1 : round;
  bs_status st = wait_for(r, c, below, since, gate_open);
  settled(r);
  if (st == BS_OK)
    st = stage(r, c, slot, a, (int)(round & 1));
  if (st == BS_OK)
    st = bs_world_abort_status(c->w);
  if (st != BS_OK)
    return st;
  arrive(r, c->w, slot, a, round);
  st = wait_for(r, c, round, since, exec_ready);
  settled(r);
  if (st != BS_OK)
    return st;
  int p = (int)(round & 1);
  st = execute(r, c, slot, a, p);
  me->fast = r->one_process && r->b->prepared[p];
  leave_round(r, c->w, slot, round);
  return st;
}

/* A rank that leaves inside a round (its process died there) cannot
 * depart, nor count as arrived: the round goes on, or fails, without it. */
void bs_rounds_leave(bs_rounds *r, bs_world *w, int rank) {
  bs_rounds_slot *s = &r->s[rank];
  if (s->gone)
    return;
  s->gone = true;
  s->gone_ns = bs_clock_mono_ns();
  atomic_fetch_add(&r->b->gone, 1);
  uint64_t round = s->next;
  int p = (int)(round & 1);
  if (s->arrived_at != round + 1)
    return;
  if (atomic_load(&r->b->executing[p])) {
    if (depart(r, rank))
      next_round(r, w, round);
  } else {
    s->arrived_at = 0;
    atomic_fetch_sub(&r->b->arrived[p], 1);
  }
}

void bs_rounds_rank_gone(bs_comm *c) {
  bs_rounds *r = c->w->impl;
  bs_rounds_lock(r);
  bs_rounds_leave(r, c->w, c->grank);
  bs_rounds_check(r, c->w);
  bs_rounds_unlock(r);
}

void bs_rounds_wake(bs_world *w) {
  bs_rounds *r = w->impl;
  bs_rounds_lock(r);
  broadcast(r, w);
  bs_rounds_unlock(r);
}

/* The groups are copied under the world's lock (they live as long as the
 * world): leaving them takes their boards' locks, which are taken before
 * the world's elsewhere. */
void bs_rounds_leave_groups(bs_comm *c) {
  bs_world *w = c->w;
  int n = 0;
  bs_pg **pgs = bs_world_pgs_copy(w, &n);
  for (int i = 0; pgs && i < n; i++) {
    int me = bs_pg_rank_of(pgs[i], c->grank);
    bs_rounds *r = pgs[i]->impl;
    if (me < 0 || !r || !r->b)
      continue;
    bs_rounds_lock(r);
    bs_rounds_leave(r, w, me);
    bs_rounds_check(r, w);
    bs_rounds_unlock(r);
  }
  free(pgs);
}

bs_status bs_rounds_rank_init(bs_comm *c) {
  (void)c;
  return BS_OK;
}

void bs_rounds_rank_fini(bs_comm *c) {
  (void)c;
}
