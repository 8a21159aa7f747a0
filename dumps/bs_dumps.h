/* A job's Flight Recorder dumps, read from a folder: PyTorch's pickles
 * (`<prefix><rank>`, as TORCH_FR_DUMP_TEMP_FILE writes them), their JSON
 * variant, and Backstop's own (rank_<R>, and its JSON copy
 * BS_DUMPS_JSON_DIR/rank<R>.flight.json), of
 * format versions 2.0 to 2.10 (torch 2.4 to 2.15), NCCL or gloo.
 *
 * The model: the job's process groups (bs_dump_group: name, desc, members
 * as global ranks in group-rank order), and per rank (bs_dump) its entries
 * of each group it has entries in (bs_dump_pg), in the order it issued
 * them. Collectives are keyed by collective_seq_id within their group,
 * p2p ops by p2p_seq_id and peer; the entries of one coalesced op (the
 * same seq in a row, ending in "coalesced" or "*_coalesced") are one
 * bs_dump_coll whose parts are the entries. Whether an entry is done is
 * read from state, retired, time_discovered_*, duration_ms and pg_status
 * together (gloo writes every entry `scheduled`, its done ones `retired`).
 *
 * Files that are not dumps are skipped (listed in bs_dumps.skipped); a dump
 * that does not read (torn, truncated) is its rank's, marked unreadable,
 * and the others are still read. */
#ifndef BS_DUMPS_H
#define BS_DUMPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_buf.h"
#include "bs_err.h"
#include "bs_json.h"
#include "comm/bs_comm.h"

struct bs_dval;
struct bs_dval_doc;
struct bs_strpool;

/* The sub-folder of a run's artifacts where Backstop's JSON copies of its
 * pickles sit (docs/cli.md: one torchfrtrace does not read: it takes the files
 * whose names hold "rank_", these are rank<R>.flight.json); the loader
 * reads them first, they hold what the pickles leave out. */
#define BS_DUMPS_JSON_DIR "json"

/* Most ranks a folder's dumps may describe (the world limit). */
#define BS_DUMPS_MAX_RANKS BS_WORLD_MAX_RANKS

typedef enum bs_dump_state {
  BS_DUMP_SCHEDULED = 0,
  BS_DUMP_STARTED,
  BS_DUMP_COMPLETED
} bs_dump_state;

/* What an entry is to its group. */
typedef enum bs_dump_kind {
  BS_DUMP_COLL = 0, /* a collective of every member */
  BS_DUMP_SEND,     /* p2p: to peer */
  BS_DUMP_RECV,     /* p2p: from peer (-1: any source) */
} bs_dump_kind;

/* One op of one rank in one group: an entry, or a coalesced op standing
 * for its entries (parts). Its strings are the folder's (interned: equal
 * strings are the same pointer, so they compare with ==). */
typedef struct bs_dump_coll {
  uint64_t seq;                 /* collective_seq_id; a p2p op's: p2p_seq_id */
  uint64_t cseq;                /* collective_seq_id as written (p2p ops too) */
  uint64_t in_numel, out_numel; /* over every tensor */
  const char *op;     /* the profiling name past "nccl:" and before any
                         " 1->2": "_all_gather_base", "send", "coalesced" */
  const char *in;     /* input sizes as written: "[[56974]]" */
  const char *out;    /* output sizes */
  const char *in_dt;  /* input dtypes, comma-separated: "Byte" */
  const char *out_dt; /* output dtypes */
  const char *label;  /* Backstop's front exchanges: "agree" ("" else) */
  const char *frame;  /* innermost frame: "all_reduce at file.py:38" */
  int in_tensors, out_tensors;
  bs_dump_kind kind;
  int peer;   /* p2p: the other side, a global rank (-1: not known) */
  int nparts; /* coalesced: the entries it stands for; 0: one entry */
  const struct bs_dump_coll *parts; /* coalesced: those entries, in order */
  bs_dump_state state;
  bool p2p;            /* is_p2p (a p2p batch's end marker too) */
  bool coalesced;      /* nparts > 0, or one entry of several tensors
                          whose op says coalesced */
  double duration_ms;  /* -1: not written */
  uint64_t created_ns; /* time_created_ns (0: not written) */
  /* Where the rank issued it among its entries of every group (their
   * place in its dump, which lists them as it recorded them): the order
   * of a rank's own ops across its groups. */
  uint64_t rid;
  uint64_t started_ns, completed_ns; /* time_discovered_*_ns (0: none) */
} bs_dump_coll;

