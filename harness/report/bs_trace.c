#include "report/bs_trace.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_json_write.h"
#include "record/bs_schedule.h"

/* Times go out in tenths of a microsecond, both end points rounded alike
 * (dur is end - ts of the rounded points): a slice that ends inside
 * another on the record's clock ends inside it in the trace too. */
typedef int64_t tick;

static tick ticks(double ms) {
  return (tick)llround(ms * 1e4);
}

static void meta(bs_buf *b, const char *what, int tid, const char *name) {
  bs_buf_printf(b,
                "{\"name\": \"%s\", \"ph\": \"M\", \"pid\": 0, "
                "\"tid\": %d, \"args\": {\"name\": ",
                what, tid);
  bs_json_write_str(b, name);
  bs_buf_printf(b, "}}");
}

static void slice(bs_buf *b, const char *cat, tick t0, tick t1, int tid) {
  bs_buf_printf(b,
                ", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.1f, \"dur\": "
                "%.1f, \"pid\": 0, \"tid\": %d",
                cat, (double)t0 / 10, (double)(t1 - t0) / 10, tid);
}

/* A phase's span; an open one runs to the end of the run. */
typedef struct span {
  tick t0, t1;
} span;

static span phase_span(const bs_event *e, double end_ms) {
  double t1 = e->t1_ms >= 0 ? e->t1_ms : end_ms;
  span s = {ticks(e->t0_ms), ticks(t1)};
  if (s.t1 < s.t0)
    s.t1 = s.t0;
  return s;
}

static void phase(bs_buf *b, const bs_event *e, int tid, span s) {
  bs_json_write_field_str(b, ",\n{", "name", e->phase);
  slice(b, "phase", s.t0, s.t1, tid);
  bs_buf_printf(b, ", \"args\": {\"cycle\": %d, \"status\": \"%s\"", e->cycle,
                bs_status_name(e->status));
  if (e->status != BS_OK) {
    bs_json_write_field_str(b, ", ", "message", bs_record_err(e)->message);
  }
  bs_buf_printf(b, "}}");
}

/* Inside the phase it began in, else inside the gap between phases it
 * began in: the collective ran on that rank's thread within the phase, and
 * a slice Perfetto sees cross its phase's end it drops. */
static span clamp(span c, const span *ph, size_t n) {
  tick lo = INT64_MIN, hi = INT64_MAX;
  for (size_t i = 0; i < n; i++) {
    if (ph[i].t0 <= c.t0 && c.t0 < ph[i].t1) {
      lo = ph[i].t0;
      hi = ph[i].t1;
      break;
    }
    if (ph[i].t1 <= c.t0 && ph[i].t1 > lo)
      lo = ph[i].t1;
    if (ph[i].t0 > c.t0 && ph[i].t0 < hi)
      hi = ph[i].t0;
  }
  c.t0 = c.t0 < lo ? lo : c.t0;
  c.t1 = c.t1 > hi ? hi : c.t1;
  c.t1 = c.t1 < c.t0 ? c.t0 : c.t1;
  return c;
}

/* Collective times are the flight recorder's clock: the record's start on
 * that clock aligns them with the phases (bs_record.h). One not completed
 * stays open until the record's end (a hang's: the dump), so the wait
 * shows for as long as it lasted. */
static span coll_span(const bs_coll_rec *c, const bs_record *rec) {
  double end = c->t_completed_ms >= 0 ? c->t_completed_ms
                                      : rec->start_real_ms + rec->duration_ms;
  span s = {ticks(c->t_created_ms - rec->start_real_ms),
            ticks(end - rec->start_real_ms)};
  s.t1 = s.t1 < s.t0 ? s.t0 : s.t1;
  return s;
}

