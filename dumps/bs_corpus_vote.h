/* Inside the corpus's truth (bs_corpus_truth.c): what the dumps would show
 * of the executed program's ranks' orders. A rank's record is what its
 * dump holds (its last fr_buffer entries), a group's kind its mesh
 * dimension (a group of its own otherwise), and which of two ops comes
 * first is put to the vote docs/hang-report.md describes: every rank with
 * a dump and groups of both kinds that issued one of them; a tie asks the
 * ops one back, twice. */
#ifndef BS_CORPUS_VOTE_H
#define BS_CORPUS_VOTE_H

#include "bs_corpus_int.h"

/* The first entry of rank r its dump holds (every entry before it
 * forgotten by its ring). */
size_t bs_corpus_vote_window(const bs_corpus *c, int r);
/* The last collective of group g rank r's record holds (0: none). */
uint64_t bs_corpus_vote_last(const bs_corpus *c, int r, int g);
/* Rank m, missing from collective #s of g: whether its record shows it
 * ran past it against the vote; *went_g, *went_s: the op it went on
 * into. */
bool bs_corpus_vote_ran_past(const bs_corpus *c, int m, int g, uint64_t s,
                             int *went_g, uint64_t *went_s);
/* The first collective of g rank m ran past, back from s. */
uint64_t bs_corpus_vote_first_past(const bs_corpus *c, int m, int g,
                                   uint64_t s);
/* Whether the order of two ops (collectives) rank m never issued is told
 * by a rank in both groups that issued one and not the other (or both). */
bool bs_corpus_vote_ordered(const bs_corpus *c, int m, int ga, uint64_t sa,
                            int gb, uint64_t sb);
/* Whether the tail of rank r's record repeats (twice, the smallest unit
 * that does) with an op of each of the n groups in its unit: what tells
 * which of them it issues next. */
bool bs_corpus_vote_period(const bs_corpus *c, int r, const int *groups, int n);
/* Whether rank r's record shows it issued collective #s of its group of
 * g's kind. */
bool bs_corpus_vote_issued(const bs_corpus *c, int r, int g, uint64_t s);
/* Whether rank r's record holds an op of group g. */
bool bs_corpus_vote_holds(const bs_corpus *c, int r, int g);

#endif
