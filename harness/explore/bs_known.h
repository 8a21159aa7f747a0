/* The one classifier of sweep and fuzz (docs/cli.md): a failure that is the
 * truth about the configuration, not a bug, is `known`: shown apart and
 * not failing the exit status unless --strict. */
#ifndef BS_KNOWN_H
#define BS_KNOWN_H

#include <stdbool.h>
#include <stddef.h>

#include "catalog/bs_run.h"
#include "result/bs_result.h"

/* Whether res, a run of cfg's scenario and settings, failed only as the
 * configuration allows: a corruption that the core's own SHA256 restore
 * check does not cover reached the weights (the check is off, or the
 * restore is past its window), so only bit identity broke. why says which
 * settings make the core catch it. */
bool bs_known(const bs_run *cfg, const bs_result *res, char *why, size_t n);

/* res's verdict made BS_KNOWN, why in its note, when bs_known says so and
 * not strict; returns whether it was known (strict or not). */
bool bs_known_mark(const bs_run *cfg, bs_result *res, bool strict);

#endif