/* A process group of the job. */
typedef struct bs_dump_group {
  const char *name; /* the entries' process_group[0], pg_config's name: "0" */
  const char *desc; /* "default_pg", "undefined", a user's */
  int *ranks;       /* members, global ranks, by group rank */
  int n;
  /* The members are pg_config's (true), or, where no pg_config names the
   * group (torch 2.15's gloo), the ranks whose dumps hold its entries,
   * and for the default group every rank the folder has a dump of. */
  bool ranks_known;
} bs_dump_group;

/* One rank's entries of one group, in the order it issued them. */
typedef struct bs_dump_pg {
  int group;       /* in bs_dumps.groups */
  bs_dump_coll *c; /* collectives and p2p ops */
  size_t n;
  bs_dump_coll *raw; /* every entry as written (parts point into it) */
  size_t nraw;
  /* pg_status's, -1 where not written. */
  int64_t last_enqueued, last_started, last_completed;
  int64_t pg_id; /* its entries' (the rank's own number of the group; -1) */
} bs_dump_pg;

/* A dump that did not read (torn, truncated, refused). */
typedef struct bs_dump_bad {
  int rank; /* from its file's name */
  char file[256];
  char why[192];
} bs_dump_bad;

typedef struct bs_dump {
  int rank; /* global rank */
  char file[256];
  bs_dump_pg *pg; /* by group index, ascending; only groups it has entries in */
  size_t npg;
  /* The group bs_dumps.group's entries (an alias of one pg[k], NULL/0 when
   * it holds none): what single-group callers read. */
  bs_dump_coll *c;
  size_t n;
  int timeout_ms; /* of its last entry; 0: not known */
  /* The record_id of its first entry: entries its ring forgot before
   * the dump (0: none, or none written). */
  uint64_t lost;
  /* Its ops are retired when issued, not when done: a collective retired
   * past its group's last_completed_collective (PyTorch's
   * FlightRecorderHook, for backends without a recorder of their own). */
  bool retires_at_issue;
  /* How many ranks gloo's nameless pg_config lists: the last group the
   * rank is in, by that group's own numbering (0: none). */
  int cfg_ranks;
} bs_dump;

typedef struct bs_dumps {
  bs_dump *d; /* the dumps that read, by rank, ascending */
  size_t n;
  bs_dump_bad *bad; /* those that did not, by rank (none of them in d) */
  size_t nbad;
  bs_dump_group *groups; /* by name (numeric names in number order) */
  size_t ngroups;
  int ranks; /* the job's: 1 + the highest global rank named */
  int group; /* the group asked for (--pg), else the default one */
  /* The group `group`, for single-group callers (replay). */
  int world;    /* its members */
  int *members; /* its global ranks, by group rank (world of them) */
  char pg[64];  /* its name: "0" */
  char pg_desc[64];
  char version[16]; /* the dumps' "version" */
  char lib[48];     /* comm_lib_version, or the profiling names' prefix */
  bool pickle;      /* some were pickles */
  char *skipped;    /* files that are not dumps, ", "-separated (NULL: none) */
  size_t nskipped;
  /* Sub-folders holding dumps, not read since the folder holds some of
   * its own, ", "-separated (NULL: none). */
  char *unread;
  size_t entries;                 /* entries read, over every dump */
  struct bs_strpool *pool;        /* the interned strings */
  struct bs_dumps_reader *reader; /* what reading keeps between dumps */
  bool *seen;                     /* by global rank: a dump was read */
  bool walked; /* read from the sub-folders (none in the folder itself) */
  void *priv;  /* the reader's (groups being built) */
} bs_dumps;

/* The collective in a profiling name: "_all_gather_base" of
 * "nccl:_all_gather_base" (the name itself when it has no prefix; a p2p
 * op's runs on: "send 1->2"). */
const char *bs_dumps_op_name(const char *profiling_name);
/* How ranks' sizes in op (an op name) relate, by torchfrtrace's rules:
 * alike on every rank, a rooted gather's outputs or a scatter's inputs
 * the root's alone, an all_to_all's each rank's own split. analyze
 * compares ranks by it, replay picks a stand-in by it. */
