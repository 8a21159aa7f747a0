/* "Did you mean": the known name nearest to a mistyped one, for the usage
 * errors of every part (commands, scenarios, labels, fault points, --set
 * keys). */
#ifndef BS_NEAR_H
#define BS_NEAR_H

#include <stddef.h>

/* The name of names[0..n) (NULLs skipped) within a few edits of word
 * (Damerau-Levenshtein: fewer than 2 + a quarter of its length), the
 * nearest and first on a tie; NULL when none is. */
const char *bs_near(const char *word, const char *const *names, size_t n);

/* " (did you mean 'NAME'?)" for bs_near's answer, or "" (a static buffer:
 * one at a time). */
const char *bs_near_hint(const char *word, const char *const *names, size_t n);

#endif
