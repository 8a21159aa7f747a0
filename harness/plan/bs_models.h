/* The models a plan's runs use, each loaded once (a preset or a file, at a
 * scale): every run of it points at the one spec, in the planner's process
 * and (forked) in every run's. */
#ifndef BS_MODELS_H
#define BS_MODELS_H

#include <stddef.h>

#include "bs_err.h"
#include "model/bs_model.h"

typedef struct bs_models {
  struct bs_models_entry **e; /* each allocated once: specs never move */
  size_t n, cap;
} bs_models;

/* The spec of name at scale, loaded the first time it is asked for
 * (bs_model_load's errors). */
bs_status bs_models_get(bs_models *m, const char *name, double scale,
                        const bs_model_spec **out);
void bs_models_free(bs_models *m);

#endif
