/* The replay's plans (bs_replay_int.h): each rank's ops from its dump (or,
 * for a rank that left none, from its peers'), in the order it made them
 * across its groups, and the buffers they need. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_replay_int.h"
#include "bs_vec.h"

/* The k-th of PyTorch's comma-separated dtype names, as Backstop's (or
 * one of its size: s->dt_name then names it). */
static bool dtype_at(const char *dts, size_t k, bs_replay_step *s) {
  char one[32];
  const char *p = dts;
  for (size_t i = 0; i < k && *p; i++) {
    p += strcspn(p, ",");
    p += strspn(p, ", ");
  }
  snprintf(one, sizeof one, "%.*s", (int)strcspn(p, ","), p);
  return one[0] && bs_replay_ops_dtype(one, &s->dt, &s->dt_name);
}

static bs_status no_dtype(const bs_dump_coll *c, int rank, const char *dts) {
  return bs_err_fail(BS_ERR_INVALID, NULL,
                     "replay: rank %d #%llu %s: dtype '%s' is not one "
                     "PyTorch has (no size known for it)",
                     rank, (unsigned long long)c->seq, c->op, dts);
}

/* The count and dtype of a one-tensor op (a recv's, a scatter's: its
 * output). */
static bs_status size_of(const bs_dump_coll *c, int rank, bool by_out,
                         bs_replay_step *s) {
  bool in = !by_out && (c->in_tensors > 0 || c->out_tensors == 0);
  const char *dts = in ? c->in_dt : c->out_dt;
  s->orig = s->count = in ? bs_dumps_coll_count(c) : c->out_numel;
  return dtype_at(dts, 0, s) ? BS_OK : no_dtype(c, rank, dts);
}

bs_status bs_replay_plan_push(bs_replay_plan *p, const bs_replay_step *s) {
  if (!bs_vec_grow(&p->s, &p->cap, p->n + 1, sizeof *p->s))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu steps", p->n + 1);
  p->s[p->n] = *s;
  p->s[p->n].order = p->n;
  p->n++;
  return BS_OK;
}

/* A collective; a coalesced op (its parts, or one entry of several
 * tensors) as one, as analyze counts it: its tensors' elements together,
 * in the first one's dtype, its shape (that too of a tensor of more than
 * one dimension) telling it from another rank's. */
static bs_status plan_coll(bs_replay_state *r, int rank, const bs_dump_coll *c,
                           bs_replay_step *s) {
  bs_status st = BS_OK;
  bs_replay_op as = bs_replay_ops_coll(c->op);
  s->op = as.op;
  s->name = as.stand_in ? c->op : NULL;
  if (bs_coll_has_data(s->op))
    BS_CHECK(size_of(c, rank, as.by_out, s));
  if (c->nparts || c->in_tensors > 1 || strchr(c->in, ',')) {
    s->shape = c->in;
    s->shape_dt = c->in_dt;
  }
  BS_CHECK(bs_replay_plan_push(&r->plan[rank], s));
  s->seq = 0;
out:
  return st;
}

/* A p2p entry (kind and peer as written) as a step of batch b. */
static bs_status p2p_step(bs_replay_state *r, int rank, const bs_dump_coll *c,
                          bs_dump_kind kind, int peer,
                          const bs_replay_step *base) {
  bs_status st = BS_OK;
  bs_replay_step s = *base;
  s.op = kind == BS_DUMP_SEND ? BS_COLL_SEND : BS_COLL_RECV;
  s.peer = peer;
  if (peer < 0 || peer >= r->n || peer == rank)
    BS_FAIL(BS_ERR_INVALID, NULL,
            "replay: rank %d p2p #%llu %s: its peer (%d) is not another rank "
            "of the job",
            rank, (unsigned long long)c->seq, c->op, peer);
  BS_CHECK(size_of(c, rank, false, &s));
  BS_CHECK(bs_replay_plan_push(&r->plan[rank], &s));
out:
  return st;
}

