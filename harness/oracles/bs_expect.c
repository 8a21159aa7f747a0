#include "oracles/bs_expect.h"

#include <stdio.h>
#include <string.h>

#include "record/bs_schedule.h"

bool bs_expect_all_ok(const bs_record *r, char *d, size_t n) {
  size_t phases = 0;
  for (int k = 0; k < r->nranks; k++) {
    const bs_event *e = bs_expect_first_failure(r, k);
    if (e) {
      snprintf(d, n, "rank %d, cycle %d %s: %s: %s", k, e->cycle, e->phase,
               bs_status_name(e->status), bs_record_err(e)->message);
      return false;
    }
    phases += r->rank[k].n;
  }
  if (r->nranks > 0 && phases <= (size_t)r->nranks && r->cycles > 0) {
    snprintf(d, n, "no cycle ran (%zu phases recorded)", phases);
    return false;
  }
  snprintf(d, n, "all %zu phases on %d ranks ok", phases, r->nranks);
  return true;
}

const bs_event *bs_expect_first_failure(const bs_record *r, int k) {
  const bs_rank_rec *rr = &r->rank[k];
  for (size_t i = 0; i < rr->n; i++)
    if (rr->ev[i].status != BS_OK)
      return &rr->ev[i];
  return NULL;
}

bool bs_expect_failed_alike(const bs_record *r, const char *phase, bs_status st,
                            bool tensor, char *d, size_t n) {
  const char *name = NULL;
  const bs_event *first = r->nranks ? bs_expect_first_failure(r, 0) : NULL;
  if (!first && (!phase || st == BS_OK)) {
    snprintf(d, n, "rank 0 never failed");
    return false;
  }
  phase = phase ? phase : first->phase;
  st = st != BS_OK ? st : first->status;
  for (int k = 0; k < r->nranks; k++) {
    const bs_event *e = bs_expect_first_failure(r, k);
    if (!e || strcmp(e->phase, phase) != 0 || e->status != st) {
      snprintf(d, n, "rank %d: expected %s in %s, got %s%s%s", k,
               bs_status_name(st), phase,
               e ? bs_status_name(e->status) : "no failure", e ? " in " : "",
               e ? e->phase : "");
      return false;
    }
    const char *its = bs_record_err(e)->tensor;
    if (tensor && (!its[0] || (name && strcmp(name, its) != 0))) {
      snprintf(d, n, "rank %d: the error names tensor '%s', rank 0 '%s'", k,
               its, name ? name : "");
      return false;
    }
    name = its;
  }
  snprintf(d, n, "all %d ranks: %s in %s%s%s%s", r->nranks, bs_status_name(st),
           phase, tensor ? " [" : "", tensor && name ? name : "",
           tensor ? "]" : "");
  return true;
}

const bs_event *bs_expect_find(const bs_record *r, int k, const char *phase,
                               int cycle) {
  const bs_rank_rec *rr = &r->rank[k];
  for (size_t i = 0; i < rr->n; i++)
    if (rr->ev[i].cycle == cycle && strcmp(rr->ev[i].phase, phase) == 0)
      return &rr->ev[i];
  return NULL;
}

const bs_event *bs_expect_after_failure(const bs_record *r, int k,
                                        const char *phase) {
  const bs_rank_rec *rr = &r->rank[k];
  const bs_event *first = bs_expect_first_failure(r, k);
  for (size_t i = first ? (size_t)(first - rr->ev) + 1 : 0; i < rr->n; i++)
    if (rr->ev[i].status == BS_OK && strcmp(rr->ev[i].phase, phase) == 0)
      return &rr->ev[i];
  return NULL;
}

bool bs_expect_recovered(const bs_record *r, const char *phase, char *d,
                         size_t n) {
  for (int k = 0; k < r->nranks; k++)
    if (!bs_expect_after_failure(r, k, phase)) {
      snprintf(d, n, "rank %d: no successful %s after its failure", k, phase);
      return false;
    }
  snprintf(d, n, "every rank recovered: a later %s succeeded", phase);
  return true;
}

bool bs_expect_stopped(const bs_record *r, char *d, size_t n) {
  for (int k = 0; k < r->nranks; k++) {
    const bs_event *first = bs_expect_first_failure(r, k);
    const bs_event *last = bs_record_last(r, k);
    if (first && first != last) {
      snprintf(d, n, "rank %d went on to %s of cycle %d after failing %s", k,
               last->phase, last->cycle, first->phase);
      return false;
    }
  }
  snprintf(d, n, "every rank stopped at its failure");
  return true;
}

/* How long the phase took its rank, less its waits for a CPU: the
 * simulator's (bs_comm_cpu_wait_ms_since). */
static double own_ms(const bs_event *e) {
  return e->t1_ms - e->t0_ms - e->cpu_wait_ms;
}

/* The longest successful run of phase on rank k: the work a failed one
 * did before its failure can take as long (NCCL's first collectives after
 * an init set up connections for hundreds of ms). */