typedef enum bs_dumps_form {
  BS_DUMPS_EVEN = 0,
  BS_DUMPS_GATHER,
  BS_DUMPS_SCATTER,
  BS_DUMPS_ALL_TO_ALL
} bs_dumps_form;
bs_dumps_form bs_dumps_op_form(const char *op);

/* Backstop's dtype for PyTorch's name of one ("BFloat16", "Float", "Int",
 * "Long", "Byte" or "UInt8"); false for any other. */
bool bs_dumps_op_dtype(const char *torch, bs_dtype *out);

/* Reads every dump in dir (not its subfolders; files that are not dumps
 * are skipped and listed). pg: the group single-group callers get (a name
 * or a description; NULL: the default group, else the first). Every group
 * is read whatever pg says. BS_ERR_INVALID naming what is wrong: pg names
 * no group, or the folder holds no readable dump. */
bs_status bs_dumps_load(const char *dir, const char *pg, bs_dumps *out);
void bs_dumps_free(bs_dumps *d);

/* One dump (a read pickle or JSON file) as rank's. name: the file's name,
 * for messages and for the rank when the dump has none. A second dump of
 * a rank already read is ignored (the JSON copy beside a pickle). */
bs_status bs_dumps_add(bs_dumps *d, const bs_json *root, const char *name);
/* The same of a document made in bs_dumps_doc's (bs_pickle_read_doc). */
bs_status bs_dumps_add_doc(bs_dumps *d, const struct bs_dval *root,
                           const char *name);
/* The document a dump is read into (reset it before each: what the last
 * dump added is in the model already) and the pool its strings go in. */
bs_status bs_dumps_doc(bs_dumps *d, struct bs_dval_doc **doc,
                       struct bs_strpool **pool);
/* A dump that did not read: its rank (from the file's name) is unreadable,
 * why saying how. BS_ERR_INVALID when the name gives no rank. */
bs_status bs_dumps_add_unreadable(bs_dumps *d, const char *name,
                                  const char *why);
/* After the last bs_dumps_add: sorts, settles the groups and their
 * members, picks group pg for single-group callers. */
bs_status bs_dumps_finish(bs_dumps *d, const char *pg);

/* The dump of global rank r, NULL when it left none (or it did not read:
 * bs_dumps_bad_rank). */
const bs_dump *bs_dumps_rank(const bs_dumps *d, int r);
const bs_dump_bad *bs_dumps_bad_rank(const bs_dumps *d, int r);
/* The group named (its name or desc), -1 when none is. */
int bs_dumps_group_find(const bs_dumps *d, const char *name);
/* The group rank of global rank r in group g, -1 when it is not in it. */
int bs_dumps_group_rank(const bs_dumps *d, int g, int r);
/* Rank d's entries of group g, NULL when it has none. */
const bs_dump_pg *bs_dumps_pg_of(const bs_dump *d, int g);
/* Its collective #seq (not p2p), NULL when it has none. */
const bs_dump_coll *bs_dumps_pg_find(const bs_dump_pg *p, uint64_t seq);
/* Its p2p op #p2p_seq of kind with peer (-1: any), NULL when none. */
const bs_dump_coll *bs_dumps_pg_find_p2p(const bs_dump_pg *p, uint64_t seq,
                                         bs_dump_kind kind, int peer);

/* The same in the group bs_dumps.group (single-group callers). */
const bs_dump_coll *bs_dumps_find(const bs_dump *d, uint64_t seq);
/* The element count of c as Backstop's collectives take it: what each
 * rank sends to an all-gather, what it keeps of a reduce-scatter (its
 * input to any other). */
uint64_t bs_dumps_coll_count(const bs_dump_coll *c);
/* The first collective sequence number every dump of group g still holds
 * (rings forget); bs_dumps_first_seq: of the group bs_dumps.group. */
uint64_t bs_dumps_group_first_seq(const bs_dumps *d, int g);
uint64_t bs_dumps_first_seq(const bs_dumps *d);

/* Backstop's dump (the flight recorder's JSON) as the pickle PyTorch
 * writes, appended to out; without Backstop's own entries (nccl:comm_init),
 * which PyTorch's analyzer refuses. */
bs_status bs_dumps_pickle(const char *json, bs_buf *out);

#endif
