/* Fault points: the site API (libfiu's fiu.h; arming, the spec parser, the
 * firing log and the catalogue are in bs_fault_control.h).
 *
 * A site asks bs_fault_hit(BS_FP_ENGINE_SEND, &info): true when the point is
 * armed and its filters pass for the calling rank now; info is the armed
 * failinfo. The points are the rows of bs_fault_points.def. Without
 * FIU_ENABLE every site compiles to nothing. */
#ifndef BS_FAULT_H
#define BS_FAULT_H

#include <stdbool.h>
#include <stdint.h>

typedef enum bs_fault_point_id {
#define BS_FAULT_POINT(id, name, explains, what, draw, where, failinfo)        \
  BS_FP_##id,
#include "bs_fault_points.def"
#undef BS_FAULT_POINT
  BS_FP_COUNT
} bs_fault_point_id;

#ifdef FIU_ENABLE
bool bs_fault_hit(bs_fault_point_id point, uint64_t *failinfo);
#else
#define bs_fault_hit(point, failinfo) ((void)(point), (void)(failinfo), false)
#endif

#endif
