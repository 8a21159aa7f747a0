/* The dumps as a Chrome trace (bs_dumps_trace.h). Slices of one track
 * never overlap: each ends at most where the next begins. */
#include "bs_dumps_trace.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bs_buf.h"
#include "bs_dumps_graph.h"
#include "bs_json_write.h"

typedef struct clock {
  uint64_t t0, end; /* ns: the first time held, the last */
  bool none;        /* no times at all: an entry's place stands for one */
} clock;

static uint64_t start_ns(const bs_dump_coll *c) {
  return c->started_ns ? c->started_ns : c->created_ns;
}

static clock clock_of(const bs_dumps *d) {
  clock k = {.t0 = UINT64_MAX};
  for (size_t i = 0; i < d->n; i++)
    for (size_t p = 0; p < d->d[i].npg; p++)
      for (size_t j = 0; j < d->d[i].pg[p].n; j++) {
        const bs_dump_coll *c = &d->d[i].pg[p].c[j];
        uint64_t s = c->created_ns, e = c->completed_ns ? c->completed_ns : s;
        k.t0 = s && s < k.t0 ? s : k.t0;
        k.end = e > k.end ? e : k.end;
      }
  k.none = k.t0 == UINT64_MAX;
  if (k.none)
    k.t0 = 0;
  return k;
}

/* Tenths of a microsecond since the clock's start. */
static int64_t tick(const clock *k, const bs_dump_coll *c, uint64_t ns) {
  if (k->none)
    return (int64_t)c->rid * 10;
  return ns > k->t0 ? (int64_t)llround((double)(ns - k->t0) / 100.0) : 0;
}

/* Op j of track p: [t0, t1), ending at its completion, else at the next
 * op's start, a stuck last one at the end of the dumps. */
static void span_of(const clock *k, const bs_dump_pg *p, size_t j, int64_t *t0,
                    int64_t *t1) {
  const bs_dump_coll *c = &p->c[j];
  int64_t end = k->none ? tick(k, c, 0) + 10 : tick(k, c, k->end);
  *t0 = tick(k, c, start_ns(c));
  if (c->completed_ns)
    end = tick(k, c, c->completed_ns);
  else if (c->duration_ms >= 0)
    end = *t0 + (int64_t)llround(c->duration_ms * 1e4);
  if (j + 1 < p->n) {
    int64_t next = tick(k, &p->c[j + 1], start_ns(&p->c[j + 1]));
    end = c->state == BS_DUMP_COMPLETED && !c->completed_ns ? next : end;
    end = end > next ? next : end;
  }
  *t1 = end < *t0 ? *t0 : end;
}

static void meta(bs_buf *b, const char *what, int pid, int tid,
                 const char *name) {
  bs_buf_printf(b,
                ",\n{\"name\": \"%s\", \"ph\": \"M\", \"pid\": %d, \"tid\": "
                "%d, \"args\": {\"name\": ",
                what, pid, tid);
  bs_json_write_str(b, name);
  bs_buf_printf(b, "}}");
}

static void slices(const bs_dumps_graph *g, const clock *k, const bs_dump *dp,
                   const bs_dump_pg *p, bs_buf *b) {
  const bs_dump_group *grp = &g->d->groups[p->group];
  char name[160];
  snprintf(name, sizeof name, "process group %s%s%s%s", grp->name,
           grp->desc[0] ? " (" : "", grp->desc, grp->desc[0] ? ")" : "");
  meta(b, "thread_name", dp->rank, p->group, name);
  for (size_t j = 0; j < p->n; j++) {
    const bs_dump_coll *c = &p->c[j];
    int64_t t0, t1;
    span_of(k, p, j, &t0, &t1);
    snprintf(name, sizeof name, "%s #%llu", c->p2p ? "p2p" : c->op,
             (unsigned long long)c->seq);
    bs_buf_printf(b, ",\n{\"name\": ");
    bs_json_write_str(b, name);
    bs_buf_printf(b,
                  ", \"cat\": \"%s\", \"ph\": "
                  "\"X\", \"ts\": %.1f, \"dur\": %.1f, \"pid\": %d, \"tid\": "
                  "%d, \"args\": {\"state\": \"%s\"}}",
                  c->p2p ? "p2p" : "collective", (double)t0 / 10,
                  (double)(t1 - t0) / 10, dp->rank, p->group,
                  c->state == BS_DUMP_COMPLETED ? "completed"
                  : c->state == BS_DUMP_STARTED ? "started"
                                                : "scheduled");
  }
}

/* A root marked where its dump ends. */
static void marks(const bs_dumps_graph *g, const clock *k, bs_buf *b) {
  for (size_t r = 0; r < g->nroots; r++) {
    const bs_dumps_root *rt = &g->root[r];
    const bs_dump *dp = bs_dumps_rank(g->d, rt->rank);
    if (!dp)
      continue;
    int64_t at = k->none ? 0 : tick(k, NULL, k->end);
    bs_buf_printf(b,
                  ",\n{\"name\": \"root: %s\", \"ph\": \"i\", \"s\": \"p\", "
                  "\"ts\": %.1f, \"pid\": %d, \"tid\": 0}",
                  bs_dumps_graph_kind_name(rt->kind), (double)at / 10,
                  dp->rank);
  }
}

char *bs_dumps_trace_of(const bs_dumps_graph *g) {
  const bs_dumps *d = g->d;
  clock k = clock_of(d);
  bs_buf b = {0};
  bs_buf_printf(&b,
                "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n"
                "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": "
                "-1, \"tid\": 0, \"args\": {\"name\": \"backstop analyze\"}}");
  for (size_t i = 0; i < d->n; i++) {
    char name[32];
    snprintf(name, sizeof name, "rank %d", d->d[i].rank);
    meta(&b, "process_name", d->d[i].rank, 0, name);
    for (size_t p = 0; p < d->d[i].npg; p++)
      slices(g, &k, &d->d[i], &d->d[i].pg[p], &b);
  }
  marks(g, &k, &b);
  bs_buf_printf(&b, "\n]}\n");
  return bs_buf_take(&b);
}