static void collective(bs_buf *b, const bs_coll_rec *c, int tid,
                       const bs_record *rec, const span *ph, size_t nph) {
  if (c->t_created_ms < 0)
    return;
  span s = coll_span(c, rec);
  s = clamp(s, ph, nph);
  bs_buf_printf(b, ",\n{\"name\": \"%s #%ld\"", c->op, c->seq);
  slice(b, "collective", s.t0, s.t1, tid);
  bs_buf_printf(b, ", \"args\": {\"seq\": %ld, \"state\": ", c->seq);
  bs_json_write_str(b, c->state);
  bs_json_write_field_str(b, ", ", "label", c->label);
  bs_json_write_field_str(b, ", ", "shape", c->shape);
  bs_buf_printf(b, "}}");
}

/* A rank killed as a hang sent no phase events: its phases are read from
 * its collectives' frames, each run of one phase from its first
 * collective to the next run's, the last one open until the dump (the
 * record's end). */
static size_t flight_phases(bs_buf *b, const bs_schedule *s,
                            const bs_record *rec, int tid, span *ph) {
  size_t n = 0;
  const char *name = NULL;
  for (size_t i = 0; i < s->n; i++) {
    const bs_coll_rec *c = &s->c[i];
    if (c->t_created_ms < 0 || !c->phase[0])
      continue;
    span cs = coll_span(c, rec);
    if (name && !strcmp(name, c->phase)) {
      ph[n - 1].t1 = cs.t1 > ph[n - 1].t1 ? cs.t1 : ph[n - 1].t1;
      continue;
    }
    if (n)
      ph[n - 1].t1 = cs.t0 > ph[n - 1].t1 ? cs.t0 : ph[n - 1].t1;
    ph[n++] = cs;
    name = c->phase;
  }
  if (n) /* the rank was in it when the run was killed */
    ph[n - 1].t1 = ticks(rec->duration_ms) > ph[n - 1].t1
                       ? ticks(rec->duration_ms)
                       : ph[n - 1].t1;
  name = NULL;
  for (size_t i = 0, k = 0; i < s->n && k < n; i++) {
    const bs_coll_rec *c = &s->c[i];
    if (c->t_created_ms < 0 || !c->phase[0] ||
        (name && !strcmp(name, c->phase)))
      continue;
    name = c->phase;
    bs_json_write_field_str(b, ",\n{", "name", name);
    slice(b, "phase", ph[k].t0, ph[k].t1, tid);
    bs_buf_printf(b,
                  ", \"args\": {\"from\": \"flight recorder\", "
                  "\"status\": \"%s\"}}",
                  k + 1 == n && strcmp(s->c[s->n - 1].state, "completed")
                      ? "open at the dump"
                      : "ended");
    k++;
  }
  return n;
}

static void rank_track(bs_buf *b, const bs_record *rec, int k) {
  char name[32];
  const bs_rank_rec *rr = &rec->rank[k];
  bs_schedule s = {0};
  bool flight = rr->flight && bs_schedule_parse(rr->flight, &s) == BS_OK;
  span *ph = calloc(rr->n + s.n + 1, sizeof *ph);
  size_t nph = rr->n;
  bs_err_clear();
  snprintf(name, sizeof name, "rank %d", k);
  bs_buf_printf(b, ",\n");
  meta(b, "thread_name", k, name);
  if (!ph) {
    b->oom = true;
    goto out;
  }
  for (size_t i = 0; i < rr->n; i++) {
    ph[i] = phase_span(&rr->ev[i], rec->duration_ms);
    phase(b, &rr->ev[i], k, ph[i]);
  }
  if (!rr->n && flight)
    nph = flight_phases(b, &s, rec, k, ph);
  for (size_t i = 0; flight && i < s.n; i++)
    collective(b, &s.c[i], k, rec, ph, nph);
out:
  free(ph);
  bs_schedule_free(&s);
}

void bs_trace_json(bs_buf *b, const bs_record *rec, const char *title) {
  bs_buf_printf(b, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  meta(b, "process_name", 0, title);
  for (int k = 0; k < rec->nranks; k++)
    rank_track(b, rec, k);
  bs_buf_printf(b, "\n]}\n");
}
