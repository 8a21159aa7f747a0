#include "catalog/bs_scenario.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "bs_near.h"

/* Filled by constructors before main, so no lock: nothing runs yet. The
 * copies stay where they were registered; catalogue sorts pointers. */
static bs_scenario stored[BS_SCENARIO_MAX];
static const bs_scenario *catalogue[BS_SCENARIO_MAX];
static size_t ncatalogue;

static void fill_defaults(bs_scenario *s) {
  if (!s->model)
    s->model = BS_SCENARIO_MODEL;
  if (s->cycles == 0)
    s->cycles = BS_SCENARIO_CYCLES;
  else if (s->cycles == BS_NO_CYCLES)
    s->cycles = 0;
  if (s->default_ranks == 0)
    s->default_ranks = BS_SCENARIO_RANKS;
  if (s->min_ranks == 0)
    s->min_ranks = BS_SCENARIO_MIN_RANKS;
}

void bs_scenario_register(const bs_scenario *s) {
  if (!s->name || bs_scenario_find(s->name) || ncatalogue == BS_SCENARIO_MAX) {
    fprintf(stderr, "backstop: scenario '%s' not registered (%s)\n",
            s->name ? s->name : "(null)",
            s->name && bs_scenario_find(s->name) ? "duplicate name"
                                                 : "catalogue full");
    return;
  }
  bs_scenario *copy = &stored[ncatalogue];
  *copy = *s;
  fill_defaults(copy);
  size_t i = ncatalogue++;
  for (; i > 0 && strcmp(catalogue[i - 1]->name, s->name) > 0; i--)
    catalogue[i] = catalogue[i - 1];
  catalogue[i] = copy;
}

size_t bs_scenario_count(void) {
  return ncatalogue;
}

const bs_scenario *bs_scenario_at(size_t i) {
  return i < ncatalogue ? catalogue[i] : NULL;
}

const bs_scenario *bs_scenario_find(const char *name) {
  for (size_t i = 0; i < ncatalogue; i++)
    if (strcmp(catalogue[i]->name, name) == 0)
      return catalogue[i];
  return NULL;
}

bool bs_scenario_has_label(const bs_scenario *s, const char *label) {
  size_t n = strlen(label);
  for (const char *p = s->labels ? s->labels : ""; (p = strstr(p, label));
       p += n) {
    bool starts = p == s->labels || p[-1] == ' ';
    if (starts && (p[n] == '\0' || p[n] == ' '))
      return true;
  }
  return false;
}

static bool matches(const bs_scenario *s, const char *sel) {
  if (sel[0] == '@')
    return bs_scenario_has_label(s, sel);
  return fnmatch(sel, s->name, 0) == 0;
}

const char *bs_scenario_near(const char *sel) {
  const char *names[BS_SCENARIO_MAX * 4];
  static char labels[BS_SCENARIO_MAX * 4][48]; /* the CLI's, one thread */
  size_t n = 0;
  for (size_t i = 0; i < ncatalogue && sel[0] != '@'; i++)
    names[n++] = catalogue[i]->name;
  for (size_t i = 0; i < ncatalogue && sel[0] == '@'; i++)
    for (const char *p = catalogue[i]->labels; p && *p && n < 4 * ncatalogue;) {
      size_t len = strcspn(p, " ");
      snprintf(labels[n], sizeof labels[n], "%.*s", (int)len, p);
      names[n] = labels[n];
      n++;
      p += len + (p[len] == ' ');
    }
  return bs_near_hint(sel, names, n);
}

bs_status bs_scenario_select(const char *const *sel, size_t nsel,
                             const bs_scenario **out, size_t *nout) {
  bs_status st = BS_OK;
  bool picked[BS_SCENARIO_MAX] = {false};
  *nout = 0;
  for (size_t k = 0; k < nsel; k++) {
    bool any = false;
    for (size_t i = 0; i < ncatalogue; i++)
      if (matches(catalogue[i], sel[k]))
        any = picked[i] = true;
    if (!any)
      BS_FAIL(BS_ERR_INVALID, NULL, "unknown %s '%s'%s (see backstop list)",
              sel[k][0] == '@' ? "label" : "scenario", sel[k],
              bs_scenario_near(sel[k]));
  }
  for (size_t i = 0; i < ncatalogue; i++)
    if (picked[i])
      out[(*nout)++] = catalogue[i];
out:
  return st;
}

const char *bs_scenario_skip_reason(const bs_scenario *s) {
#ifdef FIU_ENABLE
  (void)s;
  return NULL;
#else
  return s->faults && s->faults[0]
             ? "needs fault points (built with BS_FIU=OFF)"
             : NULL;
#endif
}

void bs_scenario_fault_expand(const char *spec, int ranks, char *out,
                              size_t n) {
  static const char key[] = "{last}";
  const char *at = strstr(spec, key);
  if (!at) {
    snprintf(out, n, "%s", spec);
    return;
  }
  snprintf(out, n, "%.*s%d%s", (int)(at - spec), spec,
           ranks > 0 ? ranks - 1 : 0, at + sizeof key - 1);
}
