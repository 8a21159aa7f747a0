/* Point-to-point across processes through files (bs_p2p_files.h). */
#include "comm/backend/sim/bs_p2p_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bs_clock.h"
#include "bs_file.h"
#include "comm/front/bs_pg.h"

enum { POLL_NS = 1000000 };

/* The sends and recvs c made with each peer of its group so far. */
typedef struct pairs {
  uint64_t *sent, *got;
} pairs;

static pairs *pairs_of(bs_comm *c) {
  int n = bs_comm_front_size(c);
  pairs *p = c->impl;
  if (p)
    return p;
  if (!(p = calloc(1, sizeof *p)) ||
      !(p->sent = calloc((size_t)n, sizeof *p->sent)) ||
      !(p->got = calloc((size_t)n, sizeof *p->got))) {
    if (p)
      free(p->sent);
    free(p);
    return NULL;
  }
  c->impl = p;
  return p;
}

void bs_p2p_files_free(bs_comm *c) {
  pairs *p = c->impl;
  if (!p)
    return;
  free(p->sent);
  free(p->got);
  free(p);
  c->impl = NULL;
}

/* A group's files beside its board (bs_pg_file: by its name, as every
 * process knows it; not by its id, the order this process made its groups
 * in, which differs between processes of ranks in different groups). */
static void path_of(const bs_comm *c, int src, int dst, uint64_t k, char *out,
                    size_t n) {
  char base[4200];
  bs_pg_file(c->pg, c->w->o.shm_path, base, sizeof base);
  snprintf(out, n, "%s.p2p.%d.%d.%llu", base, src, dst, (unsigned long long)k);
}

static bool world_failed(const void *w) {
  return bs_world_abort_status(w) != BS_OK;
}

/* The world fails with why (published for the other processes). */
static bs_status fail(bs_comm *c, bs_status why, const char *cause,
                      void (*publish)(bs_world *w)) {
  bs_world_fail(c->w, why, 0, NULL, 0, "%s", cause);
  publish(c->w);
  c->w->be->wake(c->w);
  return bs_world_abort_status(c->w);
}

/* The timeout of c's wait since since, or the world's failure. */
static bs_status gave_up(bs_comm *c, uint64_t since,
                         void (*publish)(bs_world *w)) {
  bs_status st = bs_world_abort_status(c->w);
  if (st != BS_OK)
    return st;
  st = bs_world_timeout(c->w, c->rank, since);
  publish(c->w);
  c->w->be->wake(c->w);
  return st;
}

/* Its file is the *k-th of the pair. */
static bs_status post(bs_comm *c, pairs *p, const bs_p2p_op *op, uint64_t *k) {
  bs_status st = BS_OK;
  size_t bytes = op->count * bs_dtype_size(op->dt);
  char path[4400];
  int32_t *file = malloc(sizeof(int32_t) + (bytes ? bytes : 1));
  if (!file)
    BS_FAIL(BS_ERR_NOMEM, NULL, "sim p2p: %zu bytes", bytes);
  file[0] = (int32_t)op->dt;
  if (bytes && c->dev)
    BS_CHECK(bs_dev_copy_observe(c->dev, file + 1, op->buf, bytes, BS_D2H));
  else if (bytes)
    memcpy(file + 1, op->buf, bytes);
  *k = ++p->sent[op->peer];
  path_of(c, bs_comm_front_rank(c), op->peer, *k, path, sizeof path);
  BS_CHECK(bs_file_publish(path, file, sizeof(int32_t) + bytes));
out:
  free(file);
  return st;
}

/* op's bytes from its file (data, n bytes), or the desync of a
 * mismatch. */
static bs_status take(bs_comm *c, const bs_p2p_op *op, const char *data,
                      size_t n, void (*publish)(bs_world *w)) {
  bs_status st = BS_OK;
  char cause[256];
  size_t want = op->count * bs_dtype_size(op->dt);
  int32_t dt = 0;
  if (n >= sizeof dt)
    memcpy(&dt, data, sizeof dt);
  if (n != sizeof(int32_t) + want || dt != (int32_t)op->dt) {
    snprintf(cause, sizeof cause,
             "rank %d sends %zu bytes to rank %d, which receives %zu bytes of "
             "%s%s",
             bs_pg_global(c->pg, op->peer), n >= 4 ? n - 4 : 0, c->grank, want,
             bs_dtype_name(op->dt), c->pg ? " (in its group)" : "");
    BS_CHECK(fail(c, BS_ERR_DESYNC, cause, publish));
  }
  if (want && c->dev)
    BS_CHECK(bs_dev_copy_observe(c->dev, op->buf, data + sizeof(int32_t), want,
                                 BS_H2D));
  else if (want)
    memcpy(op->buf, data + sizeof(int32_t), want);
out:
  return st;
}

