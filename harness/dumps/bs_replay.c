/* The replay (bs_replay.h): a plan per rank from its dump, a world that
 * runs the plans, and the world's report. */
#include "dumps/bs_replay.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/bs_comm.h"
#include "dev/bs_dev.h"
#include "dumps/bs_dumps_report.h"
#include "dumps/bs_replay_procs.h"
#include "util/bs_buf.h"

/* One op to issue: a collective of a group, or one op of a p2p call
 * (the steps of one batch in a row, with its number). */
typedef struct step {
  int group;    /* in bs_dumps.groups */
  uint64_t seq; /* collective_seq_id, or the p2p call's p2p_seq_id */
  bs_coll op;
  bs_dtype dt;
  size_t count, orig; /* replayed; as recorded */
  /* A coalesced op: its tensors' sizes and dtypes as written (interned),
   * so that ranks coalescing other tensors of the same total differ. */
  const char *shape, *shape_dt;
  int peer;       /* send/recv: the peer's global rank */
  size_t batch;   /* send/recv: steps with one batch go as one call */
  uint64_t at_ns; /* when it was made: the order across groups */
  size_t order;   /* then the order in which it was read */
} step;

typedef struct plan {
  step *s;
  size_t n, cap;
  size_t send_bytes, recv_bytes; /* the largest buffers its steps need */
} plan;

/* A group of the dumps as the replay makes it: the world's handle for the
 * default group, else a group over its members, ascending. */
typedef struct group {
  bool world;
  int *members;
  int n;
} group;

typedef struct replay {
  const bs_dumps *d;
  int n;
  int local;      /* ranks in this process: n, or 1 with a process per rank */
  size_t longest; /* steps of the longest plan */
  plan *plan;
  group *g; /* by bs_dumps.groups */
  size_t batches;
  bs_dev **devs;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int ready; /* ranks with their buffers, waiting to start */
  int done;  /* ranks through their plan */
} replay;

typedef struct rank_arg {
  replay *r;
  int i; /* the global rank */
} rank_arg;

/* ---- the plan ---- */

/* Backstop's collective for PyTorch's profiling name (its coalesced and
 * tensor-list forms included). */
static bool op_of(const char *op, bs_coll *out) {
  static const struct {
    const char *has;
    bs_coll op;
  } map[] = {
      {"comm_init", BS_COLL_COMM_INIT},
      {"barrier", BS_COLL_BARRIER},
      {"all_gather", BS_COLL_ALL_GATHER},
      {"allgather", BS_COLL_ALL_GATHER},
      {"reduce_scatter", BS_COLL_REDUCE_SCATTER},
      {"all_reduce", BS_COLL_ALL_REDUCE},
      {"allreduce", BS_COLL_ALL_REDUCE},
      {"broadcast", BS_COLL_BROADCAST},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strstr(op, map[i].has)) {
      *out = map[i].op;
      return true;
    }
  return false;
}

/* The k-th of PyTorch's comma-separated dtype names, as Backstop's. */
static bool dtype_at(const char *dts, size_t k, bs_dtype *out) {
  char one[32];
  const char *p = dts;
  for (size_t i = 0; i < k && *p; i++) {
    p += strcspn(p, ",");
    p += strspn(p, ", ");
  }
  snprintf(one, sizeof one, "%.*s", (int)strcspn(p, ","), p);
  return one[0] && bs_dumps_dtype(one, out);
}

static bs_status no_dtype(const bs_dump_coll *c, int rank, const char *dts) {
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "replay: rank %d #%llu %s: dtype '%s' has no counterpart "
                     "in the communicator (BFloat16, Float, Int, Long, Byte)",
                     rank, (unsigned long long)c->seq, c->op, dts);
}

/* The count and dtype of a one-tensor op (a recv's: its output). */
static bs_status size_of(const bs_dump_coll *c, int rank, step *s) {
  bool in = c->in_tensors > 0 || c->out_tensors == 0;
  const char *dts = in ? c->in_dt : c->out_dt;
  s->orig = s->count = in ? bs_dumps_coll_count(c) : c->out_numel;
  return dtype_at(dts, 0, &s->dt) ? BS_OK : no_dtype(c, rank, dts);
}

