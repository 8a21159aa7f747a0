/* The replay (bs_replay.h): a plan per rank from its dump, a world that
 * runs the plans, and the world's report. */
#include "dumps/bs_replay.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/bs_comm.h"
#include "dev/bs_dev.h"
#include "dumps/bs_replay_procs.h"
#include "util/bs_buf.h"

/* One collective to issue. */
typedef struct step {
  uint64_t seq;
  bs_coll op;
  bs_dtype dt;
  size_t count, orig; /* replayed; as recorded */
} step;

typedef struct plan {
  step *s;
  size_t n;
  size_t send_bytes, recv_bytes; /* the largest buffers its steps need */
} plan;

typedef struct replay {
  const bs_dumps *d;
  int n;
  int local;      /* ranks in this process: n, or 1 with a process per rank */
  size_t longest; /* steps of the longest plan */
  uint64_t first;
  plan *plan;
  const bs_dump_coll **common; /* what every rank completed */
  size_t ncommon;
  bs_dev **devs;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int ready; /* ranks with their buffers, waiting to start */
  int done;  /* ranks through their plan */
} replay;

typedef struct rank_arg {
  replay *r;
  int i; /* position in the group */
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

static bs_status step_of(const bs_dump_coll *c, int rank, step *s) {
  *s = (step){.seq = c->seq, .dt = BS_U8};
  if (!op_of(c->op, &s->op))
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "replay: rank %d #%llu: %s has no counterpart in the "
                       "communicator (all_gather, reduce_scatter, all_reduce, "
                       "broadcast, barrier, comm_init)",
                       rank, (unsigned long long)c->seq, c->op);
  if (!bs_coll_has_data(s->op))
    return BS_OK;
  if (!bs_dumps_dtype(c->in_dt, &s->dt))
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "replay: rank %d #%llu %s: dtype '%s' has no "
                       "counterpart in the communicator (BFloat16, Float, Int, "
                       "Long, Byte)",
                       rank, (unsigned long long)c->seq, c->op, c->in_dt);
  s->orig = bs_dumps_coll_count(c);
  s->count = s->orig;
  return BS_OK;
}

/* The collectives of a rank that left no dump: every one some dump shows
 * completed (a collective completes only once every rank joined it); what
 * it did next is not known. */
