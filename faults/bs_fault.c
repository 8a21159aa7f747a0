/* Arming faults and deciding at the site, on libfiu.
 *
 * libfiu owns the names: bs_fault_hit asks fiu_fail(point) and then
 * fiu_fail("<point>/r<rank>"), so fiu-run/fiu-ctrl can arm any point, for
 * every rank or one (the second name is made at the reach, in a few
 * copies). A spec armed here becomes fiu_enable_external(name) whose
 * callback applies the project's filters (rank, cycle, nth, prob, onetime)
 * to the reach bs_fault_hit describes in a thread-local. */
#include "bs_fault_control.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "bs_task_local.h"

#ifdef FIU_ENABLE
#include <fiu-control.h>
#include <fiu.h>
#endif

static _Thread_local int tls_cycle;
BS_TASK_LOCAL(tls_cycle, NULL)

void bs_fault_set_cycle(int cycle) {
  tls_cycle = cycle;
}

#ifndef FIU_ENABLE

bs_status bs_fault_arm(const bs_fault_spec *spec, uint64_t seed) {
  (void)seed;
  return bs_err_fail(BS_ERR_UNSUPPORTED, NULL,
                     "fault %s: built without libfiu (BS_FIU=OFF)", spec->name);
}

void bs_fault_disarm_all(void) {}

size_t bs_fault_armed_count(void) {
  return 0;
}

#else

typedef struct armed_spec {
  bs_fault_spec spec;
  uint64_t seed;
  bool points[BS_FP_COUNT]; /* the points its name matches */
} armed_spec;

static pthread_mutex_t specs_mu = PTHREAD_MUTEX_INITIALIZER;
static armed_spec specs[BS_FAULT_MAX_SPECS];
static size_t n_specs;

/* The reach being decided. libfiu hands the callback only the armed name,
 * which for a prefix spec is not the point reached, and no rank. */
typedef struct hit_ctx {
  bs_fault_point_id point;
  int rank, cycle;
  long nth;
  bool active, evaluated;
  int spec; /* the spec that fired, -1 none */
  uint64_t failinfo;
} hit_ctx;

static _Thread_local hit_ctx tls_hit;

/* "<point>/r<rank>", made at each reach in a per-thread buffer, without
 * printf: ranks that take turns on one thread (fibers) change rank at
 * almost every reach, and a table of names kept per rank was made again
 * by snprintf each time. A name lives within one bs_fault_hit, which no
 * task switch cuts, as does a hit's context: neither is a task's own
 * (bs_task_local.h). */
static const char *qualified_name(bs_fault_point_id id, int rank) {
  static _Thread_local char name[BS_FAULT_NAME_MAX + 16];
  const char *point = bs_fault_catalogue_get(id)->name;
  char digits[12];
  int k = 0;
  size_t n = strlen(point);
  unsigned r = (unsigned)rank;
  do
    digits[k++] = (char)('0' + r % 10);
  while ((r /= 10) != 0);
  memcpy(name, point, n);
  name[n++] = '/';
  name[n++] = 'r';
  while (k > 0)
    name[n++] = digits[--k];
  name[n] = '\0';
  return name;
}

static pthread_once_t fiu_once = PTHREAD_ONCE_INIT;

static void fiu_start(void) {
  fiu_init(0);
}

static void ensure_fiu(void) {
  pthread_once(&fiu_once, fiu_start);
}

/* Counter keys: the point id for reaches, negative for onetime marks. */
static int onetime_key(size_t spec) {
  return -1 - (int)spec;
}

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL; /* splitmix64 */
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* A uniform draw in [0,1) that depends only on the reach, never on which
 * thread got there first: runs replay from their seed. */
static double draw(uint64_t seed, size_t spec, const hit_ctx *h) {
  uint64_t x = mix64(seed);
  x = mix64(x ^ spec);
  x = mix64(x ^ (uint32_t)h->rank);
  x = mix64(x ^ (uint32_t)h->cycle);
  x = mix64(x ^ (uint64_t)h->nth);
  return (double)(x >> 11) * 0x1.0p-53;
}

/* nth, times, persistent: reaches nth .. nth + times - 1, or from nth on. */
static bool in_window(const bs_fault_spec *s, long nth) {
  if (!s->nth)
    return true;
  return nth >= s->nth && (s->times == 0 || nth - s->nth < s->times);
}

/* Spec i's filters against this thread's reach; specs_mu held. */
static bool spec_passes(size_t i) {
  const bs_fault_spec *s = &specs[i].spec;
  const hit_ctx *h = &tls_hit;
  if (!specs[i].points[h->point])
    return false;
  if ((s->rank >= 0 && s->rank != h->rank) ||
      (s->cycle >= 0 && s->cycle != h->cycle) || !in_window(s, h->nth))
    return false;
  if (s->prob < 1.0 && !(draw(specs[i].seed, i, h) < s->prob))
    return false;
  return !s->onetime || bs_fault_count_add(onetime_key(i), h->rank, -1, 0) == 0;
}

/* libfiu's external callback; runs under libfiu's read lock, so it must not
 * call libfiu's control API. */
