#include "plan/bs_models.h"

#include <stdlib.h>
#include <string.h>

#include "bs_vec.h"
#include "model/bs_model_parse.h"

struct bs_models_entry {
  char *name;
  double scale;
  bs_model_spec spec;
};

static const bs_model_spec *find(const bs_models *m, const char *name,
                                 double scale) {
  for (size_t i = 0; i < m->n; i++)
    if (m->e[i]->scale == scale && strcmp(m->e[i]->name, name) == 0)
      return &m->e[i]->spec;
  return NULL;
}

static void entry_free(struct bs_models_entry *e) {
  if (!e)
    return;
  bs_model_free(&e->spec);
  free(e->name);
  free(e);
}

bs_status bs_models_get(bs_models *m, const char *name, double scale,
                        const bs_model_spec **out) {
  bs_status st = BS_OK;
  struct bs_models_entry *e = NULL;
  if ((*out = find(m, name, scale)))
    return BS_OK;
  e = calloc(1, sizeof *e);
  if (!e || !(e->name = strdup(name)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "model %s", name);
  e->scale = scale;
  BS_CHECK(bs_model_load(name, scale, &e->spec));
  BS_CHECK(bs_vec_push(&m->e, &m->n, &m->cap, &e, sizeof e, "models"));
  *out = &e->spec;
  e = NULL;
out:
  entry_free(e);
  return st;
}

void bs_models_free(bs_models *m) {
  for (size_t i = 0; i < m->n; i++)
    entry_free(m->e[i]);
  free(m->e);
  *m = (bs_models){0};
}
