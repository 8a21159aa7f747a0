/* Fault specs from their text (docs/cli.md "Fault spec": --fault's, a
 * scenario's, sweep's and fuzz's): the parser. Only the planner
 * (harness/plan, harness/explore) and the commands include it; every floor
 * of a run below the planner reads the specs the planner parsed
 * (bs_run.h), and ci/layers.py fails an include of this header there
 * (PARSERS). */
#ifndef BS_FAULT_PARSE_H
#define BS_FAULT_PARSE_H

#include <stdbool.h>

#include "bs_err.h"
#include "bs_fault_control.h"

/* BS_ERR_INVALID with a one-line message naming the problem. */
bs_status bs_fault_spec_parse(const char *text, bs_fault_spec *out);
/* True for a catalogue name, or "PREFIX*" where PREFIX starts one. */
bool bs_fault_spec_name_valid(const char *name);
/* " (did you mean 'engine/send'?)" for a name that names no point, or "". */
const char *bs_fault_spec_near(const char *name);

#endif
