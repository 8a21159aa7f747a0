#include "report/bs_trace.h"

#include <stdio.h>
#include <string.h>

#include "record/bs_schedule.h"

static void meta(bs_buf *b, const char *what, int tid, const char *name) {
  bs_buf_printf(b,
                "{\"name\": \"%s\", \"ph\": \"M\", \"pid\": 0, "
                "\"tid\": %d, \"args\": {\"name\": ",
                what, tid);
  bs_buf_json_str(b, name);
  bs_buf_printf(b, "}}");
}

static void phase(bs_buf *b, const bs_event *e, int tid, double end_ms) {
  double t1 = e->t1_ms >= 0 ? e->t1_ms : end_ms;
  bs_buf_printf(b, ",\n{\"name\": ");
  bs_buf_json_str(b, e->phase);
  bs_buf_printf(b,
                ", \"cat\": \"phase\", \"ph\": \"X\", \"ts\": %.1f, "
                "\"dur\": %.1f, \"pid\": 0, \"tid\": %d, \"args\": "
                "{\"cycle\": %d, \"status\": \"%s\"",
                e->t0_ms * 1e3, (t1 - e->t0_ms) * 1e3, tid, e->cycle,
                bs_status_name(e->status));
  if (e->status != BS_OK) {
    bs_buf_printf(b, ", \"message\": ");
    bs_buf_json_str(b, e->err.message);
  }
  bs_buf_printf(b, "}}");
}

/* Collective times are CLOCK_REALTIME; the record's start aligns them. */
static void collective(bs_buf *b, const bs_coll_rec *c, int tid,
                       double start_real_ms) {
  if (c->t_created_ms < 0)
    return;
  double end = c->t_completed_ms >= 0 ? c->t_completed_ms
               : c->t_started_ms >= 0 ? c->t_started_ms
                                      : c->t_created_ms;
  bs_buf_printf(b,
                ",\n{\"name\": \"%s #%ld\", \"cat\": \"collective\", "
                "\"ph\": \"X\", \"ts\": %.1f, \"dur\": %.1f, \"pid\": 0, "
                "\"tid\": %d, \"args\": {\"seq\": %ld, \"state\": ",
                c->op, c->seq, (c->t_created_ms - start_real_ms) * 1e3,
                (end - c->t_created_ms) * 1e3, tid, c->seq);
  bs_buf_json_str(b, c->state);
  bs_buf_printf(b, ", \"label\": ");
  bs_buf_json_str(b, c->label);
  bs_buf_printf(b, ", \"shape\": ");
  bs_buf_json_str(b, c->shape);
  bs_buf_printf(b, "}}");
}

static void rank_track(bs_buf *b, const bs_record *rec, int k) {
  char name[32];
  snprintf(name, sizeof name, "rank %d", k);
  bs_buf_printf(b, ",\n");
  meta(b, "thread_name", k, name);
  const bs_rank_rec *rr = &rec->rank[k];
  for (size_t i = 0; i < rr->n; i++)
    phase(b, &rr->ev[i], k, rec->duration_ms);
  bs_schedule s;
  if (!rr->flight || bs_schedule_parse(rr->flight, &s) != BS_OK) {
    bs_err_clear();
    return;
  }
  for (size_t i = 0; i < s.n; i++)
    collective(b, &s.c[i], k, rec->start_real_ms);
  bs_schedule_free(&s);
}

void bs_trace_json(bs_buf *b, const bs_record *rec, const char *title) {
  bs_buf_printf(b, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
  meta(b, "process_name", 0, title);
  for (int k = 0; k < rec->nranks; k++)
    rank_track(b, rec, k);
  bs_buf_printf(b, "\n]}\n");
}
