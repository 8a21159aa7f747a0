/* A run record crossing processes: in a process-per-rank run each process
 * records only its own ranks, writes that part to a file, and the lead
 * process merges every part into one record before the oracles read it.
 * The format is this build's memory layout behind a header that checks it
 * (every process of a job runs the same binary); nothing else reads it. */
#ifndef BS_RECORD_PART_H
#define BS_RECORD_PART_H

#include "bs_buf.h"
#include "record/bs_record.h"

/* Appends the part of r that the ranks first .. first+n-1 recorded, with
 * what this process saw (faults fired, reach counts, paused reads, its world
 * report, detect_ms, checks) to b. */
void bs_record_part_write(const bs_record *r, int first, int n, bs_buf *b);

/* Merges a part (bytes, from what) into r: its ranks replace r's, faults,
 * reads and checks are appended, the world report is added under a line
 * naming the part's ranks, detect_ms is the largest (reach counts
 * are appended unsorted: bs_fault_count_sort orders them). BS_ERR_INVALID
 * naming what and the first thing wrong with the bytes (r is then unchanged in
 * its ranks). */
bs_status bs_record_part_merge(bs_record *r, const char *data, size_t n,
                               const char *what);

/* Adds a process's hang report to r's under a line naming its ranks. */
bs_status bs_record_part_add_report(bs_record *r, int first, int n,
                                    const char *report);

#endif