static double longest_ok(const bs_rank_rec *rr, const char *phase) {
  double most = 0;
  for (size_t i = 0; i < rr->n; i++) {
    const bs_event *e = &rr->ev[i];
    if (e->status == BS_OK && !strcmp(e->phase, phase) && own_ms(e) > most)
      most = own_ms(e);
  }
  return most;
}

bool bs_expect_fast_failures(const bs_record *r, double ms, double timeout,
                             char *d, size_t n) {
  double cap = timeout - ms;
  for (int k = 0; k < r->nranks; k++) {
    const bs_rank_rec *rr = &r->rank[k];
    for (size_t i = 0; i < rr->n; i++) {
      const bs_event *e = &rr->ev[i];
      if (e->status == BS_OK)
        continue;
      double allow = longest_ok(rr, e->phase);
      allow = allow < cap ? allow : cap;
      if (own_ms(e) - allow >= ms) {
        snprintf(d, n,
                 "rank %d: the failed %s of cycle %d lasted %.0f ms or more "
                 "beyond its longest success (the trace has its times)",
                 k, e->phase, e->cycle, ms);
        return false;
      }
    }
  }
  snprintf(d, n, "every failure returned well within the timeout");
  return true;
}

static bool same_error(const bs_error *a, const bs_error *b) {
  return a->code == b->code && a->rank == b->rank &&
         strcmp(a->message, b->message) == 0;
}

bool bs_expect_same_record(const bs_record *r, char *d, size_t n) {
  const bs_event *e0 = r->nranks ? bs_expect_first_failure(r, 0) : NULL;
  if (!e0) {
    snprintf(d, n, "rank 0 never failed");
    return false;
  }
  const bs_error *err0 = bs_record_err(e0);
  for (int k = 1; k < r->nranks; k++) {
    const bs_event *e = bs_expect_first_failure(r, k);
    const bs_error *err = bs_record_err(e);
    if (e && same_error(err, err0))
      continue;
    snprintf(d, n,
             "rank %d's error record is not rank 0's: %s, culprit rank %d, "
             "'%.60s' vs %s, culprit rank %d, '%.60s'",
             k, e ? bs_status_name((bs_status)err->code) : "none",
             e ? err->rank : -1, err->message,
             bs_status_name((bs_status)err0->code), err0->rank, err0->message);
    return false;
  }
  snprintf(d, n, "every rank holds one record (culprit rank %d)", err0->rank);
  return true;
}

bool bs_expect_failed_and_stopped(const bs_record *r, const char *phase,
                                  bs_status st, bool tensor, char *d,
                                  size_t n) {
  char why[200];
  if (!bs_expect_failed_alike(r, phase, st, tensor, why, sizeof why)) {
    snprintf(d, n, "%s", why);
    return false;
  }
  if (!bs_expect_stopped(r, d, n))
    return false;
  snprintf(d, n, "%s; the run stopped there", why);
  return true;
}

bool bs_expect_failed_saying(const bs_record *r, const char *phase,
                             bs_status st, const char *says, char *d,
                             size_t n) {
  char why[256];
  if (!bs_expect_failed_and_stopped(r, phase, st, true, why, sizeof why)) {
    snprintf(d, n, "%s", why);
    return false;
  }
  const bs_event *e = bs_expect_first_failure(r, 0);
  const char *msg = bs_record_err(e)->message;
  if (!strstr(msg, says)) {
    snprintf(d, n, "cycle %d %s: the error does not say '%s': %s", e->cycle,
             e->phase, says, msg);
    return false;
  }
  snprintf(d, n, "%.200s (cycle %d): %s", why, e->cycle, msg);
  return true;
}

bool bs_expect_count_collectives(const bs_record *r, int k, const bs_event *e,
                                 bs_coll_count *out, char *d, size_t n) {
  bs_schedule s;
  *out = (bs_coll_count){0, 0};
  if (bs_schedule_of_rank(r, k, &s) != BS_OK) {
    snprintf(d, n, "rank %d: no readable flight recorder%s%s", k,
             r->rank[k].flight ? ": " : "",
             r->rank[k].flight ? bs_err()->message : "");
    bs_err_clear();
    return false;
  }
  /* Flight times are CLOCK_REALTIME; the record's start aligns them with
   * the phase's (monotonic) bounds. An open phase runs to the end. */
  for (size_t i = 0; i < s.n; i++) {
    double t = s.c[i].t_created_ms - r->start_real_ms;
    if (s.c[i].t_created_ms < 0 || t < e->t0_ms ||
        (e->t1_ms >= 0 && t > e->t1_ms))
      continue;
    out->all++;
    out->data += s.c[i].label[0] == '\0';
  }
  bs_schedule_free(&s);
  return true;
}

