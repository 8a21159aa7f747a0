/* The per-rank flight recorder: a ring of the last K collectives with the
 * field names of PyTorch's Flight Recorder (record_id, collective_seq_id,
 * profiling_name, input/output sizes and dtypes, state, timestamps), so the
 * dumps read like the ones users already know: the JSON dump has every key
 * of PyTorch's own (version "2.10" as torch 2.10+ writes it, pg_config,
 * pg_status, comm_lib_version; frames, thread_id, thread_name, duration_ms
 * in the entries), which the artifacts turn into the pickle torchfrtrace
 * reads. Written by its rank's thread, read by anyone (a failure report,
 * the dump): it has its own lock. */
#ifndef BS_FLIGHT_H
#define BS_FLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_dtype.h"
#include "bs_err.h"
#include "comm/bs_comm.h"

typedef enum bs_flight_state {
  BS_FLIGHT_SCHEDULED = 0, /* numbered, not yet handed to the backend */
  BS_FLIGHT_STARTED,       /* issued; has not completed */
  BS_FLIGHT_COMPLETED
} bs_flight_state;

typedef struct bs_flight_entry {
  uint64_t record_id;         /* from 0, per recorder */
  uint64_t collective_seq_id; /* the communicator's sequence id */
  const char *profiling_name; /* static: "nccl:all_gather", ... */
  char name[BS_COLL_NAME];    /* a stand-in's, recorded as "nccl:<name>" */
  const char *label;          /* static or NULL: "agree", "check_same" */
  char phase[32];             /* set here: the lifecycle phase (a frame) */
  uint64_t thread_id;         /* set here: the recording thread's id */
  bool has_data;              /* false for a barrier: no sizes */
  size_t input_numel, output_numel;
  bs_dtype input_dtype, output_dtype;
  bs_flight_state state;
  /* bs_clock_wall_ns(); 0: not reached (null in JSON). */
  uint64_t time_created_ns;
  uint64_t time_discovered_started_ns;
  uint64_t time_discovered_completed_ns;
  /* The process group (bs_flight_add_pg's id; 0: the default one), its
   * p2p_seq_id, and for a send or recv the group ranks of its rank and
   * its peer ("nccl:send 0->1" from 0 to 1, "nccl:recv 1<-0" on 1). */
  int pg;
  uint64_t p2p_seq_id;
  bool is_p2p;
  int me, peer;
} bs_flight_entry;

/* What a dump says about its recorder's owner. */
typedef struct bs_flight_meta {
  int rank, size;
  const char *backend;
  int timeout_ms;
  const char *comm_lib_version; /* NULL: the backend's name */
  /* The default group's members written BS_FLIGHT_WORLD (every rank of
   * the world, which bs_flight_json_expand writes out): a dump held in
   * memory, not one for a reader. */
  bool world_marked;
} bs_flight_meta;

/* What a marked dump holds for the default group's members. */
#define BS_FLIGHT_WORLD "[world]"

typedef struct bs_flight bs_flight;

bs_status bs_flight_create(size_t slots, bs_flight **out);
void bs_flight_destroy(bs_flight *f);
/* Appends e (its record_id, state, time_created_ns, phase and thread_id
 * are set here: state scheduled, now, this thread's) over the oldest entry
 * when full; returns the record_id. */
uint64_t bs_flight_record(bs_flight *f, const bs_flight_entry *e);
/* Moves an entry forward (started, completed), stamping the time; a no-op
 * once the ring has overwritten it. */
void bs_flight_advance(bs_flight *f, uint64_t record_id, bs_flight_state st);
/* A process group of the recorder's rank besides the default one: its
 * entries' pg id, name, description and members (global ranks), for
 * pg_config, pg_status and the entries' process_group. */
bs_status bs_flight_add_pg(bs_flight *f, int id, const char *name,
                           const char *desc, const int *members, int n);
/* Entries held now, and entry i counted from the oldest. */
size_t bs_flight_count(const bs_flight *f);
bool bs_flight_get(const bs_flight *f, size_t i, bs_flight_entry *out);
const char *bs_flight_state_name(bs_flight_state st);
/* The dump as JSON (caller frees; NULL when out of memory). */
char *bs_flight_json(const bs_flight *f, const bs_flight_meta *m);
/* The entries as bs_coll_recs, oldest first: what a reader of the JSON
 * dump takes from each (caller frees *out; BS_ERR_NOMEM). */
bs_status bs_flight_colls(const bs_flight *f, bs_coll_rec **out, size_t *n);
/* A dump as bs_flight_json writes it unmarked, from a marked one (or any
 * other, copied); caller frees. NULL when out of memory. */
char *bs_flight_json_expand(const char *json);

#endif
