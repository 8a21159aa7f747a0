#include "oracles/bs_oracle.h"

#include <stdio.h>
#include <string.h>

/* The digests every later restore and sync must reproduce on one rank. */
typedef struct reference {
  const bs_digests *d;
  char what[64];
} reference;

static const bs_digest *find(const bs_digests *d, const char *name) {
  for (size_t i = 0; i < d->n; i++)
    if (strcmp(d->names[i], name) == 0)
      return &d->d[i];
  return NULL;
}

/* got must hold every tensor of ref with the same bytes. */
static bool same(const bs_digests *got, const reference *ref, int rank,
                 const bs_event *e, const char *label, char *detail, size_t n) {
  size_t differ = 0, missing = 0;
  const char *first = NULL;
  for (size_t i = 0; i < ref->d->n; i++) {
    const bs_digest *g = find(got, ref->d->names[i]);
    if (!g || !bs_digest_eq(g, &ref->d->d[i])) {
      differ += g != NULL;
      missing += g == NULL;
      first = first ? first : ref->d->names[i];
    }
  }
  if (!first && got->n == ref->d->n)
    return true;
  snprintf(detail, n,
           "rank %d, cycle %d %s: %s: %zu/%zu tensors differ from %s, %zu "
           "missing, %zu received in all (first: %s)",
           rank, e->cycle, e->phase, label, differ, ref->d->n, ref->what,
           missing, got->n, first ? first : "an extra tensor");
  return false;
}

static void take(reference *ref, const bs_digests *d, const char *what,
                 int cycle) {
  ref->d = d;
  snprintf(ref->what, sizeof ref->what, "%s of cycle %d", what, cycle);
}

typedef struct tally {
  size_t restores, syncs;
} tally;

static bool check_event(const bs_event *e, reference *ref, tally *t, int rank,
                        char *detail, size_t n) {
  bool restore = strcmp(e->phase, "restore") == 0;
  if (strcmp(e->phase, "update_weights") == 0 && e->recv.n) {
    if (!ref->d) {
      take(ref, &e->recv, "what the engine received", e->cycle);
      return true;
    }
    t->syncs++;
    return same(&e->recv, ref, rank, e, "the engine received", detail, n);
  }
  if (restore && e->live.n && e->live.npaused) {
    snprintf(detail, n,
             "rank %d, cycle %d restore: %zu of %zu tensors still "
             "paused after a successful restore",
             rank, e->cycle, e->live.npaused, e->live.n);
    return false;
  }
  if (restore && e->live.n) {
    if (!ref->d) {
      take(ref, &e->live, "the first restore", e->cycle);
      return true;
    }
    t->restores++;
    return same(&e->live, ref, rank, e, "restored weights", detail, n);
  }
  bool step = strcmp(e->phase, "train_step") == 0;
  if ((step || strcmp(e->phase, "init") == 0) && e->live.n && !e->live.npaused)
    take(ref, &e->live, step ? "the step end" : "init", e->cycle);
  return true;
}

bool bs_oracle_bit_identity(const bs_record *r, char *detail, size_t n) {
  tally t = {0, 0};
  for (int k = 0; k < r->nranks; k++) {
    reference ref = {NULL, ""};
    if (r->init_ref.n)
      take(&ref, &r->init_ref, "the initial weights", 0);
    const bs_rank_rec *rr = &r->rank[k];
    for (size_t i = 0; i < rr->n; i++) {
      const bs_event *e = &rr->ev[i];
      if (e->t1_ms < 0 || bs_record_event_failed(e))
        continue;
      if (!check_event(e, &ref, &t, k, detail, n))
        return false;
    }
  }
  snprintf(detail, n,
           "%zu restores and %zu engine syncs bit-identical to "
           "the last step end",
           t.restores, t.syncs);
  return true;
}
