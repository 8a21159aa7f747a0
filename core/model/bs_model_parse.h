/* Model specs from their text (a preset's or a file's): the parser. Only
 * the planner (harness/plan, harness/explore), the commands, the
 * benchmark and the core itself include it; every floor of a run below
 * the planner reads the spec the planner loaded (bs_run.h), and
 * ci/layers.py fails an include of this header there (PARSERS). */
#ifndef BS_MODEL_PARSE_H
#define BS_MODEL_PARSE_H

#include "bs_err.h"
#include "model/bs_model.h"

/* Parse text; errors (BS_ERR_INVALID) read "FILE:LINE: expected ..., got ...".
 */
bs_status bs_model_parse(const char *text, const char *filename, double scale,
                         bs_model_spec *out);
/* A preset by name: tiny, dense, moe, frozen, lora. */
bs_status bs_model_preset(const char *name, double scale, bs_model_spec *out);
/* A preset name or a file path. */
bs_status bs_model_load(const char *preset_or_file, double scale,
                        bs_model_spec *out);

#endif
