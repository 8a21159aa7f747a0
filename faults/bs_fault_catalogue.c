/* The catalogue: the rows of bs_fault_points.def as data, for `backstop
 * faults`, the spec parser and the "explained" oracle. */
#include "bs_fault_control.h"

#include <string.h>

#define BS_FAULT_UNPAREN(...) __VA_ARGS__

/* File scope: the compound literals then have static storage. */
static const bs_fault_point catalogue[BS_FP_COUNT] = {
#define BS_FAULT_POINT(id_, name_, explains_, what_, draw_, where_, failinfo_) \
  [BS_FP_##id_] = {.id = BS_FP_##id_,                                          \
                   .name = name_,                                              \
                   .explains =                                                 \
                       (const bs_status[]){BS_FAULT_UNPAREN explains_, BS_OK}, \
                   .what = what_,                                              \
                   .draw = draw_,                                              \
                   .where = where_,                                            \
                   .failinfo = failinfo_},
#include "bs_fault_points.def"
#undef BS_FAULT_POINT
};

/* A name too long for a spec or the firing log does not compile. */
#define BS_FAULT_POINT(id_, name_, explains_, what_, draw_, where_, failinfo_) \
  _Static_assert(sizeof name_ <= BS_FAULT_NAME_MAX, name_ ": name too long");
#include "bs_fault_points.def"
#undef BS_FAULT_POINT

const bs_fault_point *bs_fault_catalogue_get(bs_fault_point_id id) {
  return (unsigned)id < BS_FP_COUNT ? &catalogue[id] : NULL;
}

int bs_fault_catalogue_index(const char *name) {
  for (int i = 0; name && i < BS_FP_COUNT; i++)
    if (strcmp(catalogue[i].name, name) == 0)
      return i;
  return -1;
}

const bs_fault_point *bs_fault_catalogue_find(const char *name) {
  int i = bs_fault_catalogue_index(name);
  return i < 0 ? NULL : &catalogue[i];
}

bool bs_fault_catalogue_explains(bs_fault_point_id id, bs_status st) {
  const bs_fault_point *p = bs_fault_catalogue_get(id);
  for (const bs_status *s = p ? p->explains : NULL; s && *s != BS_OK; s++)
    if (*s == st)
      return true;
  return false;
}
