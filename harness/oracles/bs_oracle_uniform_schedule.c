#include "oracles/bs_oracle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/bs_schedule.h"

static bool same_coll(const bs_coll_rec *a, const bs_coll_rec *b) {
  return strcmp(a->op, b->op) == 0 && strcmp(a->shape, b->shape) == 0 &&
         strcmp(a->label, b->label) == 0;
}

static long last_seq(const bs_schedule *s) {
  return s->n ? s->c[s->n - 1].seq : -1;
}

/* The first collective that rank k issued otherwise than rank 0. */
static bool differ_op(const bs_schedule *s, int k, char *detail, size_t n) {
  const bs_schedule *a = &s[0], *b = &s[k];
  for (size_t i = 0; i < a->n; i++) {
    const bs_coll_rec *y = bs_schedule_find(b, a->c[i].seq);
    if (y && !same_coll(&a->c[i], y)) {
      const bs_coll_rec *x = &a->c[i];
      snprintf(detail, n, "collective #%ld: rank 0 %s %s%s, rank %d %s %s%s",
               x->seq, x->op, x->label, x->shape, k, y->op, y->label, y->shape);
      return true;
    }
  }
  return false;
}

/* Schedules that end apart: where a failure cut each rank's short is a
 * matter of timing (a peer may or may not have entered the collective
 * before it learnt of the failure), so a contained run's detail names
 * only where the first rank stopped, *upto. */
static bool differ_end(const bs_schedule *s, int nranks, long *upto,
                       char *detail, size_t n) {
  int lo = 0, hi = 0;
  for (int k = 1; k < nranks; k++) {
    lo = last_seq(&s[k]) < last_seq(&s[lo]) ? k : lo;
    hi = last_seq(&s[k]) > last_seq(&s[hi]) ? k : hi;
  }
  *upto = last_seq(&s[lo]);
  if (last_seq(&s[lo]) == last_seq(&s[hi]))
    return false;
  snprintf(detail, n,
           "rank %d issued collectives up to #%ld, rank %d up to #%ld", lo,
           last_seq(&s[lo]), hi, last_seq(&s[hi]));
  return true;
}

/* Contained: a diverging fault fired and every rank returned, each
 * surviving one with an error (the desync was reported, not swallowed). */
static bool contained(const bs_record *r) {
  /* A fault that takes a rank off the schedule on purpose (its .def row:
   * BS_FAULT_OFF_SCHEDULE; a resume that finds no memory ends the rank's
   * process). */
  if (!bs_record_fired_any(r, BS_FAULT_OFF_SCHEDULE))
    return false;
  for (int k = 0; k < r->nranks; k++) {
    const bs_event *e = bs_record_last(r, k);
    if (!r->rank[k].returned)
      return false;
    if (!bs_record_rank_lost(r, k) && (!e || !bs_record_event_failed(e)))
      return false;
  }
  return true;
}

static bool parse_all(const bs_record *r, bs_schedule *s, char *detail,
                      size_t n) {
  for (int k = 0; k < r->nranks; k++) {
    if (!r->rank[k].flight) /* no collective recorded: an empty schedule */
      continue;
    if (bs_schedule_of_rank(r, k, &s[k]) != BS_OK) {
      snprintf(detail, n, "rank %d: unreadable flight recorder: %s", k,
               bs_err()->message);
      bs_err_clear();
      return false;
    }
  }
  return true;
}

bool bs_oracle_uniform_schedule(const bs_record *r, char *detail, size_t n) {
  if (r->nranks <= 0 || !r->rank[0].flight) {
    snprintf(detail, n, "no collectives recorded");
    return true;
  }
  bs_schedule *s = calloc((size_t)r->nranks, sizeof *s);
  bool ok = s && parse_all(r, s, detail, n);
  if (!s)
    snprintf(detail, n, "out of memory reading %d schedules", r->nranks);
  bool diverged = false, ended_apart = false;
  long upto = -1;
  for (int k = 1; ok && !diverged && k < r->nranks; k++)
    diverged = differ_op(s, k, detail, n);
  if (ok && !diverged)
    ended_apart = differ_end(s, r->nranks, &upto, detail, n);
  if (ok && (diverged || ended_apart))
    ok = contained(r);
  if (ok && !diverged) {
    /* The same words whether a contained failure cut the schedules short
     * at one point or at several. */
    snprintf(detail, n,
             "all %d ranks issued the same collectives (up to "
             "#%ld)",
             r->nranks, upto);
  } else if (diverged || ended_apart) {
    size_t len = strlen(detail);
    snprintf(detail + len, n - len, "%s",
             ok ? "; contained: a diverging fault fired and every rank "
                  "returned with an error"
                : "; not contained by a fired fault and an error on every "
                  "rank");
  }
  for (int k = 0; s && k < r->nranks; k++)
    bs_schedule_free(&s[k]);
  free(s);
  return ok;
}
