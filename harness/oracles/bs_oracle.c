#include "oracles/bs_oracle.h"

#include <stdio.h>
#include <string.h>

static const bs_oracle table[] = {
    {"liveness", "every rank returned before the deadline", bs_oracle_liveness},
    {"agreement", "all surviving ranks end every phase with the same status",
     bs_oracle_agreement},
    {"pause-safety",
     "param_buffer is PAUSED after every update_weights return (MainCast) "
     "or from sleep on (Normal under offload)",
     bs_oracle_pause_safety},
    {"bit-identity",
     "every successful restore equals the last step end, SHA256 per tensor; "
     "the engine received exactly those bytes",
     bs_oracle_bit_identity},
    {"memory-budget",
     "pinned backuper bytes per rank within the configuration's budget",
     bs_oracle_memory_budget},
    {"no-paused-reads", "nothing read a PAUSED allocation",
     bs_oracle_no_paused_reads},
    {"uniform-schedule",
     "every rank issued the same collectives in the same order, or a fault "
     "made one diverge and every rank returned with the desync reported",
     bs_oracle_uniform_schedule},
    {"explained",
     "every error, abort and divergence traces back to a fault "
     "that fired",
     bs_oracle_explained},
    {NULL, NULL, NULL},
};

const bs_oracle *bs_oracle_list(void) {
  return table;
}

/* The invariants plus one for the expectation (the table's NULL row). */
size_t bs_oracle_max(void) {
  return sizeof table / sizeof table[0];
}

size_t bs_oracle_run_all(const bs_record *r, bs_expect_fn expect,
                         bs_oracle_result *out) {
  size_t n = 0;
  for (const bs_oracle *o = table; o->name; o++, n++) {
    memset(&out[n], 0, sizeof out[n]);
    snprintf(out[n].name, sizeof out[n].name, "%s", o->name);
    out[n].ok = o->fn(r, out[n].detail, sizeof out[n].detail);
  }
  if (expect) {
    memset(&out[n], 0, sizeof out[n]);
    snprintf(out[n].name, sizeof out[n].name, "expectation");
    out[n].ok = expect(r, out[n].detail, sizeof out[n].detail);
    n++;
  }
  return n;
}