static bs_status completed(const replay *r, const bs_dump_coll ***out,
                           size_t *n) {
  size_t cap = 0;
  *out = NULL;
  *n = 0;
  for (size_t i = 0; i < r->d->n; i++)
    cap = r->d->d[i].n > cap ? r->d->d[i].n : cap;
  if (cap && !(*out = calloc(cap, sizeof **out)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu steps", cap);
  for (uint64_t s = r->first; *n < cap; s++) {
    const bs_dump_coll *done = NULL;
    for (size_t i = 0; i < r->d->n && !done; i++) {
      const bs_dump_coll *c = bs_dumps_find(&r->d->d[i], s);
      done = c && c->state == BS_DUMP_COMPLETED ? c : NULL;
    }
    if (!done)
      break;
    (*out)[(*n)++] = done;
  }
  return BS_OK;
}

/* Rank i's collectives, from the first sequence number on. */
static bs_status plan_rank(replay *r, int i) {
  bs_status st = BS_OK;
  int rank = r->d->members[i];
  const bs_dump *d = bs_dumps_rank(r->d, rank);
  const bs_dump_coll **c = NULL;
  size_t n = 0;
  plan *p = &r->plan[i];
  if (d) {
    n = d->n;
    if (n && !(c = calloc(n, sizeof *c)))
      BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %zu steps", n);
    for (size_t k = 0; k < n; k++)
      c[k] = &d->c[k];
  } else {
    if (!r->common && r->d->n)
      BS_CHECK(completed(r, &r->common, &r->ncommon));
    n = r->ncommon;
    if (n && !(c = malloc(n * sizeof *c)))
      BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %zu steps", n);
    if (n)
      memcpy(c, r->common, n * sizeof *c);
  }
  if (n && !(p->s = calloc(n, sizeof *p->s)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %zu steps", n);
  for (size_t k = 0; k < n; k++) {
    if (c[k]->p2p || c[k]->seq < r->first ||
        (p->n && c[k]->seq <= p->s[p->n - 1].seq))
      continue;
    BS_CHECK(step_of(c[k], rank, &p->s[p->n]));
    p->n++;
  }
out:
  free(c);
  return st;
}

/* The buffers of every plan, and their total. */
static size_t size_plans(replay *r) {
  size_t total = 0, n = (size_t)r->n;
  for (int i = 0; i < r->n; i++) {
    plan *p = &r->plan[i];
    p->send_bytes = p->recv_bytes = 0;
    for (size_t k = 0; k < p->n; k++) {
      const step *s = &p->s[k];
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

static int by_value(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return (x > y) - (x < y);
}

/* Each distinct count becomes its rank among them (1, 2, ...): equal
 * counts stay equal, different ones different. *distinct lists them. */
static bs_status scale(replay *r, size_t **distinct, size_t *nd) {
  size_t total = 0, k = 0;
  for (int i = 0; i < r->n; i++)
    total += r->plan[i].n;
  size_t *v = malloc((total ? total : 1) * sizeof *v);
  if (!v)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu counts", total);
  for (int i = 0; i < r->n; i++)
    for (size_t j = 0; j < r->plan[i].n; j++)
      if (r->plan[i].s[j].orig)
        v[k++] = r->plan[i].s[j].orig;
  qsort(v, k, sizeof *v, by_value);
  size_t m = 0;
  for (size_t j = 0; j < k; j++)
    if (m == 0 || v[j] != v[m - 1])
      v[m++] = v[j];
  for (int i = 0; i < r->n; i++)
    for (size_t j = 0; j < r->plan[i].n; j++) {
      step *s = &r->plan[i].s[j];
      size_t *at =
          s->orig ? bsearch(&s->orig, v, m, sizeof *v, by_value) : NULL;
      s->count = at ? (size_t)(at - v) + 1 : 0;
    }
  *distinct = v;
  *nd = m;
  return BS_OK;
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
  if (bs_comm_seq(c) + 1 != s->seq)
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

/* Outside every collective until this process's ranks have counted
 * themselves in (in a process per rank, bs_replay_procs waits after the
 * plan):
 * before the first collective (thousands of threads take a while to start,
 * and the watchdog must not count that), and after the last. */
static void wait_all(replay *r, int *count) {
  pthread_mutex_lock(&r->mu);
  if (++*count == r->local)
    pthread_cond_broadcast(&r->cv);
  while (*count < r->local)
    pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
}

static bs_status replay_rank(bs_comm *c, void *arg) {
  bs_status st = BS_OK;
  rank_arg *a = arg;
  replay *r = a->r;
  const plan *p = &r->plan[a->i];
  bs_dev *dev = bs_comm_dev(c);
  void *send = buffer(dev, p->send_bytes, &st);
  void *recv = st == BS_OK ? buffer(dev, p->recv_bytes, &st) : NULL;
  if (st == BS_OK)
    st = fill(dev, send, p->send_bytes, bs_comm_rank(c));
  wait_all(r, &r->ready);
  bs_replay_procs_ready(); /* the other processes' ranks */
  for (size_t k = 0; st == BS_OK && k < p->n; k++)
    st = issue(c, &p->s[k], send, recv);
  wait_all(r, &r->done);
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

/* The threads of one process: the world's own report is the text. */
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
  if (report[0])
    bs_buf_printf(text, "%s", report);
  else
    bs_buf_printf(text, "backstop: no hang and no desync: every replayed "
                        "collective completed on every rank\n");
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
                 const size_t *distinct, size_t nd) {
  uint64_t last = 0;
  for (int i = 0; i < r->n; i++)
    if (r->plan[i].n && r->plan[i].s[r->plan[i].n - 1].seq > last)
      last = r->plan[i].s[r->plan[i].n - 1].seq;
  bs_buf_printf(b,
                "backstop replay: %d ranks from %zu dump%s, #%llu to #%llu, "
                "%s backend%s, watchdog timeout %d ms\n",
                r->n, r->d->n, r->d->n == 1 ? "" : "s",
                (unsigned long long)r->first, (unsigned long long)last,
                o->backend ? o->backend : "sim",
                o->procs ? ", one process per rank" : "",
                o->timeout_ms ? o->timeout_ms : BS_REPLAY_TIMEOUT_MS);
  for (int i = 0; i < r->n; i++)
    if (!bs_dumps_rank(r->d, r->d->members[i]))
      bs_buf_printf(b,
                    "  rank %d: no dump: replays the %zu collectives the dumps "
                    "show completed, then stays out of every collective\n",
                    r->d->members[i], r->plan[i].n);
  for (size_t k = 0; k < nd && k < 16; k++)
    bs_buf_printf(b, "%s%zu -> %zu",
                  k ? ", " : "  counts replaced: ", distinct[k], k + 1);
  if (nd)
    bs_buf_printf(b, "%s\n", nd > 16 ? ", ..." : "");
}

bs_status bs_replay_run(const bs_dumps *d, const bs_replay_opts *o,
                        bs_replay_result *out) {
  bs_status st = BS_OK;
  replay r = {.d = d,
              .n = d->world,
              .local = o->procs ? 1 : d->world,
              .first = bs_dumps_first_seq(d)};
  size_t *distinct = NULL, nd = 0,
         budget = o->max_bytes ? o->max_bytes : BS_REPLAY_MAX_BYTES;
  bs_buf b = {0};
  memset(out, 0, sizeof *out);
  pthread_mutex_init(&r.mu, NULL);
  pthread_cond_init(&r.cv, NULL);
  if (!(r.plan = calloc((size_t)r.n, sizeof *r.plan)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %d ranks", r.n);
  for (int i = 0; i < r.n; i++)
    BS_CHECK(plan_rank(&r, i));
  if (size_plans(&r) > budget) {
    BS_CHECK(scale(&r, &distinct, &nd));
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
  out->scaled = nd > 0;
  out->ranks = r.n;
  if (!(out->text = bs_buf_take(&b)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: report");
out:
  for (int i = 0; r.plan && i < r.n; i++)
    free(r.plan[i].s);
  free(r.plan);
  free(r.common);
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