/* Rank k's count of its `phase` of `cycle`, saying why when there is none. */
static bool count_of(const bs_record *r, int k, const char *phase, int cycle,
                     bs_coll_count *c, char *d, size_t n) {
  const bs_event *e = bs_expect_find(r, k, phase, cycle);
  if (!e) {
    snprintf(d, n, "rank %d never ran %s of cycle %d", k, phase, cycle);
    return false;
  }
  return bs_expect_count_collectives(r, k, e, c, d, n);
}

bool bs_expect_same_collectives(const bs_record *r, const char *phase,
                                int cycle, bs_coll_count *out, char *d,
                                size_t n) {
  bs_coll_count c;
  *out = (bs_coll_count){0, 0};
  if (r->nranks <= 0) {
    snprintf(d, n, "no rank ran");
    return false;
  }
  for (int k = 0; k < r->nranks; k++) {
    if (!count_of(r, k, phase, cycle, k ? &c : out, d, n))
      return false;
    if (k && (c.all != out->all || c.data != out->data)) {
      snprintf(d, n,
               "cycle %d %s: rank %d issued %zu collectives (%zu data), "
               "rank 0 %zu (%zu data)",
               cycle, phase, k, c.all, c.data, out->all, out->data);
      return false;
    }
  }
  snprintf(d, n, "cycle %d %s: every rank issued %zu collectives (%zu data)",
           cycle, phase, out->all, out->data);
  return true;
}

bool bs_expect_checks_ok(const bs_record *r, char *d, size_t n) {
  for (size_t i = 0; i < r->nchecks; i++)
    if (!r->checks[i].ok) {
      snprintf(d, n, "%s: %s", r->checks[i].name, r->checks[i].detail);
      return false;
    }
  if (r->nchecks == 0) {
    snprintf(d, n, "no check was recorded");
    return false;
  }
  snprintf(d, n, "all %zu checks hold", r->nchecks);
  return true;
}

int bs_expect_report_timeout_ms(const bs_record *r) {
  static const char key[] = "(watchdog timeout ";
  const char *at = r->world_report ? strstr(r->world_report, key) : NULL;
  int ms = -1;
  if (!at || sscanf(at + sizeof key - 1, "%d", &ms) != 1)
    return -1;
  return ms;
}

bool bs_expect_report_line(const bs_record *r, int k, char *line, size_t n) {
  char key[32];
  snprintf(key, sizeof key, "\n  rank %d: ", k);
  const char *at = r->world_report ? strstr(r->world_report, key) : NULL;
  if (!at)
    return false;
  at += 3; /* the newline and the indent */
  snprintf(line, n, "%.*s", (int)strcspn(at, "\n"), at);
  return true;
}

bool bs_expect_names_dead(const bs_record *r, int dead, bool exited_ok, char *d,
                          size_t n) {
  char line[300];
  if (!bs_expect_report_line(r, dead, line, sizeof line) ||
      (!strstr(line, ": dead after #") &&
       !(exited_ok && strstr(line, ": exited after #")))) {
    snprintf(d, n, "the report does not name rank %d as dead: %.300s", dead,
             bs_expect_report(r));
    return false;
  }
  snprintf(d, n, "%s", line);
  return true;
}

const char *bs_expect_report(const bs_record *r) {
  return r->world_report && r->world_report[0] ? r->world_report : "(none)";
}

/* Detection and every failed phase under bound ms; d says how it went. */
static bool contained_within(const bs_record *r, double bound, int timeout,
                             const char *how, char *d, size_t n) {
  if (r->detect_ms >= bound) {
    snprintf(d, n, "detection (detect_ms) not under %.0f ms (timeout %d ms)",
             bound, timeout);
    return false;
  }
  if (!bs_expect_fast_failures(r, bound, timeout, d, n))
    return false;
  snprintf(d, n,
           "%s under %.0f ms (detect_ms), every failure too (timeout %d ms)",
           how, bound, timeout);
  return true;
}

/* The report's watchdog timeout, when something was contained. */
static int contained_timeout(const bs_record *r, char *d, size_t n) {
  int timeout = bs_expect_report_timeout_ms(r);
  if (timeout <= 0 || r->detect_ms < 0) {
    snprintf(d, n, "nothing was contained (no report with a timeout: %.200s)",
             bs_expect_report(r));
    return -1;
  }
  return timeout;
}

bool bs_expect_contained_fast(const bs_record *r, char *d, size_t n) {
  int timeout = contained_timeout(r, d, n);
  return timeout > 0 &&
         contained_within(r, timeout / 2.0, timeout, "contained", d, n);
}

bool bs_expect_contained_naming(const bs_record *r, bs_report_line_check names,
                                int k, const char *head, char *d, size_t n) {
  char how[200], line[300];
  if (!bs_expect_contained_fast(r, d, n))
    return false;
  snprintf(how, sizeof how, "%s", d);
  if (!names(r, k, d, n))
    return false;
  snprintf(line, sizeof line, "%s", d);
  snprintf(d, n, "%s, %s; the report says '%s'", head, how, line);
  return true;
}
