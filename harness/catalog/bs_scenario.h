/* The scenario API: one small C file per scenario, registered from a
 * constructor, so a user adds one without touching the runner:
 *
 *   #include "oracles/bs_expect.h"
 *   #include "catalog/bs_scenario.h"
 *   static bool expect(const bs_record *r, char *detail, size_t n) {
 *     return bs_expect_failed_alike(r, "update_weights", BS_ERR_ENGINE_DEAD,
 *                                   false, detail, n);
 *   }
 *   BS_SCENARIO(engine_death) {
 *       .name = "engine-death", .labels = "@smoke @fault @mutant-target",
 *       .summary = "the engine dies mid-sync; every rank fails alike",
 *       .details = "what it does and why its faults fire where they do",
 *       .sets = BS_LIST("rematerialize=1", "update_buffer_bytes=2048"),
 *       .faults = BS_LIST("name=engine/send,rank={last},cycle=1,nth=2"),
 *       .expect = expect, .expects = "every rank fails update_weights ...",
 *   };
 *
 * A descriptor states only what differs from the defaults below (model,
 * cycles, ranks, minimum ranks and cycles); registration fills in the
 * rest.
 * A scenario runs the standard lifecycle (bs_driver.h) unless it brings its
 * own `drive` function; the oracles (bs_oracle.h) then read the run record,
 * and `expect` is one more oracle of that scenario, as is each check a
 * driver or `inspect` records. */
#ifndef BS_SCENARIO_H
#define BS_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_err.h"
#include "catalog/bs_run.h"

typedef struct bs_record bs_record;

/* The scenario's own oracle: reads the record, says why in detail. */
typedef bool (*bs_expect_fn)(const bs_record *rec, char *detail, size_t n);
/* A custom driver for scenarios that are not the standard lifecycle. */
typedef bs_status (*bs_drive_fn)(const bs_run *cfg, bs_record *rec);
/* Runs after the driver, with the run's configuration: records what the
 * expectation needs that the core does not (what the run's model says of a
 * tensor, say) as checks (bs_record_check), which the reports list. */
typedef bs_status (*bs_inspect_fn)(const bs_run *cfg, bs_record *rec);

struct bs_scenario {
  const char *name;    /* what `backstop run NAME` takes */
  const char *labels;  /* space-separated: "@smoke @fault @mutant-target" */
  const char *summary; /* one line for `backstop list` */
  const char *details; /* what it does, for `backstop explain` */
  const char *model;   /* preset or model file; NULL: BS_SCENARIO_MODEL */
  int cycles;          /* 0: BS_SCENARIO_CYCLES; BS_NO_CYCLES: none */
  int default_ranks;   /* 0: BS_SCENARIO_RANKS */
  int min_ranks;       /* 0: BS_SCENARIO_MIN_RANKS */
  /* The fewest cycles its expectation can judge; 0: the fewest its own
   * faults need to fire (one pinned to cycle C: C + 1). Say more where the
   * expectation looks past the fault (a recovery in the next cycle). */
  int min_cycles;
  const char *const *sets;    /* NULL-terminated KEY=VALUE */
  const char *const *faults;  /* NULL-terminated specs; {last} = size-1 */
  const char *const *targets; /* mutants it is meant to catch (docs) */
  bs_expect_fn expect;        /* NULL: the invariants only */
  const char *expects;        /* what expect checks, in words */
  bs_drive_fn drive;          /* NULL: bs_driver_lifecycle */
  bs_inspect_fn inspect;      /* NULL: none; skipped like expect */
  int timeout_ms;             /* watchdog unless --timeout-ms; 0: the default */
};

/* What a descriptor that leaves a field out (0 or NULL) gets. */
#define BS_SCENARIO_MODEL "tiny"
#define BS_SCENARIO_CYCLES 3
#define BS_SCENARIO_RANKS 4
#define BS_SCENARIO_MIN_RANKS 1
/* .cycles of a scenario that runs no training cycle (0 is the default). */
#define BS_NO_CYCLES (-1)

#define BS_LIST(...)                                                           \
  (const char *const[]) {                                                      \
    __VA_ARGS__, NULL                                                          \
  }

/* Defines and registers a scenario; the braces that follow initialise it. */
#define BS_SCENARIO(id)                                                        \
  static const bs_scenario bs_scenario_##id;                                   \
  __attribute__((constructor)) static void bs_scenario_reg_##id(void) {        \
    bs_scenario_register(&bs_scenario_##id);                                   \
  }                                                                            \
  static const bs_scenario bs_scenario_##id =

#define BS_SCENARIO_MAX 256
/* Faults of a scenario's own at most (.faults). */
#define BS_SCENARIO_FAULTS_MAX 4

/* Adds a copy of s, its defaults filled in, to the catalogue (kept sorted
 * by name; a duplicate name or a full catalogue is reported on stderr and
 * ignored). What the catalogue hands out points to that copy. */
void bs_scenario_register(const bs_scenario *s);
size_t bs_scenario_count(void);
const bs_scenario *bs_scenario_at(size_t i);
const bs_scenario *bs_scenario_find(const char *name);
/* " (did you mean 'NAME'?)" for a selector that matches nothing: the
 * nearest scenario name, or label for an @label; "" when none is near. */
const char *bs_scenario_near(const char *sel);
bool bs_scenario_has_label(const bs_scenario *s, const char *label);

/* Resolves selectors (a name, an @label, or an fnmatch glob over names) to
 * scenarios in catalogue order, each once. BS_ERR_INVALID naming the first
 * selector that matches nothing. out holds BS_SCENARIO_MAX entries. */
bs_status bs_scenario_select(const char *const *sel, size_t nsel,
                             const bs_scenario **out, size_t *nout);

/* Why this build cannot run s (NULL: it can): a scenario that arms faults
 * needs the fault points compiled in. */
const char *bs_scenario_skip_reason(const bs_scenario *s);

/* A scenario fault spec with {last} replaced by ranks - 1. */
void bs_scenario_fault_expand(const char *spec, int ranks, char *out, size_t n);

#endif