static int on_armed_point(const char *name, int *failnum, void **failinfo,
                          unsigned int *flags) {
  (void)name, (void)failnum, (void)failinfo, (void)flags;
  /* Once per reach: the rank-qualified lookup may land on the same prefix
   * entry, and the verdict for this reach is already known. */
  if (!tls_hit.active || tls_hit.evaluated)
    return 0;
  tls_hit.evaluated = true;
  pthread_mutex_lock(&specs_mu);
  for (size_t i = 0; i < n_specs && tls_hit.spec < 0; i++) {
    if (!spec_passes(i))
      continue;
    tls_hit.spec = (int)i;
    tls_hit.failinfo = specs[i].spec.failinfo;
    if (specs[i].spec.onetime)
      bs_fault_count_add(onetime_key(i), tls_hit.rank, -1, 1);
  }
  pthread_mutex_unlock(&specs_mu);
  return tls_hit.spec >= 0;
}

static void log_firing(bs_fault_point_id point, uint64_t failinfo) {
  bs_fault_fired f = {.point = point,
                      .rank = tls_hit.rank,
                      .cycle = tls_hit.cycle,
                      .nth = tls_hit.nth,
                      .failinfo = failinfo,
                      .spec = tls_hit.spec};
  bs_fault_log_add(&f);
}

bool bs_fault_hit(bs_fault_point_id point, uint64_t *failinfo) {
  const bs_fault_point *p = bs_fault_catalogue_get(point);
  if (!p)
    return false;
  int rank = bs_err_rank(), cycle = tls_cycle;
  /* Not a rank's work: the framework's own (bs_fault_control.h). */
  if (rank < 0)
    return false;
  ensure_fiu();
  long nth = bs_fault_count_add((int)point, rank, cycle, 1);
  tls_hit = (hit_ctx){.point = point,
                      .rank = rank,
                      .cycle = cycle,
                      .nth = nth,
                      .active = true,
                      .spec = -1};
  bool fired = fiu_fail(p->name) != 0;
  if (!fired)
    fired = fiu_fail(qualified_name(point, rank)) != 0;
  tls_hit.active = false;
  if (!fired)
    return false;
  uint64_t info = (uint64_t)(uintptr_t)fiu_failinfo();
  /* libfiu keeps one failinfo per armed name; specs may share a name. */
  if (tls_hit.spec >= 0)
    info = tls_hit.failinfo;
  log_firing(point, info);
  if (failinfo)
    *failinfo = info;
  return true;
}

/* Whether one of the first n specs has this name; specs_mu held. */
static bool name_armed(const char *name, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(specs[i].spec.name, name) == 0)
      return true;
  return false;
}

/* Records the spec; *first when libfiu does not know its name yet. */
static bool add_spec(const bs_fault_spec *s, uint64_t seed, bool *first) {
  pthread_mutex_lock(&specs_mu);
  bool ok = n_specs < BS_FAULT_MAX_SPECS;
  if (ok) {
    *first = !name_armed(s->name, n_specs);
    armed_spec *a = &specs[n_specs++];
    *a = (armed_spec){.spec = *s, .seed = seed};
    for (int i = 0; i < BS_FP_COUNT; i++)
      a->points[i] =
          bs_fault_spec_matches(s->name, bs_fault_catalogue_get(i)->name);
  }
  pthread_mutex_unlock(&specs_mu);
  return ok;
}

bs_status bs_fault_arm(const bs_fault_spec *spec, uint64_t seed) {
  bs_status st = BS_OK;
  bool first = false;
  ensure_fiu();
  if (!add_spec(spec, seed, &first))
    BS_FAIL(BS_ERR_INVALID, NULL, "fault %s: too many faults armed (max %d)",
            spec->name, BS_FAULT_MAX_SPECS);
  /* Outside specs_mu: fiu_fail holds libfiu's lock while the callback takes
   * specs_mu, so the reverse order here could deadlock. */
  if (first &&
      fiu_enable_external(spec->name, 1, (void *)(uintptr_t)spec->failinfo, 0,
                          on_armed_point) != 0)
    BS_FAIL(BS_ERR_INTERNAL, NULL, "fault %s: libfiu refused it", spec->name);
out:
  return st;
}

void bs_fault_disarm_all(void) {
  char names[BS_FAULT_MAX_SPECS][BS_FAULT_NAME_MAX];
  size_t n = 0;
  pthread_mutex_lock(&specs_mu);
  for (size_t i = 0; i < n_specs; i++)
    if (!name_armed(specs[i].spec.name, i))
      memcpy(names[n++], specs[i].spec.name, BS_FAULT_NAME_MAX);
  n_specs = 0;
  pthread_mutex_unlock(&specs_mu);
  for (size_t i = 0; i < n; i++)
    fiu_disable(names[i]);
  bs_fault_count_reset();
}

size_t bs_fault_armed_count(void) {
  pthread_mutex_lock(&specs_mu);
  size_t n = n_specs;
  pthread_mutex_unlock(&specs_mu);
  return n;
}

#endif
