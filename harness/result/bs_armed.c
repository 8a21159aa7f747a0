#include "result/bs_armed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A firing belongs to the armed fault that fired it: spec index i for the
 * run's own, or (spec -1) the libfiu name that covers it. */
typedef struct owner {
  int spec;           /* index into res->faults, -1 for a libfiu name */
  const char *libfiu; /* that name, NULL for a spec */
  const bs_fault_spec *filters; /* the spec's, NULL for a libfiu name */
} owner;

static bool owns(const owner *o, const bs_fault_fired *f) {
  if (o->spec >= 0)
    return f->spec == o->spec;
  return f->spec < 0 && bs_fault_external_covers(o->libfiu, f->point, f->rank);
}

/* Whether a reach count is one the owner's filters allow. */
static bool allows(const owner *o, const bs_fault_reach *r) {
  if (o->libfiu)
    return bs_fault_external_covers(o->libfiu, r->point, r->rank);
  const bs_fault_spec *s = o->filters;
  return bs_fault_spec_matches_point(s->name, r->point) &&
         (s->rank < 0 || s->rank == r->rank) &&
         (s->cycle < 0 || s->cycle == r->cycle);
}

static int by_firing(const void *a, const void *b) {
  const bs_fault_fired *x = a, *y = b;
  if (x->cycle != y->cycle)
    return x->cycle < y->cycle ? -1 : 1;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  /* By name, as the reports list them. */
  int c = strcmp(bs_fault_catalogue_get(x->point)->name,
                 bs_fault_catalogue_get(y->point)->name);
  return c ? c : (x->nth > y->nth) - (x->nth < y->nth);
}

/* The first BS_ARMED_FIRED_MAX firings in an order that does not depend on
 * the thread schedule: kept sorted as they come, the last one dropped. */
static void take_firings(const bs_record *rec, const owner *o, bs_armed *a) {
  for (size_t i = 0; i < rec->nfired; i++) {
    const bs_fault_fired *f = &rec->fired[i];
    if (!owns(o, f))
      continue;
    a->fired_total++;
    size_t at = a->nfired;
    while (at > 0 && by_firing(f, &a->fired[at - 1]) < 0)
      at--;
    if (at == BS_ARMED_FIRED_MAX)
      continue;
    size_t keep = a->nfired < BS_ARMED_FIRED_MAX ? a->nfired : a->nfired - 1;
    memmove(&a->fired[at + 1], &a->fired[at], (keep - at) * sizeof *f);
    a->fired[at] = *f;
    a->nfired = keep + 1;
  }
}

static void take_reaches(const bs_record *rec, const owner *o, bs_armed *a) {
  a->reached_rank = a->reached_cycle = -1;
  for (size_t i = 0; i < rec->nreaches; i++) {
    const bs_fault_reach *r = &rec->reaches[i];
    if (allows(o, r) && r->count > a->reached) {
      a->reached = r->count;
      a->reached_rank = r->rank;
      a->reached_cycle = r->cycle;
    }
  }
}

static bs_status add(const bs_record *rec, const owner *o, const char *spec,
                     bs_result *res) {
  bs_armed a = {.external = o->spec < 0, .filters = {.rank = -1, .cycle = -1}};
  if (o->filters)
    a.filters = *o->filters;
  snprintf(a.spec, sizeof a.spec, "%s", spec);
  take_firings(rec, o, &a);
  take_reaches(rec, o, &a);
  return bs_result_add_armed(res, &a);
}

/* Firings of libfiu names no fiu-run command armed: fiu-ctrl's, one armed
 * fault per point. */
static bs_status add_unlisted(const bs_record *rec,
                              const bs_fault_external *ext, size_t next,
                              bs_result *res) {
  bs_status st = BS_OK;
  bool seen[BS_FP_COUNT] = {false};
  for (size_t i = 0; i < rec->nfired; i++) {
    const bs_fault_fired *f = &rec->fired[i];
    const bs_fault_point *p = bs_fault_catalogue_get(f->point);
    bool listed = f->spec >= 0 || !p || seen[f->point];
    for (size_t k = 0; !listed && k < next; k++)
      listed = bs_fault_external_covers(ext[k].name, f->point, f->rank);
    if (listed)
      continue;
    seen[f->point] = true;
    char spec[160];
    snprintf(spec, sizeof spec, "armed from outside (fiu-ctrl): %s", p->name);
    owner o = {.spec = -1, .libfiu = p->name};
    BS_CHECK(add(rec, &o, spec, res));
  }
out:
  return st;
}

bs_status bs_armed_collect(const bs_run *run, const bs_record *rec,
                           bs_result *res) {
  bs_status st = BS_OK;
  enum { EXT_MAX = 32 };
  bs_fault_external ext[EXT_MAX];
  for (size_t i = 0; i < run->nfaults; i++) {
    owner o = {.spec = (int)i, .filters = &run->faults[i].spec};
    BS_CHECK(add(rec, &o, run->faults[i].text, res));
  }
  size_t next = bs_fault_external_list(ext, EXT_MAX);
  next = next < EXT_MAX ? next : EXT_MAX;
  for (size_t k = 0; k < next; k++) {
    char spec[200];
    owner o = {.spec = -1, .libfiu = ext[k].name};
    snprintf(spec, sizeof spec, "fiu-run: %s", ext[k].command);
    BS_CHECK(add(rec, &o, spec, res));
  }
  BS_CHECK(add_unlisted(rec, ext, next, res));
out:
  return st;
}

/* Where the filters point: "on rank 4 in cycle 2", "in cycle 1", ... */
static void scope(const bs_fault_spec *s, char *out, size_t n) {
  if (s->rank >= 0 && s->cycle >= 0)
    snprintf(out, n, "on rank %d in cycle %d", s->rank, s->cycle);
  else if (s->rank >= 0)
    snprintf(out, n, "on rank %d", s->rank);
  else if (s->cycle >= 0)
    snprintf(out, n, "in cycle %d", s->cycle);
  else
    snprintf(out, n, "in this run");
}

static void never_fired(const bs_armed *a, char *why, size_t n) {
  bs_fault_spec s = a->filters;
  const bs_fault_point *p = bs_fault_catalogue_find(s.name);
  char at[64];
  scope(&s, at, sizeof at);
  const char *times = a->reached == 1 ? "" : "s";
  if (a->reached > 0 && s.rank >= 0 && s.cycle >= 0)
    snprintf(why, n, "%s never fired: its point was reached %ld time%s %s",
             a->spec, a->reached, times, at);
  else if (a->reached > 0)
    snprintf(why, n,
             "%s never fired: its point was reached at most %ld time%s on one "
             "rank in one cycle (rank %d, cycle %d)",
             a->spec, a->reached, times, a->reached_rank, a->reached_cycle);
  else
    snprintf(why, n, "%s never fired: its point was never reached %s%s%s%s",
             a->spec, at, p ? " (it fires in " : "", p ? p->where : "",
             p ? ")" : "");
}

bool bs_armed_vacuous(const bs_result *res, char *why, size_t n) {
  for (size_t i = 0; i < res->narmed; i++)
    if (res->armed[i].fired_total == 0) {
      never_fired(&res->armed[i], why, n);
      return true;
    }
  return false;
}