/* A p2p op of rank's, or a batch of them (its parts). */
static bs_status plan_p2p(bs_replay_state *r, int rank, const bs_dump_coll *c,
                          const bs_replay_step *base) {
  bs_status st = BS_OK;
  bs_replay_step b = *base;
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

/* Rank's ops of group g from its dump: collectives from the group's start
 * (bs_replay_start.c) on; the p2p ops the replay pairs (bs_replay_pairs.c:
 * none, or those past what the other side's ring forgot). */
static bs_status plan_group(bs_replay_state *r, int rank,
                            const bs_dump_pg *pg) {
  bs_status st = BS_OK;
  uint64_t first = r->start[pg->group], last = 0;
  for (size_t k = 0; k < pg->n; k++) {
    const bs_dump_coll *c = &pg->c[k];
    bs_replay_step s = {
        .group = pg->group, .seq = c->seq, .at_ns = c->created_ns};
    if (c->p2p && !bs_replay_pairs_keep(r, pg->group, rank, c))
      continue;
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

/* Group g's collectives every member that holds them shows completed,
 * from its start on (a member without a dump completes them only once
 * every member joined them). */
static bs_status make_done(bs_replay_state *r, int g) {
  bs_replay_dumpless *dl = &r->dl;
  size_t cap = 0;
  for (uint64_t seq = r->start[g];; seq++) {
    const bs_dump_coll *done = completed_by_all(r->d, g, seq);
    if (!done)
      break;
    if (!bs_vec_grow(&dl->done[g], &cap, dl->ndone[g] + 1, sizeof *dl->done[g]))
      return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu ops",
                         dl->ndone[g] + 1);
    dl->done[g][dl->ndone[g]++] = done;
  }
  return BS_OK;
}

static int by_peer(const void *x, const void *y) {
  const struct bs_replay_dumpless_p2p *a = x, *b = y;
  if (a->peer != b->peer)
    return (a->peer > b->peer) - (a->peer < b->peer);
  return (a->order > b->order) - (a->order < b->order);
}

/* The first completed p2p op that names peer (np2p: none). */
static size_t first_of_peer(const bs_replay_dumpless *dl, int peer) {
  size_t lo = 0, hi = dl->np2p;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (dl->p2p[mid].peer < peer)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Every completed one-op p2p entry of every dump, by peer, then in the
 * order the dumps hold them. */
static bs_status make_p2p(bs_replay_state *r) {
  bs_replay_dumpless *dl = &r->dl;
  const bs_dumps *d = r->d;
  size_t cap = 0;
  for (size_t i = 0; i < d->n; i++)
    for (size_t k = 0; k < d->d[i].npg; k++) {
      const bs_dump_pg *pg = &d->d[i].pg[k];
      for (size_t j = 0; j < pg->n; j++) {
        const bs_dump_coll *c = &pg->c[j];
        if (!c->p2p || c->nparts || c->peer < 0 ||
            c->state != BS_DUMP_COMPLETED || c->kind == BS_DUMP_COLL ||
            !bs_replay_pairs_keep(r, pg->group, d->d[i].rank, c))
          continue;
        if (!bs_vec_grow(&dl->p2p, &cap, dl->np2p + 1, sizeof *dl->p2p))
          return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu p2p ops",
                             dl->np2p + 1);
        dl->p2p[dl->np2p] =
            (struct bs_replay_dumpless_p2p){.peer = c->peer,
                                            .rank = d->d[i].rank,
                                            .group = pg->group,
                                            .order = dl->np2p,
                                            .c = c};
        dl->np2p++;
      }
    }
  return BS_OK;
}

static bs_status make_dumpless(bs_replay_state *r) {
  bs_status st = BS_OK;
  bs_replay_dumpless *dl = &r->dl;
  size_t n = r->d->ngroups ? r->d->ngroups : 1;
  if (!(dl->done = calloc(n, sizeof *dl->done)) ||
      !(dl->ndone = calloc(n, sizeof *dl->ndone)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %zu groups", n);
  for (size_t g = 0; g < r->d->ngroups; g++)
    BS_CHECK(make_done(r, (int)g));
  BS_CHECK(make_p2p(r));
  if (dl->np2p) /* NULL when none: no qsort */
    qsort(dl->p2p, dl->np2p, sizeof *dl->p2p, by_peer);
  dl->made = true;
out:
  return st;
}

/* When an op a rank without a dump took part in was done, as its peers'
 * dumps say: its completion (that rank's ops complete in the order it
 * issued them; its peers made theirs at other times), else its making. */
static uint64_t when_done(const bs_dump_coll *c) {
  return c->completed_ns ? c->completed_ns : c->created_ns;
}

/* What a rank that left no dump did, as far as the others' dumps say: in
 * each of its groups every collective its members show completed, and
 * the other side of every completed p2p op with it. What it did next is
 * not known. */
static bs_status plan_dumpless(bs_replay_state *r, int rank) {
  bs_status st = BS_OK;
  const bs_dumps *d = r->d;
  bs_replay_dumpless *dl = &r->dl;
  bs_replay_plan *p = &r->plan[rank];
  const bs_dump_coll **src = NULL; /* by step: a p2p op's peer's entry */
  size_t ncoll = 0, first = 0;
  if (!dl->made)
    BS_CHECK(make_dumpless(r));
  for (size_t g = 0; g < d->ngroups; g++) {
    if (bs_dumps_group_rank(d, (int)g, rank) < 0)
      continue;
    for (size_t k = 0; k < dl->ndone[g]; k++) {
      const bs_dump_coll *done = dl->done[g][k];
      bs_replay_step s = {
          .group = (int)g, .seq = r->start[g] + k, .at_ns = when_done(done)};
      BS_CHECK(plan_coll(r, rank, done, &s));
    }
  }
  ncoll = p->n;
  first = first_of_peer(dl, rank);
  for (size_t k = first; k < dl->np2p && dl->p2p[k].peer == rank; k++) {
    const struct bs_replay_dumpless_p2p *e = &dl->p2p[k];
    bs_replay_step s = {
        .group = e->group, .at_ns = when_done(e->c), .batch = ++r->batches};
    BS_CHECK(p2p_step(r, rank, e->c,
                      e->c->kind == BS_DUMP_SEND ? BS_DUMP_RECV : BS_DUMP_SEND,
                      e->rank, &s));
  }
  /* One step each (a collective, a one-op p2p entry): the p2p ops' entries
   * by place. */
  if (!(src = calloc(p->n + 1, sizeof *src)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "replay: %zu ops", p->n);
  for (size_t k = ncoll; k < p->n; k++)
    src[k] = dl->p2p[first + k - ncoll].c;
  BS_CHECK(bs_replay_order(r, p->s, src, p->n));
out:
  free(src);
  return st;
}

void bs_replay_plan_free(bs_replay_state *r) {
  bs_replay_dumpless *dl = &r->dl;
  for (size_t g = 0; dl->done && g < r->d->ngroups; g++)
    free(dl->done[g]);
  free(dl->done);
  free(dl->ndone);
  free(dl->p2p);
  *dl = (bs_replay_dumpless){0};
}

static int by_time(const void *x, const void *y) {
  const bs_replay_step *a = x, *b = y;
  if (a->at_ns != b->at_ns)
    return (a->at_ns > b->at_ns) - (a->at_ns < b->at_ns);
  return (a->order > b->order) - (a->order < b->order);
}

bs_status bs_replay_plan_rank(bs_replay_state *r, int rank) {
  bs_status st = BS_OK;
  const bs_dump *d = bs_dumps_rank(r->d, rank);
  bs_replay_plan *p = &r->plan[rank];
  if (!d) /* in the order its peers' dumps say (bs_replay_order.c) */
    return plan_dumpless(r, rank);
  for (size_t k = 0; k < d->npg; k++)
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

/* The world's own handle stands for the default group of every rank (its
 * recorder names it "0", default_pg); any other group of every rank is a
 * group of its own, so the replay's dumps name it as the job's do. */
bs_status bs_replay_plan_groups(bs_replay_state *r) {
  const bs_dumps *d = r->d;
  if (d->ngroups && (!(r->g = calloc(d->ngroups, sizeof *r->g)) ||
                     !(r->start = calloc(d->ngroups, sizeof *r->start)) ||
                     !(r->unpaired = calloc(d->ngroups, sizeof *r->unpaired))))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "replay: %zu groups", d->ngroups);
  for (size_t i = 0; i < d->ngroups; i++) {
    const bs_dump_group *dg = &d->groups[i];
    bs_replay_group *g = &r->g[i];
    bs_status st = bs_replay_pairs_make(r, (int)i);
    if (st != BS_OK)
      return st;
    r->start[i] = bs_replay_start_of(d, (int)i);
    if (dg->n < 1 || !(g->members = malloc((size_t)dg->n * sizeof(int))))
      return bs_err_fail(BS_ERR_INVALID, NULL,
                         "replay: group %s has no members", dg->name);
    memcpy(g->members, dg->ranks, (size_t)dg->n * sizeof(int));
    qsort(g->members, (size_t)dg->n, sizeof(int), by_int);
    g->n = dg->n;
    g->world = g->n == r->n && (!strcmp(dg->desc, "default_pg") ||
                                (!dg->desc[0] && !strcmp(dg->name, "0")));
  }
  bs_replay_pairs_sort(r);
  return BS_OK;
}

size_t bs_replay_plan_bytes(bs_replay_state *r) {
  size_t total = 0;
  for (int i = 0; i < r->n; i++) {
    bs_replay_plan *p = &r->plan[i];
    p->send_bytes = p->recv_bytes = 0;
    for (size_t k = 0; k < p->n; k++) {
      const bs_replay_step *s = &p->s[k];
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
