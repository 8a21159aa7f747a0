/* A labeled corpus of hung and diverged jobs (`backstop bench --hangs`):
 * job programs drawn from a seed, each with its truth, run on simulated
 * ranks to Flight Recorder dumps in PyTorch's format.
 *
 * A program is a mesh of TP x PP x DP x CP x EP ranks (4 to 512, drawn
 * log-uniform), its process groups made as a DeviceMesh, new_subgroups or
 * new_group would make them, in torch's order (so the names torch gives
 * them: "1", "2", ...), and per step each dimension's ops (tensor
 * parallel all_reduces, a context-parallel ring of isend/irecv, an expert
 * all_to_all, a pipeline's 1F1B or all-forward-all-backward p2p, a data
 * parallel all_reduce or coalesced one, barriers, a world all_reduce),
 * then a fault: a rank that stalls (with or without a dump), skips an op
 * and goes on (running ahead where its later ops match its peers' earlier
 * ones), two or three independent roots, ranks that swap two groups' ops,
 * another size, shape, dtype or op, a ring that wraps, a node's folder of
 * dumps missing.
 *
 * Its truth is worked out from the program alone (bs_corpus_truth.c): its
 * ops issued until none can move, as the ranks match them, and what the
 * dumps then show by the rules docs/hang-report.md gives (a fault the
 * dumps cannot show is written as what they show), in the schema of
 * `backstop analyze --json`. A program whose hang no dump shows is drawn
 * again. The same seed and index give the same program, truth and dumps
 * (times apart). */
#ifndef BS_CORPUS_H
#define BS_CORPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_buf.h"
#include "bs_err.h"
#include "bs_json.h"

typedef struct bs_corpus bs_corpus;

typedef struct bs_corpus_limits {
  int min_ranks, max_ranks; /* 4 and 512 by default (0) */
} bs_corpus_limits;

/* Program `index` of the corpus of `seed`. */
bs_status bs_corpus_make(uint64_t seed, uint64_t index,
                         const bs_corpus_limits *lim, bs_corpus **out);
void bs_corpus_free(bs_corpus *c);

/* Its ranks, and what it does wrong in a line ("rank 5 skips all_reduce
 * #2 of group 8 (mesh_dp) and goes on"). */
int bs_corpus_ranks(const bs_corpus *c);
const char *bs_corpus_fault(const bs_corpus *c);

/* The program as JSON (schema "backstop-hang-program/1", what
 * tests/fr_torch_prog.py runs), and its truth (BS_DUMPS_JSON_SCHEMA). */
bs_status bs_corpus_prog_json(const bs_corpus *c, bs_buf *out);
bs_status bs_corpus_truth_json(const bs_corpus *c, bs_buf *out);

/* Whether text is a truth (that schema; every root with a rank, kind,
 * group and op); else why, in a line. */
bool bs_corpus_truth_check(const char *text, char *why, size_t n);

/* Runs it on as many simulated ranks, each ending in its last op or
 * after its last, and writes their dumps into dir as PyTorch names them
 * (rank_<R> pickles; node<K>/ folders for a job gathered by node), the
 * ring, missing dumps and folders as the program says. */
bs_status bs_corpus_sim_run(const bs_corpus *c, const char *dir);

/* Scores got (an analyze --json or replay --json verdict) against truth:
 * the verdict, the exact set of roots, each root's kind, group, op number
 * (or, where the truth says the dumps cannot order a root's ops, one of
 * them), and an order deadlock's groups (bs_dumps_match.h; replayed: got
 * is a replay's read-back). false with why (a line) on a miss. */
bool bs_corpus_score(const char *truth, const char *got, bool replayed,
                     char *why, size_t n);

#endif
