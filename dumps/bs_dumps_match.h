/* Two verdicts of the schema `analyze --json` writes compared: what a
 * corpus program's truth says against what analyze or replay found, and a
 * replay's read-back against the dumps' own verdict. They match when the
 * verdict is the same, the roots are the same ranks, each of the same kind
 * (a rank that left no dump reads, once replayed, as one that stalled:
 * replayed), group, op number (where `want` says the dumps cannot order a
 * root's ops, any of those it is missing from) and mismatch, and the order
 * deadlocks run through the same groups. */
#ifndef BS_DUMPS_MATCH_H
#define BS_DUMPS_MATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "bs_json.h"

/* false with why (a line) where they differ. */
bool bs_dumps_match(const bs_json *want, const bs_json *got, bool replayed,
                    char *why, size_t n);
/* The same of their texts; one that does not parse differs. */
bool bs_dumps_match_json(const char *want, const char *got, bool replayed,
                         char *why, size_t n);

#endif
