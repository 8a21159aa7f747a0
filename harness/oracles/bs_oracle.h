/* Oracles (docs/behavior.md §10): invariants computed only from the run record,
 * never from what the scenario expected. Each says ok and why, naming the
 * rank, cycle and phase where it broke. Faults never excuse a broken
 * invariant; only "explained" looks at which faults fired. */
#ifndef BS_ORACLE_H
#define BS_ORACLE_H

#include <stdbool.h>
#include <stddef.h>

#include "catalog/bs_scenario.h"
#include "record/bs_record.h"
#include "result/bs_result.h"

typedef bool (*bs_oracle_fn)(const bs_record *r, char *detail, size_t n);

typedef struct bs_oracle {
  const char *name; /* "agreement" */
  const char *what; /* one line for `backstop explain` */
  bs_oracle_fn fn;
} bs_oracle;

/* The invariants, NULL-name terminated, in the order reports list them. */
const bs_oracle *bs_oracle_list(void);

bool bs_oracle_liveness(const bs_record *r, char *detail, size_t n);
bool bs_oracle_agreement(const bs_record *r, char *detail, size_t n);
bool bs_oracle_pause_safety(const bs_record *r, char *detail, size_t n);
bool bs_oracle_bit_identity(const bs_record *r, char *detail, size_t n);
bool bs_oracle_memory_budget(const bs_record *r, char *detail, size_t n);
bool bs_oracle_no_paused_reads(const bs_record *r, char *detail, size_t n);
bool bs_oracle_uniform_schedule(const bs_record *r, char *detail, size_t n);
bool bs_oracle_explained(const bs_record *r, char *detail, size_t n);

/* The pinned host bytes the backuper may hold per rank. */
size_t bs_oracle_memory_budget_bytes(const bs_budget *b);

/* Every invariant, then the scenario's expectation when `expect` is given
 * (as oracle "expectation"). out holds at least bs_oracle_max() entries;
 * returns how many were written. */
size_t bs_oracle_max(void);
size_t bs_oracle_run_all(const bs_record *r, bs_expect_fn expect,
                         bs_oracle_result *out);

#endif
