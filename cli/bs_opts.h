/* The options of `backstop run`, `mutants`, `sweep` and `fuzz` (docs/cli.md),
 * parsed and validated up front: a usage error is BS_ERR_INVALID with a
 * one-line message in bs_err() naming what was wrong, before anything runs. */
#ifndef BS_OPTS_H
#define BS_OPTS_H

#include <stddef.h>

#include "bs_err.h"
#include "plan/bs_plan.h"

/* The checks of every command's values, usage errors (BS_ERR_INVALID)
 * naming opt and the value: a whole-string decimal integer in [lo, hi] (no
 * sign, space or leading zero), and one of two words. */
bs_status bs_opts_long(const char *opt, const char *s, long lo, long hi,
                       long *out);
bs_status bs_opts_choice(const char *opt, const char *v, const char *a,
                         const char *b);

/* cmd is "run", "mutants" (which has no --mutant), "sweep" or "fuzz" (each
 * with its own options besides run's); argv[0] is the command itself.
 * Reorders argv (getopt). */
bs_status bs_opts_parse(const char *cmd, int argc, char **argv, bs_opts *o);

#endif
