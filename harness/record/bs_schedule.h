/* A rank's collective schedule, read back from its flight-recorder dump
 * (comm/front/bs_flight.h): what the uniform-schedule oracle compares across
 * ranks and what the timeline draws. */
#ifndef BS_SCHEDULE_H
#define BS_SCHEDULE_H

#include <stddef.h>

#include "bs_err.h"

typedef struct bs_coll_rec {
  long seq;       /* collective_seq_id */
  char op[32];    /* profiling_name: "nccl:all_gather" */
  char label[32]; /* "agree", "check_same", "" */
  char shape[96]; /* sizes and dtypes, as one comparable string */
  char state[16]; /* scheduled | started | completed */
  char phase[32]; /* the outermost frame: the lifecycle phase it ran in */
  double t_created_ms, t_started_ms, t_completed_ms; /* realtime; < 0 none */
} bs_coll_rec;

typedef struct bs_schedule {
  bs_coll_rec *c; /* by sequence id, ascending */
  size_t n;
} bs_schedule;

/* BS_ERR_INVALID naming the problem when the dump does not parse. */
bs_status bs_schedule_parse(const char *flight_json, bs_schedule *out);
void bs_schedule_free(bs_schedule *s);
/* The entry with sequence id seq, NULL when the ring no longer holds it. */
const bs_coll_rec *bs_schedule_find(const bs_schedule *s, long seq);

#endif