static bs_status op_for(const bs_dump_coll *c, int rank, bs_coll *op) {
  if (op_of(c->op, op))
    return BS_OK;
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "replay: rank %d #%llu: %s has no counterpart in the "
                     "communicator (all_gather, reduce_scatter, all_reduce, "
                     "broadcast, barrier, comm_init, send, recv)",
                     rank, (unsigned long long)c->seq, c->op);
}

static bs_status push(plan *p, const step *s) {
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 16;
    step *grown = realloc(p->s, cap * sizeof *grown);
    if (!grown)
      return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu steps", cap);
    p->s = grown;
    p->cap = cap;
  }
  p->s[p->n] = *s;
  p->s[p->n].order = p->n;
  p->n++;
  return BS_OK;
}

/* A collective; a coalesced op (its parts, or one entry of several
 * tensors) as one, as analyze counts it: its tensors' elements together,
 * in the first one's dtype, its shape telling it from another rank's. */
static bs_status plan_coll(replay *r, int rank, const bs_dump_coll *c,
                           step *s) {
  bs_status st = BS_OK;
  BS_CHECK(op_for(c, rank, &s->op));
  if (bs_coll_has_data(s->op))
    BS_CHECK(size_of(c, rank, s));
  if (c->nparts || c->in_tensors > 1) {
    s->shape = c->in;
    s->shape_dt = c->in_dt;
  }
  BS_CHECK(push(&r->plan[rank], s));
  s->seq = 0;
out:
  return st;
}

/* A p2p entry (kind and peer as written) as a step of batch b. */
static bs_status p2p_step(replay *r, int rank, const bs_dump_coll *c,
                          bs_dump_kind kind, int peer, const step *base) {
  bs_status st = BS_OK;
  step s = *base;
  s.op = kind == BS_DUMP_SEND ? BS_COLL_SEND : BS_COLL_RECV;
  s.peer = peer;
  if (peer < 0 || peer >= r->n || peer == rank)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "replay: rank %d p2p #%llu %s: its peer (%d) is not another rank "
            "of the job",
            rank, (unsigned long long)c->seq, c->op, peer);
  BS_CHECK(size_of(c, rank, &s));
  BS_CHECK(push(&r->plan[rank], &s));
out:
  return st;
}

/* A p2p op of rank's, or a batch of them (its parts). */
static bs_status plan_p2p(replay *r, int rank, const bs_dump_coll *c,
                          const step *base) {
  bs_status st = BS_OK;
  step b = *base;
  b.batch = ++r->batches;
  if (c->nparts == 0 && c->kind != BS_DUMP_COLL) /* else a lone end marker */
    BS_CHECK(p2p_step(r, rank, c, c->kind, c->peer, &b));
  for (int k = 0; k < c->nparts; k++) {
    const bs_dump_coll *part = &c->parts[k];
    if (part->kind != BS_DUMP_COLL)
      BS_CHECK(p2p_step(r, rank, part, part->kind, part->peer, &b));
  }
out:
  return st;
}

/* Rank's ops of group g from its dump: collectives from the first
 * sequence number every dump holds on. */
static bs_status plan_group(replay *r, int rank, const bs_dump_pg *pg) {
  bs_status st = BS_OK;
  uint64_t first = bs_dumps_group_first_seq(r->d, pg->group), last = 0;
  for (size_t k = 0; k < pg->n; k++) {
    const bs_dump_coll *c = &pg->c[k];
    step s = {.group = pg->group, .seq = c->seq, .at_ns = c->created_ns};
    if (c->p2p) {
      BS_CHECK(plan_p2p(r, rank, c, &s));
      continue;
    }
    if (c->seq < first || (last && c->seq <= last))
      continue;
    BS_CHECK(plan_coll(r, rank, c, &s));
    last = c->seq;
  }
out:
  return st;
}

/* Collective #seq of group g where every dump that holds it shows it
 * completed (some do), NULL else: an op that errored is retired on one
 * rank while its peers still wait in it (gloo's, a rank gone). */
static const bs_dump_coll *completed_by_all(const bs_dumps *d, int g,
                                            uint64_t seq) {
  const bs_dump_coll *done = NULL;
  for (size_t i = 0; i < d->n; i++) {
    const bs_dump_pg *pg = bs_dumps_pg_of(&d->d[i], g);
    const bs_dump_coll *c = pg ? bs_dumps_pg_find(pg, seq) : NULL;
    if (c && c->state != BS_DUMP_COMPLETED)
      return NULL;
    done = done ? done : c;
  }
  return done;
}

