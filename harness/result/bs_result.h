/* The outcome of one scenario run: what the child hands its parent through
 * the pipe (packed: bs_result_pack), and what every report (table, JSON,
 * JUnit) is made from; the JSON run object of docs/cli.md is written once,
 * for the user (bs_result_json). */
#ifndef BS_RESULT_H
#define BS_RESULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bs_buf.h"
#include "bs_fault_control.h"
#include "catalog/bs_run.h"

/* vacuous: every invariant held but an armed fault never fired, so the run
 * proves nothing about it (docs/cli.md "Fault spec"); a failed oracle is a fail
 * whatever fired. */
typedef enum bs_verdict {
  BS_PASS = 0,
  BS_FAIL,
  BS_HANG,
  BS_CRASH,
  BS_VACUOUS,
  BS_INTERRUPTED, /* a signal stopped the command before the run ended */
  /* sweep and fuzz: a failure the configuration allows by design (the
   * weights corrupted with the restore check off: bs_known), shown apart
   * and not failing the exit status unless --strict */
  BS_KNOWN,
  BS_VERDICT_COUNT
} bs_verdict;
const char *bs_result_verdict_name(bs_verdict v);

#define BS_DETAIL_MAX 512

/* What one oracle said of a run. */
typedef struct bs_oracle_result {
  char name[64]; /* an invariant, "expectation", or a check's name */
  bool ok;
  char detail[BS_DETAIL_MAX];
} bs_oracle_result;

/* Firings listed per armed fault (fired_total counts every one). */
#define BS_ARMED_FIRED_MAX 16

/* One armed fault of the run and what became of it. */
typedef struct bs_armed {
  char spec[256];        /* the spec, or the libfiu command that armed it */
  bool external;         /* armed through libfiu's own tools */
  bs_fault_spec filters; /* the spec's (external: rank and cycle -1) */
  bs_fault_fired fired[BS_ARMED_FIRED_MAX]; /* by cycle, rank, point, nth */
  size_t nfired, fired_total;
  /* The most reaches of a point it names on one rank in one cycle that its
   * filters allow (what nth is compared with), and where (-1: nowhere). */
  long reached;
  int reached_rank, reached_cycle;
} bs_armed;

typedef struct bs_rank_outcome {
  int rank;
  char status[32];
  char phase[32];
  char message[400];
  char where[64]; /* file:line of the BS_FAIL behind it ("" when none) */
} bs_rank_outcome;

typedef struct bs_result {
  char scenario[64];
  int ranks;
  char backend[8], device[8];
  uint64_t seed;
  char schedule[32]; /* "random", "pct:3", "threads" (bs_sched_spec.h) */
  uint64_t schedule_seed;
  char model[256];
  double scale;
  int cycles;
  char **faults; /* effective: the scenario's, then the user's */
  size_t nfaults;
  bs_armed *armed; /* those, then any armed from outside */
  size_t narmed;
  /* Every reach count of the run: only for a counting pass (bs_run's
   * count_reaches), the sweep's map of the fault space. */
  bs_fault_reach *reaches;
  size_t nreaches;
  char **mutants;
  size_t nmutants;
  bs_verdict verdict;
  double duration_ms;
  double detect_ms; /* < 0: null */
  bs_oracle_result *oracles;
  size_t noracles;
  bs_rank_outcome *outcomes;
  size_t noutcomes;
  size_t pinned_max, resident_max;
  char **flight; /* artifact paths, one per rank */
  size_t nflight;
  char *trace;  /* artifact path, NULL when none */
  char *report; /* artifact path of the hang/desync report, NULL: none */
  char *note;   /* hang/crash/setup: what happened, NULL when nothing */
  char *repro;  /* the one-line command that reruns it */
} bs_result;

/* The identity fields (scenario, ranks, ..., effective faults, repro) from
 * a run; verdict pass, nothing else yet. */
bs_status bs_result_from_run(const bs_run *run, bs_result *out);
void bs_result_free(bs_result *r);

bs_status bs_result_set_note(bs_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Adds "; <what>" to the note (or sets it to what): one more thing that
 * happened, the first kept. */
bs_status bs_result_add_note(bs_result *r, const char *what);
bs_status bs_result_add_oracle(bs_result *r, const bs_oracle_result *o);
bs_status bs_result_add_outcome(bs_result *r, const bs_rank_outcome *o);
bs_status bs_result_add_flight(bs_result *r, const char *path);
bs_status bs_result_add_armed(bs_result *r, const bs_armed *a);
/* Names of failed oracles, comma-separated ("" when none). */
void bs_result_failed_oracles(const bs_result *r, char *out, size_t n);

/* The run object of docs/cli.md. indent: spaces before each line (0: one
 * line). */
void bs_result_json(bs_buf *b, const bs_result *r, int indent);
/* The result as bytes of this build (a header that checks the layout,
 * then each field), what a run's child hands its parent and process 0
 * its peers; bs_result_pack_read reads them back whole or says
 * (BS_ERR_INVALID, naming what) what is wrong with them. */
void bs_result_pack(bs_buf *b, const bs_result *r);
bs_status bs_result_pack_read(const char *data, size_t n, bs_result *out);

/* "backstop run NAME --ranks N --seed S [options that differ from the
 * defaults]" for cfg. */
void bs_result_repro(const bs_run *cfg, bs_buf *b);

#endif
