/* Inside the corpus (bs_corpus.h): a program's model, shared by its
 * generator (bs_corpus_gen), its execution to the point where no rank can
 * move (bs_corpus_exec), its truth (bs_corpus_truth, bs_corpus_vote), its
 * JSON (bs_corpus_prog) and its run on the sim (bs_corpus_sim). */
#ifndef BS_CORPUS_INT_H
#define BS_CORPUS_INT_H

#include "bs_corpus.h"

#define BS_CORPUS_MAX_DIMS 5
#define BS_CORPUS_MAX_ROOTS 3

typedef enum bs_corpus_kind {
  BS_CK_COLL = 0, /* a collective of its group */
  BS_CK_SEND,     /* a blocking send to `to` */
  BS_CK_RECV,     /* a blocking recv from `from` */
  BS_CK_PAIR      /* an isend to `to` and an irecv from `from` (either -1),
                     issued together and waited for together */
} bs_corpus_kind;

typedef enum bs_corpus_coll {
  BS_CC_ALL_REDUCE = 0,
  BS_CC_ALL_GATHER,
  BS_CC_BROADCAST,
  BS_CC_BARRIER,
  BS_CC_ALL_TO_ALL,
  BS_CC_COALESCED /* all_reduce_coalesced of parts[] */
} bs_corpus_coll;

typedef enum bs_corpus_dt {
  BS_CD_F32 = 0,
  BS_CD_BF16,
  BS_CD_I32,
  BS_CD_I64
} bs_corpus_dt;

typedef struct bs_corpus_op {
  int g; /* 0: the world; k: groups[k - 1] */
  uint8_t kind, coll, dt;
  uint8_t nparts;    /* coalesced */
  uint32_t n;        /* elements (a coalesced op's: every part's) */
  uint32_t parts[3]; /* coalesced: each part's elements */
  uint32_t cols;     /* > 1: issued as a 2-D [n / cols, cols] tensor */
  int to, from;      /* p2p peers, global ranks (-1: none) */
} bs_corpus_op;

/* A rank's program: its ops, the fault applied. */
typedef struct bs_corpus_rank {
  bs_corpus_op *op;
  size_t n, cap;
  /* It stalls (or dies) before op[stop], never issuing it or any after
   * (stalls false: it issues all n). */
  bool stalls;
  size_t stop;
  bool no_dump; /* it leaves no dump (it died, or its node's folder is
                   missing) */
} bs_corpus_rank;

typedef struct bs_corpus_group {
  char name[16], desc[24];
  int *ranks; /* ascending */
  int n;
  int dim; /* the mesh dimension it is a slice of (-1: none) */
} bs_corpus_group;

/* How the groups were made, for torch to make them again alike. */
typedef struct bs_corpus_maker {
  enum { BS_CM_MESH, BS_CM_SUBGROUPS, BS_CM_GROUP } how;
  int shape[BS_CORPUS_MAX_DIMS], ndims; /* mesh */
  char dims[BS_CORPUS_MAX_DIMS][8];     /* mesh: its dimensions' names */
  int size;                             /* subgroups */
  int group;                            /* group: its index in groups */
} bs_corpus_maker;

/* A root as the program made it (its fault), for the truth to read. */
typedef struct bs_corpus_flaw {
  enum { BS_CF_STALL, BS_CF_SKIP, BS_CF_SWAP, BS_CF_MISMATCH } what;
  int rank;
  int mismatch; /* bs_dumps_mismatch */
} bs_corpus_flaw;

/* Where the executed program stands for one rank. */
typedef struct bs_corpus_issued {
  int op;       /* its index in the rank's program */
  int part;     /* a pair's 0 (send) or 1 (recv); 0 otherwise */
  uint64_t seq; /* collective_seq_id, or p2p_seq_id */
  bool p2p;
  bool done;
  bool send;    /* p2p: a send (else a recv) */
  int peer;     /* p2p: the other side */
  uint32_t nth; /* p2p: its place among those of its pair and direction */
} bs_corpus_issued;

typedef struct bs_corpus_state {
  bs_corpus_issued *e; /* its entries, in the order it issued them */
  size_t n, cap;
  size_t next; /* its next op not issued */
  bool waits;  /* its last op is not done */
} bs_corpus_state;

struct bs_corpus {
  uint64_t seed, index;
  int world;
  bs_corpus_group *groups;
  int ngroups;
  bs_corpus_maker *make;
  int nmake;
  bs_corpus_rank *rank;
  int fr_buffer;    /* ring slots (0: 2000) */
  int nodes;        /* > 0: dumps gathered a folder per node of world /
                       nodes ranks */
  int missing_node; /* its folder is missing (-1: none) */
  bs_corpus_flaw fault[BS_CORPUS_MAX_ROOTS];
  int nfaults;
  char what[256];      /* the fault, in words */
  bs_corpus_state *st; /* by rank, once executed */
  char *truth;         /* its JSON */
};

/* The program drawn (c's seed, index and limits set; the rest filled). */
bs_status bs_corpus_gen_draw(bs_corpus *c, const bs_corpus_limits *lim,
                             uint64_t attempt);
void bs_corpus_gen_free(bs_corpus *c);

/* The ops rank r issues: all, or those before it stalls. */
size_t bs_corpus_exec_limit(const bs_corpus *c, int r);
/* The program issued until no rank can move (c->st). */
bs_status bs_corpus_exec_run(bs_corpus *c);
/* The members of group g of the program (0: every rank). */
int bs_corpus_exec_members(const bs_corpus *c, int g, const int **ranks);

/* The truth of the executed program (c->truth); false when the dumps
 * would show no hang or desync of it (the program is drawn again). */
bs_status bs_corpus_truth_make(bs_corpus *c, bool *shows);

/* The group's name as torch gives it ("0" for the world). */
const char *bs_corpus_prog_name(const bs_corpus *c, int g);
const char *bs_corpus_prog_coll(int coll);

#endif
