/* Inside the dump reader (bs_dumps.h): one entry's fields, a rank's
 * entries folded into its coalesced ops, and the job's process groups as
 * the dumps name them. */
#ifndef BS_DUMPS_INT_H
#define BS_DUMPS_INT_H

#include "bs_dumps.h"
#include "bs_dval.h"

/* The keys read (bs_dumps_keys.def): BS_DK_PROFILING_NAME, ... */
enum {
#define BS_DUMPS_KEY(id, key) BS_DK_##id,
#include "bs_dumps_keys.def"
#undef BS_DUMPS_KEY
  BS_DK_COUNT
};

/* What reading a folder keeps from dump to dump: the keys interned (so an
 * entry is read in one pass of pointer compares) and the last frame made
 * (thousands of entries share one). */
#define BS_DUMPS_KEY_PLACES 32

typedef struct bs_dumps_reader {
  bs_dval_doc doc; /* the document being read */
  const char *key[BS_DK_COUNT];
  /* The key at each of an entry's first places in the last entry, and its
   * index in key (-1: not read): a dump's entries write their keys in one
   * order, so each is found at once (millions of entries in thousands of
   * dumps). */
  const char *seen[BS_DUMPS_KEY_PLACES];
  int seen_at[BS_DUMPS_KEY_PLACES];
  const char *frame_name, *frame_file, *frame;
  int64_t frame_line;
} bs_dumps_reader;

/* The keys rd looks entries up by, interned in pool. */
bs_status bs_dumps_reader_init(bs_dumps_reader *rd, struct bs_strpool *pool);
/* d's pool and reader, made on first use. */
bs_status bs_dumps_start(bs_dumps *d);

/* A dump read by one reader but not yet the folder's: its groups are the
 * entries' own (name, desc), pg[].group an index into them, until it is
 * added (bs_dumps_commit: in file order, so that which dump names a
 * group first does not depend on which thread read it first). */
typedef struct bs_dumps_prep {
  bs_dump dump;
  const char **name, **desc;
  size_t ng, cap;
  size_t entries;
} bs_dumps_prep;

/* root's dump read into p, through rd and pool (a thread's own reader and
 * view of the folder's pool). BS_ERR_INVALID: no entries, no rank. */
bs_status bs_dumps_prepare(struct bs_strpool *pool, bs_dumps_reader *rd,
                           const struct bs_dval *root, const char *name,
                           bs_dumps_prep *p);
/* p added to d (dropped when its rank already has a dump); p is emptied
 * either way. */
bs_status bs_dumps_commit(bs_dumps *d, const struct bs_dval *root,
                          bs_dumps_prep *p);
void bs_dumps_prep_free(bs_dumps_prep *p);

/* The values of entry e under each key read (NULL where it has none). */
void bs_dumps_entry_fields(bs_dumps_reader *rd, const bs_dval *e,
                           const bs_dval **f);

/* pg_status of one pg_id (a rank's local group number). */
typedef struct bs_dumps_status {
  int64_t pg_id;
  int64_t enqueued, started, completed; /* -1: not written */
} bs_dumps_status;

/* The entry of fields f as c (its peer still a group rank, mapped once
 * the group's members are settled); st: the dump's pg_status of its pg_id,
 * or NULL. *oom on running out of memory. */
void bs_dumps_entry_read(struct bs_strpool *pool, bs_dumps_reader *rd,
                         const bs_dval *const *f, const bs_dumps_status *st,
                         bs_dump_coll *c, bool *oom);
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
 * the default group's size where no pg_config gives it; gloo's nameless
 * one counted in dump->cfg_ranks. */
bs_status bs_dumps_groups_config(bs_dumps *d, const bs_dval *root,
                                 bs_dump *dump);
/* Once every dump is read: d->groups (sorted, members settled: known ones,
 * else the ranks holding the group's entries, every rank for the default
 * group), each dump's pg[].group renumbered and p2p peers made global. */
bs_status bs_dumps_groups_settle(bs_dumps *d);
void bs_dumps_groups_free(bs_dumps *d);

#endif