/* Recv i's file (the k[i]-th of its pair) taken if it is there (*got);
 * else *got false. */
static bs_status take_if_there(bs_comm *c, const bs_p2p_op *op, uint64_t k,
                               bool *got, void (*publish)(bs_world *w)) {
  bs_status st = BS_OK;
  char path[4400], *data = NULL;
  size_t n = 0;
  path_of(c, op->peer, bs_comm_front_rank(c), k, path, sizeof path);
  *got = access(path, F_OK) == 0; /* published whole: there means done */
  if (!*got)
    return BS_OK;
  BS_CHECK(bs_file_read(path, &data, &n));
  unlink(path);
  BS_CHECK(take(c, op, data, n, publish));
out:
  free(data);
  return st;
}

/* A wait that goes on (first: the op it waits in, shown when it changed
 * from *shown): the world's failure or the timeout from since, else a nap
 * and BS_OK. */
static bs_status wait_on(bs_comm *c, const bs_p2p_op *first,
                         const bs_p2p_op **shown, uint64_t since,
                         void (*publish)(bs_world *w)) {
  const struct timespec nap = {0, POLL_NS};
  uint64_t left = since + (uint64_t)c->w->o.timeout_ms * 1000000ull;
  if (first != *shown)
    bs_comm_p2p_show(c, *shown = first);
  if (world_failed(c->w) || bs_clock_mono_ns() >= left)
    return gave_up(c, since, publish);
  nanosleep(&nap, NULL);
  return BS_OK;
}

/* The recvs of ops wait together (one whose send never comes holds up
 * none of the others, nor their senders): each takes its pair's next file
 * once it is there. */
static bs_status take_all(bs_comm *c, pairs *p, const bs_p2p_op *ops, size_t n,
                          bool *done, uint64_t since,
                          void (*publish)(bs_world *w)) {
  bs_status st = BS_OK;
  const bs_p2p_op *shown = NULL;
  uint64_t *k = calloc(n, sizeof *k);
  if (!k)
    BS_FAIL(BS_ERR_NOMEM, NULL, "sim p2p: %zu ops", n);
  for (size_t i = 0; i < n; i++)
    if (!ops[i].send)
      k[i] = ++p->got[ops[i].peer];
  for (;;) {
    const bs_p2p_op *first = NULL;
    for (size_t i = 0; i < n; i++) {
      if (ops[i].send || done[i])
        continue;
      BS_CHECK(take_if_there(c, &ops[i], k[i], &done[i], publish));
      first = first || done[i] ? first : &ops[i];
    }
    if (!first)
      break;
    BS_CHECK(wait_on(c, first, &shown, since, publish));
  }
out:
  free(k);
  return st;
}

/* Until every send of ops has been taken (its file, the k[i]-th of its
 * pair, is gone), each done once it is; wait false: one look (a failed
 * call's sends that were taken all the same). */
static bs_status drained(bs_comm *c, const bs_p2p_op *ops, size_t n,
                         const uint64_t *k, bool *done, bool wait,
                         uint64_t since, void (*publish)(bs_world *w)) {
  int me = bs_comm_front_rank(c);
  const bs_p2p_op *shown = NULL;
  bs_status st = BS_OK;
  while (st == BS_OK) {
    const bs_p2p_op *first = NULL;
    for (size_t i = 0; i < n; i++) {
      char path[4400];
      if (!ops[i].send || done[i] || !k[i])
        continue;
      path_of(c, me, ops[i].peer, k[i], path, sizeof path);
      if (access(path, F_OK) != 0)
        done[i] = true;
      else
        first = first ? first : &ops[i];
    }
    if (!first || !wait)
      break;
    st = wait_on(c, first, &shown, since, publish);
  }
  return st;
}

bs_status bs_p2p_files_run(bs_comm *c, const bs_p2p_op *ops, size_t n,
                           bool *done, void (*publish)(bs_world *w)) {
  bs_status st = BS_OK;
  uint64_t since = bs_clock_mono_ns();
  pairs *p = pairs_of(c);
  uint64_t *k = calloc(n, sizeof *k);
  if (!p || !k)
    BS_FAIL(BS_ERR_NOMEM, NULL, "sim p2p: rank %d's pairs", c->grank);
  for (size_t i = 0; i < n; i++)
    if (ops[i].send)
      BS_CHECK(post(c, p, &ops[i], &k[i]));
  BS_CHECK(take_all(c, p, ops, n, done, since, publish));
  BS_CHECK(drained(c, ops, n, k, done, true, since, publish));
out:
  if (st != BS_OK && k)
    drained(c, ops, n, k, done, false, since, publish);
  free(k);
  return st;
}