/* What a rank that left no dump did, as far as the others' dumps say: in
 * each of its groups every collective its members show completed (it
 * completes only once every member joined it), and the other side of
 * every completed p2p op with it. What it did next is not known. */
static bs_status plan_dumpless(replay *r, int rank) {
  bs_status st = BS_OK;
  const bs_dumps *d = r->d;
  for (size_t g = 0; g < d->ngroups; g++) {
    if (bs_dumps_group_rank(d, (int)g, rank) < 0)
      continue;
    uint64_t first = bs_dumps_group_first_seq(d, (int)g);
    for (uint64_t seq = first;; seq++) {
      const bs_dump_coll *done = completed_by_all(d, (int)g, seq);
      if (!done)
        break;
      step s = {.group = (int)g, .seq = seq, .at_ns = done->created_ns};
      BS_CHECK(plan_coll(r, rank, done, &s));
    }
  }
  for (size_t i = 0; i < d->n; i++)
    for (size_t k = 0; k < d->d[i].npg; k++) {
      const bs_dump_pg *pg = &d->d[i].pg[k];
      for (size_t j = 0; j < pg->n; j++) {
        const bs_dump_coll *c = &pg->c[j];
        if (!c->p2p || c->nparts || c->peer != rank ||
            c->state != BS_DUMP_COMPLETED || c->kind == BS_DUMP_COLL)
          continue;
        step s = {
            .group = pg->group, .at_ns = c->created_ns, .batch = ++r->batches};
        BS_CHECK(p2p_step(r, rank, c,
                          c->kind == BS_DUMP_SEND ? BS_DUMP_RECV : BS_DUMP_SEND,
                          d->d[i].rank, &s));
      }
    }
out:
  return st;
}

static int by_time(const void *x, const void *y) {
  const step *a = x, *b = y;
  if (a->at_ns != b->at_ns)
    return (a->at_ns > b->at_ns) - (a->at_ns < b->at_ns);
  return (a->order > b->order) - (a->order < b->order);
}

/* Rank's ops in the order it made them, across its groups. */
static bs_status plan_rank(replay *r, int rank) {
  bs_status st = BS_OK;
  const bs_dump *d = bs_dumps_rank(r->d, rank);
  plan *p = &r->plan[rank];
  if (!d)
    BS_CHECK(plan_dumpless(r, rank));
  for (size_t k = 0; d && k < d->npg; k++)
    BS_CHECK(plan_group(r, rank, &d->pg[k]));
  if (p->n)
    qsort(p->s, p->n, sizeof *p->s, by_time);
out:
  return st;
}

static int by_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* The groups, their members ascending; the world's own handle stands for
 * the group of every rank that is the default one. */
