/* Mutants: historical bugs kept as runtime switches (docs/behavior.md §8), the
 * rows of bs_mutants.def. All default off. Each use site carries a comment
 * naming the mutant's origin. */
#ifndef BS_MUTANT_H
#define BS_MUTANT_H

#include <stdbool.h>
#include <stddef.h>

typedef enum bs_mutant {
#define BS_MUTANT(id, name, origin, effect, ordering) BS_MUT_##id,
#include "bs_mutants.def"
#undef BS_MUTANT
  BS_MUT_COUNT
} bs_mutant;

/* A set of mutants, as a run names them: what configuration validation
 * is given (bs_config_validate), while the switches below are the running
 * core's. */
typedef struct bs_mutants {
  unsigned bits;
} bs_mutants;
_Static_assert(BS_MUT_COUNT <= 32, "bs_mutants holds 32 mutants");

/* Whether s holds m; s with m added; the set of ids[0..n). */
bool bs_mutant_in(bs_mutants s, bs_mutant m);
bs_mutants bs_mutant_with(bs_mutants s, bs_mutant m);
bs_mutants bs_mutant_of(const bs_mutant *ids, size_t n);

bool bs_mutant_on(bs_mutant m);
void bs_mutant_set(bs_mutant m, bool on);
void bs_mutant_reset(void);
const char *bs_mutant_name(bs_mutant m); /* "pause-not-in-finally" */
const char *bs_mutant_origin(bs_mutant m);
const char *bs_mutant_effect(bs_mutant m); /* what goes wrong */
/* A bug of interleavings: some schedules of its scenario expose it, not
 * every one (not the default): its kill needs schedules explored. */
bool bs_mutant_ordering(bs_mutant m);
int bs_mutant_parse(const char *name); /* -1 when unknown */

#endif
