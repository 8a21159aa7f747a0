/* Inside the dump reader (bs_dumps.h): one entry's fields, a rank's
 * entries folded into its coalesced ops, and the job's process groups as
 * the dumps name them. */
#ifndef BS_DUMPS_INT_H
#define BS_DUMPS_INT_H

#include "dumps/bs_dumps.h"

/* pg_status of one pg_id (a rank's local group number). */
typedef struct bs_dumps_status {
  int64_t pg_id;
  int64_t enqueued, started, completed; /* -1: not written */
} bs_dumps_status;

/* Entry e of a dump as c (its peer still a group rank, mapped once the
 * group's members are settled); st: the dump's pg_status of e's pg_id, or
 * NULL. *oom on running out of memory. */
void bs_dumps_entry_read(struct bs_strpool *pool, const bs_json *e,
                         const bs_dumps_status *st, bs_dump_coll *c, bool *oom);
/* The ops of raw[0..n): each run of entries with one seq folded into one
 * op whose parts they are (out holds at most n). Returns the ops. */
size_t bs_dumps_entry_fold(struct bs_strpool *pool, const bs_dump_coll *raw,
                           size_t n, bs_dump_coll *out, bool *oom);

/* The groups being read: what pg_config says, what the entries say. */
typedef struct bs_dumps_groups bs_dumps_groups;

/* The index of the group entries name (name, desc: interned), made on
 * first sight; -1 when out of memory. */
int bs_dumps_groups_of(bs_dumps *d, const char *name, const char *desc);
/* A dump's pg_config: the members of each group it names (the first dump
 * that names a group's members fixes them); its comm_size (Backstop's),
 * the default group's size where no pg_config gives it. */
bs_status bs_dumps_groups_config(bs_dumps *d, const bs_json *root,
                                 const char *file);
/* Once every dump is read: d->groups (sorted, members settled: known ones,
 * else the ranks holding the group's entries, every rank for the default
 * group), each dump's pg[].group renumbered and p2p peers made global. */
bs_status bs_dumps_groups_settle(bs_dumps *d);
void bs_dumps_groups_free(bs_dumps *d);

#endif