static bs_status plan_groups(replay *r) {
  const bs_dumps *d = r->d;
  if (d->ngroups && !(r->g = calloc(d->ngroups, sizeof *r->g)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu groups", d->ngroups);
  for (size_t i = 0; i < d->ngroups; i++) {
    const bs_dump_group *dg = &d->groups[i];
    group *g = &r->g[i];
    if (dg->n < 1 || !(g->members = malloc((size_t)dg->n * sizeof(int))))
      return bs_err_fail(BS_ERR_INVALID, NULL,
                         "replay: group %s has no members", dg->name);
    memcpy(g->members, dg->ranks, (size_t)dg->n * sizeof(int));
    qsort(g->members, (size_t)dg->n, sizeof(int), by_int);
    g->n = dg->n;
    g->world = g->n == r->n &&
               (strcmp(dg->desc, "default_pg") == 0 || (int)i == d->group);
  }
  return BS_OK;
}

/* The buffers of every plan, and their total. */
static size_t size_plans(replay *r) {
  size_t total = 0;
  for (int i = 0; i < r->n; i++) {
    plan *p = &r->plan[i];
    p->send_bytes = p->recv_bytes = 0;
    for (size_t k = 0; k < p->n; k++) {
      const step *s = &p->s[k];
      size_t n = (size_t)r->g[s->group].n;
      size_t chunk = s->count * bs_dtype_size(s->dt);
      size_t in = s->op == BS_COLL_REDUCE_SCATTER ? chunk * n : chunk;
      size_t out = s->op == BS_COLL_ALL_GATHER ? chunk * n : chunk;
      p->send_bytes = in > p->send_bytes ? in : p->send_bytes;
      p->recv_bytes = out > p->recv_bytes ? out : p->recv_bytes;
    }
    /* The sim stages a copy of every input. */
    total += 2 * p->send_bytes + p->recv_bytes;
  }
  return total;
}

/* What a replayed count stands for: a recorded count, and a coalesced
 * op's shape (NULL for one tensor). */
typedef struct count_key {
  size_t orig;
  const char *shape, *shape_dt;
} count_key;

static int by_key(const void *a, const void *b) {
  const count_key *x = a, *y = b;
  if (x->orig != y->orig)
    return x->orig > y->orig ? 1 : -1;
  if (x->shape != y->shape) /* interned: compared by pointer */
    return (uintptr_t)x->shape > (uintptr_t)y->shape ? 1 : -1;
  if (x->shape_dt != y->shape_dt)
    return (uintptr_t)x->shape_dt > (uintptr_t)y->shape_dt ? 1 : -1;
  return 0;
}

/* The distinct counts (with their shapes) of every step, sorted. */
static bs_status count_keys(const replay *r, count_key **distinct, size_t *nd) {
  size_t total = 0, k = 0;
  for (int i = 0; i < r->n; i++)
    total += r->plan[i].n;
  count_key *v = malloc((total ? total : 1) * sizeof *v);
  if (!v)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu counts", total);
  for (int i = 0; i < r->n; i++)
    for (size_t j = 0; j < r->plan[i].n; j++) {
      const step *s = &r->plan[i].s[j];
      if (s->orig)
        v[k++] = (count_key){s->orig, s->shape, s->shape_dt};
    }
  qsort(v, k, sizeof *v, by_key);
  size_t m = 0;
  for (size_t j = 0; j < k; j++)
    if (m == 0 || by_key(&v[j], &v[m - 1]) != 0)
      v[m++] = v[j];
  *distinct = v;
  *nd = m;
  return BS_OK;
}

/* Two shapes of one total (coalesced tensors of 4+5 and 4+2+3): as
 * recorded, their counts would match. */
static bool shapes_collide(const count_key *v, size_t m) {
  for (size_t j = 1; j < m; j++)
    if (v[j].orig == v[j - 1].orig)
      return true;
  return false;
}

/* Each distinct count (with its shape) becomes its rank among them (1, 2,
 * ...): equal ones stay equal, different ones different. */
static void scale(replay *r, const count_key *v, size_t m) {
  for (int i = 0; i < r->n; i++)
    for (size_t j = 0; j < r->plan[i].n; j++) {
      step *s = &r->plan[i].s[j];
      count_key key = {s->orig, s->shape, s->shape_dt};
      const count_key *at =
          s->orig ? bsearch(&key, v, m, sizeof *v, by_key) : NULL;
      s->count = at ? (size_t)(at - v) + 1 : 0;
    }
}

/* ---- one rank ---- */

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

static bs_status issue(bs_comm *c, const step *s, void *send, void *recv) {
  bs_status st = BS_OK;
  if (bs_comm_seq(c) + 1 != s->seq && s->seq > bs_comm_seq(c))
    BS_CHECK(bs_comm_set_next_seq(c, s->seq));
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

static int group_rank(const group *g, int rank) {
  for (int i = 0; i < g->n; i++)
    if (g->members[i] == rank)
      return i;
  return -1;
}

/* The p2p steps s[0..n) of one batch as one call, numbered as recorded. */
static bs_status issue_p2p(const replay *r, bs_comm *c, const step *s, size_t n,
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
                         .peer = group_rank(&r->g[s[k].group], s[k].peer)};
  if (s->seq > bs_comm_p2p_seq(c) + 1)
    BS_CHECK(bs_comm_set_next_p2p_seq(c, s->seq));
  BS_CHECK(bs_comm_p2p(c, ops, n));
out:
  free(ops);
  return st;
}

/* This rank's handle of every group it is in (the world's own for the
 * default group), made in the groups' order on every rank. */
static bs_status open_groups(const replay *r, bs_comm *world, bs_comm **h) {
  bs_status st = BS_OK;
  int rank = bs_comm_rank(world);
  for (size_t i = 0; i < r->d->ngroups; i++) {
    const group *g = &r->g[i];
    if (g->world)
      h[i] = world;
    else if (group_rank(g, rank) >= 0)
      BS_CHECK(bs_comm_group(world, r->d->groups[i].name, r->d->groups[i].desc,
                             g->members, g->n, &h[i]));
  }
out:
  return st;
}

static void close_groups(const replay *r, bs_comm **h) {
  for (size_t i = 0; h && i < r->d->ngroups; i++)
    if (h[i] && !r->g[i].world)
      bs_comm_group_free(h[i]);
}

/* The plan's steps, a p2p batch as one call. */
static bs_status run_plan(const replay *r, const plan *p, bs_comm **h,
                          void *send, void *recv) {
  bs_status st = BS_OK;
  for (size_t k = 0; st == BS_OK && k < p->n;) {
    const step *s = &p->s[k];
    size_t m = 1;
    if (s->op != BS_COLL_SEND && s->op != BS_COLL_RECV) {
      st = issue(h[s->group], s, send, recv);
    } else {
      while (k + m < p->n && p->s[k + m].batch == s->batch)
        m++;
      st = issue_p2p(r, h[s->group], s, m, send, recv);
    }
    k += m;
  }
  return st;
}

/* Outside every collective until this process's ranks have counted
 * themselves in (in a process per rank, bs_replay_procs waits after the
 * plan):
 * before the first collective (thousands of threads take a while to start,
 * and the watchdog must not count that), and after the last. */
static void wait_all(replay *r, bs_comm *c, int *count) {
  bs_comm_idle(c, true); /* the others need a turn to come */
  pthread_mutex_lock(&r->mu);
  if (++*count == r->local)
    pthread_cond_broadcast(&r->cv);
  while (*count < r->local)
    pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
  bs_comm_idle(c, false);
}

static bs_status replay_rank(bs_comm *c, void *arg) {
  bs_status st = BS_OK;
  rank_arg *a = arg;
  replay *r = a->r;
  const plan *p = &r->plan[a->i];
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
  wait_all(r, c, &r->ready);
  bs_replay_procs_ready(); /* the other processes' ranks */
  if (st == BS_OK)
    st = run_plan(r, p, h, send, recv);
  wait_all(r, c, &r->done);
  close_groups(r, h);
  free(h);
  buffer_free(dev, send, p->send_bytes);
  buffer_free(dev, recv, p->recv_bytes);
  return st;
}

/* ---- the world ---- */

static bs_status make_devs(replay *r, const bs_replay_opts *o) {
  bs_status st = BS_OK;
  const char *kind = o->device ? o->device : "host";
  if (strcmp(kind, "host") == 0)
    return BS_OK; /* plain host memory: no bs_dev at all */
  if (!(r->devs = calloc((size_t)r->n, sizeof *r->devs)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %d devices", r->n);
  for (int i = 0; i < r->n; i++)
    BS_CHECK(bs_dev_create_for_rank(kind, i, &r->devs[i]));
out:
  return st;
}

static bs_world_opts world_opts(const replay *r, const bs_replay_opts *o) {
  size_t slots = r->longest + 8;
  return (bs_world_opts){.backend = o->backend,
                         .size = r->n,
                         .timeout_ms = o->timeout_ms ? o->timeout_ms
                                                     : BS_REPLAY_TIMEOUT_MS,
                         .fingerprint = true,
                         .flight_slots = (int)slots};
}

/* Every rank's argument: ra[i] for rank i, args[i] pointing to it. */
static bs_status rank_args(replay *r, rank_arg **ra, void ***args) {
  size_t n = r->n > 0 ? (size_t)r->n : 1;
  *ra = calloc(n, sizeof **ra);
  *args = calloc(n, sizeof **args);
  if (!*ra || !*args)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %d ranks", r->n);
  for (int i = 0; i < r->n; i++) {
    (*ra)[i] = (rank_arg){.r = r, .i = i};
    (*args)[i] = &(*ra)[i];
  }
  return BS_OK;
}

/* The first op a dump shows not done, NULL when every one is. */
static const bs_dump_coll *not_done(const bs_dumps *d, const bs_dump **who,
                                    const bs_dump_pg **in) {
  for (size_t i = 0; i < d->n; i++)
    for (size_t k = 0; k < d->d[i].npg; k++)
      for (size_t j = 0; j < d->d[i].pg[k].n; j++)
        if (d->d[i].pg[k].c[j].state != BS_DUMP_COMPLETED) {
          *who = &d->d[i];
          *in = &d->d[i].pg[k];
          return &d->d[i].pg[k].c[j];
        }
  return NULL;
}

bs_status bs_replay_read_back(const char *const *flights, int n, bs_buf *text) {
  bs_dumps_verdict v = {0};
  if (bs_dumps_report_flights(flights, n, &v) == BS_OK)
    bs_buf_printf(text,
                  "the replayed ranks' flight recorders, as backstop "
                  "analyze reads them:\n%s",
                  v.text);
  else
    bs_buf_printf(text, "  their flight recorders do not read: %s\n",
                  bs_err()->message);
  bs_err_clear();
  bs_dumps_report_verdict_free(&v);
  return text->oom ? bs_err_fail(BS_ERR_NOMEM, NULL, "replay: report") : BS_OK;
}

/* Every rank's flight recorder of w, read back as analyze reads them. */
static bs_status read_back(const bs_world *w, int n, bs_buf *text) {
  bs_status st = BS_OK;
  char **flights = calloc((size_t)n, sizeof *flights);
  if (!flights)
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %d flight recorders", n);
  for (int i = 0; i < n; i++)
    if (!(flights[i] = bs_world_flight_json(w, i)))
      BS_FAIL(BS_ERR_NOMEM, NULL, "replay: rank %d's flight recorder", i);
  BS_CHECK(bs_replay_read_back((const char *const *)flights, n, text));
out:
  for (int i = 0; flights && i < n; i++)
    free(flights[i]);
  free(flights);
  return st;
}

/* The threads of one process: the world's own report, then its flight
 * recorders as analyze reads them. */
static bs_status run_world(replay *r, const bs_replay_opts *o, bs_buf *text,
                           bs_status *status) {
  bs_status st = BS_OK;
  bs_world *w = NULL;
  rank_arg *ra = NULL;
  void **args = NULL;
  bs_world_opts wo = world_opts(r, o);
  BS_CHECK(rank_args(r, &ra, &args));
  BS_CHECK(make_devs(r, o));
  BS_CHECK(bs_world_create(&wo, &w));
  *status = bs_world_run(w, r->devs, replay_rank, args);
  const char *report = bs_world_report(w);
  if (*status != BS_OK && !report[0]) { /* no world ran: its error stands */
    st = *status;
    goto out;
  }
  bs_err_clear();
  const bs_dump *who;
  const bs_dump_pg *in;
  if (report[0])
    bs_buf_printf(text, "%s", report);
  else if (!not_done(r->d, &who, &in)) /* else unreproduced() says */
    bs_buf_printf(text, "backstop: no hang and no desync: every replayed "
                        "collective completed on every rank\n");
  if (*status != BS_OK)
    BS_CHECK(read_back(w, r->n, text));
out:
  bs_world_destroy(w);
  for (int i = 0; r->devs && i < r->n; i++)
    bs_dev_destroy(r->devs[i]);
  free(r->devs);
  r->devs = NULL;
  free(ra);
  free(args);
  return st;
}

/* A process per rank: every wait in them is bounded by the watchdog, so
 * the deadline is generous (start-up, NCCL's init grace, every step). */
static bs_status run_procs(replay *r, const bs_replay_opts *o, bs_buf *text,
                           bs_status *status) {
  bs_status st = BS_OK;
  rank_arg *ra = NULL;
  void **args = NULL;
  bs_world_opts wo = world_opts(r, o);
  BS_CHECK(rank_args(r, &ra, &args));
  bs_replay_procs p = {.wo = &wo,
                       .device = o->device ? o->device : "host",
                       .fn = replay_rank,
                       .args = args,
                       .deadline_s = 60 + (double)(r->longest + 4) *
                                              wo.timeout_ms / 1000.0};
  BS_CHECK(bs_replay_procs_run(&p, status, text));
out:
  free(ra);
  free(args);
  return st;
}

/* ---- the text ---- */

static void head(const replay *r, const bs_replay_opts *o, bs_buf *b,
                 const count_key *distinct, size_t nd) {
  size_t ops = 0;
  for (int i = 0; i < r->n; i++)
    ops += r->plan[i].n;
  bs_buf_printf(b,
                "backstop replay: %d ranks from %zu dump%s, %zu process "
                "group%s, %zu ops, %s backend%s, watchdog timeout %d ms\n",
                r->n, r->d->n, r->d->n == 1 ? "" : "s", r->d->ngroups,
                r->d->ngroups == 1 ? "" : "s", ops,
                o->backend ? o->backend : "sim",
                o->procs ? ", one process per rank" : "",
                o->timeout_ms ? o->timeout_ms : BS_REPLAY_TIMEOUT_MS);
  for (int i = 0; i < r->n; i++)
    if (!bs_dumps_rank(r->d, i))
      bs_buf_printf(b,
                    "  rank %d: no dump: replays the %zu ops the dumps show "
                    "completed with it, then stays out of every op\n",
                    i, r->plan[i].n);
  for (size_t k = 0; k < nd && k < 16; k++)
    bs_buf_printf(b, "%s%zu%s%s%s -> %zu",
                  k ? ", " : "  counts replaced: ", distinct[k].orig,
                  distinct[k].shape ? " (" : "",
                  distinct[k].shape ? distinct[k].shape : "",
                  distinct[k].shape ? ")" : "", k + 1);
  if (nd)
    bs_buf_printf(b, "%s\n", nd > 16 ? ", ..." : "");
}

/* A replay that completed what the dumps show stuck is no all-clear: the
 * job's hang is in what they do not hold (a rank past those they name). */
static void unreproduced(const replay *r, bs_buf *text, bs_status *status) {
  const bs_dump *who = NULL;
  const bs_dump_pg *in = NULL;
  const bs_dump_coll *c = *status == BS_OK ? not_done(r->d, &who, &in) : NULL;
  if (!c)
    return;
  *status = BS_ERR_STATE;
  bs_buf_printf(text,
                "backstop: not reproduced: every replayed op completed, but "
                "rank %d's dump shows %s #%llu of group %s not done: what "
                "held it is not in the dumps (they name %d rank%s; a rank "
                "past them that left no dump?)\n",
                who->rank, c->op, (unsigned long long)c->seq,
                r->d->groups[in->group].name, r->n, r->n == 1 ? "" : "s");
}

bs_status bs_replay_run(const bs_dumps *d, const bs_replay_opts *o,
                        bs_replay_result *out) {
  bs_status st = BS_OK;
  replay r = {.d = d, .n = d->ranks, .local = o->procs ? 1 : d->ranks};
  count_key *distinct = NULL;
  size_t nd = 0, budget = o->max_bytes ? o->max_bytes : BS_REPLAY_MAX_BYTES;
  bs_buf b = {0};
  memset(out, 0, sizeof *out);
  pthread_mutex_init(&r.mu, NULL);
  pthread_cond_init(&r.cv, NULL);
  if (r.n < 1 || !(r.plan = calloc((size_t)r.n, sizeof *r.plan)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %d ranks", r.n);
  BS_CHECK(plan_groups(&r));
  for (int i = 0; i < r.n; i++)
    BS_CHECK(plan_rank(&r, i));
  BS_CHECK(count_keys(&r, &distinct, &nd));
  if (size_plans(&r) <= budget && !shapes_collide(distinct, nd))
    nd = 0; /* as recorded */
  if (nd) {
    scale(&r, distinct, nd);
    size_t need = size_plans(&r);
    if (need > budget)
      BS_FAIL(BS_ERR_INVALID, NULL,
              "replay: %d ranks need %zu bytes of buffers even with their "
              "counts replaced, more than the %zu allowed",
              r.n, need, budget);
  }
  for (int i = 0; i < r.n; i++) {
    out->collectives += r.plan[i].n;
    r.longest = r.plan[i].n > r.longest ? r.plan[i].n : r.longest;
  }
  head(&r, o, &b, distinct, nd);
  if (o->procs)
    BS_CHECK(run_procs(&r, o, &b, &out->status));
  else
    BS_CHECK(run_world(&r, o, &b, &out->status));
  unreproduced(&r, &b, &out->status);
  out->scaled = nd > 0;
  out->ranks = r.n;
  if (!(out->text = bs_buf_take(&b)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: report");
out:
  for (int i = 0; r.plan && i < r.n; i++)
    free(r.plan[i].s);
  free(r.plan);
  for (size_t i = 0; r.g && i < d->ngroups; i++)
    free(r.g[i].members);
  free(r.g);
  free(distinct);
  bs_buf_free(&b);
  pthread_cond_destroy(&r.cv);
  pthread_mutex_destroy(&r.mu);
  if (st != BS_OK)
    bs_replay_result_free(out);
  return st;
}

void bs_replay_result_free(bs_replay_result *r) {
  free(r->text);
  memset(r, 0, sizeof *r);
}
