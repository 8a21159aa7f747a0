/* A job's Flight Recorder dumps, read from a folder: PyTorch's pickles
 * (`<prefix><rank>`, as TORCH_FR_DUMP_TEMP_FILE writes them), their JSON
 * variant, and Backstop's own (rank<R>.flight.json beside rank_<R>). One
 * process group is kept: each rank's collectives in it, in order, with
 * what `analyze` compares and `replay` issues. */
#ifndef BS_DUMPS_H
#define BS_DUMPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_err.h"
#include "comm/bs_comm.h"
#include "util/bs_buf.h"
#include "util/bs_json.h"

/* Most ranks a folder's dumps may describe (the world limit). */
#define BS_DUMPS_MAX_RANKS BS_WORLD_MAX_RANKS

typedef enum bs_dump_state {
  BS_DUMP_SCHEDULED = 0,
  BS_DUMP_STARTED,
  BS_DUMP_COMPLETED
} bs_dump_state;

/* One collective of one rank. Its strings are the folder's (interned:
 * equal strings are the same pointer, so they compare with ==). */
typedef struct bs_dump_coll {
  uint64_t seq; /* collective_seq_id (p2p_seq_id for a p2p op) */
  uint64_t in_numel, out_numel; /* over every tensor */
  const char *op;     /* the profiling name past "nccl:": "_all_gather_base" */
  const char *in;     /* input sizes as written: "[[56974]]" */
  const char *out;    /* output sizes */
  const char *in_dt;  /* input dtypes, comma-separated: "Byte" */
  const char *out_dt; /* output dtypes */
  const char *label;  /* Backstop's front exchanges: "agree" ("" else) */
  const char *frame;  /* innermost frame: "all_reduce at file.py:38" */
  int in_tensors, out_tensors;
  bs_dump_state state;
  bool p2p;
} bs_dump_coll;

typedef struct bs_dump {
  int rank; /* global rank */
  char file[256];
  bs_dump_coll *c; /* in order, only the process group's */
  size_t n;
  int timeout_ms; /* of its last collective; 0: not known */
} bs_dump;

typedef struct bs_dumps {
  bs_dump *d; /* by rank, ascending */
  size_t n;
  int world;    /* ranks of the process group */
  int *members; /* its global ranks, ascending (world of them) */
  char pg[64];  /* the process group: "0" */
  char pg_desc[64];
  char version[16]; /* the dumps' "version" */
  char lib[48];     /* comm_lib_version, or the profiling names' prefix */
  bool pickle;      /* some were pickles */
  struct bs_strpool *pool; /* the interned strings */
  char *members_text;      /* the members as the first dump wrote them */
  bool *seen;              /* by global rank: a dump was read */
} bs_dumps;

/* The collective in a profiling name: "_all_gather_base" of
 * "nccl:_all_gather_base" (the name itself when it has no prefix). */
const char *bs_dumps_op_name(const char *profiling_name);

/* Backstop's dtype for PyTorch's name of one ("BFloat16", "Float", "Int",
 * "Long", "Byte" or "UInt8"); false for any other. */
bool bs_dumps_dtype(const char *torch, bs_dtype *out);

/* Reads every dump in dir (not its subfolders; other files are skipped),
 * keeping process group pg (a name or a description; NULL: the default
 * group, else the first one). BS_ERR_INVALID naming the file and what is
 * wrong with it, or saying the folder holds no dump. */
bs_status bs_dumps_load(const char *dir, const char *pg, bs_dumps *out);
void bs_dumps_free(bs_dumps *d);

/* One dump's tree (a parsed pickle or JSON file) as rank's. name: the
 * file's name, for messages and for the rank when the dump has none. */
bs_status bs_dumps_add(bs_dumps *d, const bs_json *root, const char *name,
                       const char *pg);
/* After the last bs_dumps_add: sorts, checks ranks against the group. */
bs_status bs_dumps_finish(bs_dumps *d);

/* The dump of global rank r, NULL when it left none. */
const bs_dump *bs_dumps_rank(const bs_dumps *d, int r);
/* Its collective #seq, NULL when it has none. */
const bs_dump_coll *bs_dumps_find(const bs_dump *d, uint64_t seq);
/* The element count of c as Backstop's collectives take it: what each
 * rank sends to an all-gather, what it keeps of a reduce-scatter (its
 * input to any other). */
uint64_t bs_dumps_coll_count(const bs_dump_coll *c);
/* The first sequence number every dump still holds (rings forget). */
uint64_t bs_dumps_first_seq(const bs_dumps *d);

/* Backstop's dump (the flight recorder's JSON) as the pickle PyTorch
 * writes, appended to out; without Backstop's own entries (nccl:comm_init),
 * which PyTorch's analyzer refuses. */
bs_status bs_dumps_pickle(const char *json, bs_buf *out);

#endif
