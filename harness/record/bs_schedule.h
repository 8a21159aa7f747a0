/* A rank's collective schedule, read back from its flight-recorder dump
 * (comm/front/bs_flight.h): what the uniform-schedule oracle compares across
 * ranks and what the timeline draws. */
#ifndef BS_SCHEDULE_H
#define BS_SCHEDULE_H

#include <stddef.h>

#include "bs_err.h"
#include "comm/bs_comm.h" /* bs_coll_rec */

typedef struct bs_schedule {
  bs_coll_rec *c; /* by sequence id, ascending */
  size_t n;
} bs_schedule;

/* BS_ERR_INVALID naming the problem when the dump does not parse. */
bs_status bs_schedule_parse(const char *flight_json, bs_schedule *out);
/* Rank k's schedule in record r: the collectives the driver took from its
 * flight recorder (bs_rank_rec.colls), else read from its dump (a rank of
 * another process, a world too large to keep both); BS_ERR_INVALID when
 * it has none or it does not parse. */
typedef struct bs_record bs_record;
bs_status bs_schedule_of_rank(const bs_record *r, int k, bs_schedule *out);
void bs_schedule_free(bs_schedule *s);
/* The entry with sequence id seq, NULL when the ring no longer holds it. */
const bs_coll_rec *bs_schedule_find(const bs_schedule *s, long seq);

#endif
