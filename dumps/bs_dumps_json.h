/* Inside `analyze` (bs_dumps_report.h): the wait-for graph's verdict as
 * JSON, the schema docs/hang-report.md describes (BS_DUMPS_JSON_SCHEMA):
 * the verdict, every root (rank, group, op, what it did), every stuck op
 * with whom it waits for and the roots its waits end at (the chains), the
 * cycles, and what the dumps cannot tell. */
#ifndef BS_DUMPS_JSON_H
#define BS_DUMPS_JSON_H

#include "bs_dumps_wait.h"

/* The version of the JSON verdict's schema ("schema": ...). */
#define BS_DUMPS_JSON_SCHEMA "backstop-hang-report/1"

/* Caller frees; NULL when out of memory. */
char *bs_dumps_json_of(const bs_dumps_graph *g);

#endif
