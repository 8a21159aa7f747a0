/* Building blocks for scenarios' own expectations (the `expect` oracle of
 * a scenario). Each reads only the run record and says why. */
#ifndef BS_EXPECT_H
#define BS_EXPECT_H

#include <stdbool.h>
#include <stddef.h>

#include "record/bs_record.h"

/* Every phase of every rank succeeded (and there was at least one cycle). */
bool bs_expect_all_ok(const bs_record *r, char *d, size_t n);

/* The first failed phase of rank k (NULL when none). */
const bs_event *bs_expect_first_failure(const bs_record *r, int k);
/* Rank k's `phase` of `cycle` (NULL when it never ran). */
const bs_event *bs_expect_find(const bs_record *r, int k, const char *phase,
                               int cycle);
/* Rank k's first successful `phase` after its first failure (NULL: none). */
const bs_event *bs_expect_after_failure(const bs_record *r, int k,
                                        const char *phase);

/* Every rank failed first in `phase` (NULL: wherever rank 0 did) with
 * status `st` (BS_OK: whatever rank 0 got); with tensor, every error names
 * the same non-empty tensor. */
bool bs_expect_failed_alike(const bs_record *r, const char *phase, bs_status st,
                            bool tensor, char *d, size_t n);

/* Every rank's first failure holds one error record: status, culprit
 * rank and message (docs/behavior.md §7.2: timeouts too). */
bool bs_expect_same_record(const bs_record *r, char *d, size_t n);

/* bs_expect_failed_alike, and nothing ran after it (a failed verification
 * or an agreed fatal error ends the job). */
bool bs_expect_failed_and_stopped(const bs_record *r, const char *phase,
                                  bs_status st, bool tensor, char *d, size_t n);

/* bs_expect_failed_and_stopped naming a tensor, and the error says `says`
 * (rank 0's; the agreement made them all alike); d quotes it. */
bool bs_expect_failed_saying(const bs_record *r, const char *phase,
                             bs_status st, const char *says, char *d, size_t n);

/* After its first failure, every rank got through a later successful
 * `phase` (recovery). */
bool bs_expect_recovered(const bs_record *r, const char *phase, char *d,
                         size_t n);

/* No rank recorded anything after its first failure (the run stopped). */
bool bs_expect_stopped(const bs_record *r, char *d, size_t n);

/* No failed phase lasted `ms` or longer beyond the longest success of the
 * same phase on its rank (both less their waits for a CPU: the simulator's,
 * bs_comm_cpu_wait_ms_since: for a turn, for a CPU, and off a CPU while
 * more ranks wanted to run than there are CPUs, waiting for peers queued
 * for one; a wait with every peer blocked, for a timeout or a dead rank,
 * stays the rank's own), that allowance at most timeout - ms: the most that
 * still fails any phase that waited out the collective watchdog's timeout (it
 * lasted timeout or more), whatever the backend's pace. */
bool bs_expect_fast_failures(const bs_record *r, double ms, double timeout,
                             char *d, size_t n);

/* Collectives one rank issued during one of its phases. */
typedef struct bs_coll_count {
  size_t all;
  size_t data; /* unlabelled ones: payload (bucket) gathers, not the
                * agreement or the tensor-set fingerprint */
} bs_coll_count;

/* The collectives of rank k's flight recorder created during e. False,
 * saying why, when the rank has no readable recorder. */
bool bs_expect_count_collectives(const bs_record *r, int k, const bs_event *e,
                                 bs_coll_count *out, char *d, size_t n);

/* In `phase` of `cycle`, every rank issued as many collectives, and as many
 * data ones, as rank 0; *out gets rank 0's counts. */
bool bs_expect_same_collectives(const bs_record *r, const char *phase,
                                int cycle, bs_coll_count *out, char *d,
                                size_t n);

/* Every named check of the record (bs_record_check) holds, and there is at
 * least one. */
bool bs_expect_checks_ok(const bs_record *r, char *d, size_t n);

/* The watchdog timeout the hang/desync report states (-1: no report). */
int bs_expect_report_timeout_ms(const bs_record *r);
/* The world's hang/desync report, or "(none)" for details. */
const char *bs_expect_report(const bs_record *r);

/* The report's line for rank k on its own ("rank 3: dead after #12: ..."),
 * without its indent; false when no line names exactly that rank alone. */
bool bs_expect_report_line(const bs_record *r, int k, char *line, size_t n);

/* The report's line for rank `dead` names it dead ("rank 3: dead after
 * #12"), or, when exited_ok, a rank that left its function ("exited
 * after #12"); d holds the line, or what is wrong. */
bool bs_expect_names_dead(const bs_record *r, int dead, bool exited_ok, char *d,
                          size_t n);

/* A hang or desync was contained (detect_ms is set) well within the
 * watchdog: detection and every failed phase took less than half the
 * timeout the report states, so nothing waited for it. */
bool bs_expect_contained_fast(const bs_record *r, char *d, size_t n);

/* Finds rank k's line in the report and judges it (d: the line, or why). */
typedef bool (*bs_report_line_check)(const bs_record *r, int k, char *d,
                                     size_t n);
/* Contained fast, and names() accepts rank k's report line; d then reads
 * "<head>, <how contained>; the report says '<line>'". NCCL processes
 * learn of each other's failures through the run's folder within
 * milliseconds, so one bound holds for every way of running. */
bool bs_expect_contained_naming(const bs_record *r, bs_report_line_check names,
                                int k, const char *head, char *d, size_t n);

#endif
