/* A run object of docs/cli.md's JSON report (bs_result_json): written once,
 * for the user; nothing reads it back (a child hands its result to the
 * parent packed, bs_result_pack). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bs_json_write.h"
#include "result/bs_result.h"

static void key(bs_buf *b, int indent, const char *k, bool first) {
  bs_buf_printf(b, "%s%s%*s\"%s\": ", first ? "" : ",",
                indent ? "\n" : (first ? "" : " "), indent ? indent + 2 : 0, "",
                k);
}

/* Before a list's i-th item: its comma and, indented, a line of its own. */
static void item(bs_buf *b, size_t i, int indent) {
  bs_buf_printf(b, "%s%s%*s", i ? "," : "", indent ? "\n" : "",
                indent ? indent + 4 : 0, "");
}

/* A list of n items closed: on a line of its own when indented. */
static void close_list(bs_buf *b, size_t n, int indent) {
  bs_buf_printf(b, "%s%*s]", indent && n ? "\n" : "",
                indent && n ? indent + 2 : 0, "");
}

static void oracles(bs_buf *b, const bs_result *r, int indent) {
  bs_buf_printf(b, "[");
  for (size_t i = 0; i < r->noracles; i++) {
    const bs_oracle_result *o = &r->oracles[i];
    item(b, i, indent);
    bs_json_write_field_str(b, "{", "name", o->name);
    bs_buf_printf(b, ", \"ok\": %s", o->ok ? "true" : "false");
    bs_json_write_field_str(b, ", ", "detail", o->detail);
    bs_buf_printf(b, "}");
  }
  close_list(b, r->noracles, indent);
}

static void outcomes(bs_buf *b, const bs_result *r, int indent) {
  bs_buf_printf(b, "[");
  for (size_t i = 0; i < r->noutcomes; i++) {
    const bs_rank_outcome *o = &r->outcomes[i];
    item(b, i, indent);
    bs_buf_printf(b, "{\"rank\": %d", o->rank);
    bs_json_write_field_str(b, ", ", "status", o->status);
    bs_json_write_field_str(b, ", ", "phase", o->phase);
    bs_json_write_field_str(b, ", ", "message", o->message);
    bs_json_write_field_str(b, ", ", "where", o->where);
    bs_buf_printf(b, "}");
  }
  close_list(b, r->noutcomes, indent);
}

/* {"point": P, "rank": R, "cycle": C, "<what>": N}: a firing or a reach. */
static void point_entry(bs_buf *b, bool first, bs_fault_point_id point,
                        int rank, int cycle, const char *what, long n) {
  bs_buf_printf(b, "%s{\"point\": ", first ? "" : ", ");
  bs_json_write_str(b, bs_fault_catalogue_get(point)->name);
  bs_buf_printf(b, ", \"rank\": %d, \"cycle\": %d, \"%s\": %ld}", rank, cycle,
                what, n);
}

static void firings(bs_buf *b, const bs_armed *a) {
  bs_buf_printf(b, "[");
  for (size_t i = 0; i < a->nfired; i++)
    point_entry(b, i == 0, a->fired[i].point, a->fired[i].rank,
                a->fired[i].cycle, "nth", a->fired[i].nth);
  bs_buf_printf(b, "]");
}

static void armed(bs_buf *b, const bs_result *r, int indent) {
  bs_buf_printf(b, "[");
  for (size_t i = 0; i < r->narmed; i++) {
    const bs_armed *a = &r->armed[i];
    item(b, i, indent);
    bs_json_write_field_str(b, "{", "spec", a->spec);
    bs_buf_printf(
        b, ", \"external\": %s, \"fired\": ", a->external ? "true" : "false");
    firings(b, a);
    bs_buf_printf(b, ", \"fired_total\": %zu, \"reached\": %ld}",
                  a->fired_total, a->reached);
  }
  close_list(b, r->narmed, indent);
}

static void reaches(bs_buf *b, const bs_result *r) {
  bs_buf_printf(b, "[");
  for (size_t i = 0; i < r->nreaches; i++)
    point_entry(b, i == 0, r->reaches[i].point, r->reaches[i].rank,
                r->reaches[i].cycle, "count", r->reaches[i].count);
  bs_buf_printf(b, "]");
}

void bs_result_json(bs_buf *b, const bs_result *r, int indent) {
  bs_buf_printf(b, "%*s{", indent, "");
  key(b, indent, "scenario", true);
  bs_json_write_str(b, r->scenario);
  key(b, indent, "ranks", false);
  bs_buf_printf(b, "%d", r->ranks);
  key(b, indent, "backend", false);
  bs_json_write_str(b, r->backend);
  key(b, indent, "device", false);
  bs_json_write_str(b, r->device);
  key(b, indent, "seed", false);
  bs_buf_printf(b, "%llu", (unsigned long long)r->seed);
  key(b, indent, "schedule", false);
  bs_json_write_str(b, r->schedule);
  /* Real threads take no seed: their interleaving is the OS's. */
  key(b, indent, "schedule_seed", false);
  if (strcmp(r->schedule, "threads") != 0)
    bs_buf_printf(b, "%llu", (unsigned long long)r->schedule_seed);
  else
    bs_buf_printf(b, "null");
  key(b, indent, "model", false);
  bs_json_write_str(b, r->model);
  key(b, indent, "scale", false);
  bs_json_write_num(b, r->scale);
  key(b, indent, "cycles", false);
  bs_buf_printf(b, "%d", r->cycles);
  key(b, indent, "faults", false);
  bs_json_write_strs(b, (const char *const *)r->faults, r->nfaults);
  key(b, indent, "armed", false);
  armed(b, r, indent);
  if (r->nreaches) {
    key(b, indent, "reaches", false);
    reaches(b, r);
  }
  key(b, indent, "mutants", false);
  bs_json_write_strs(b, (const char *const *)r->mutants, r->nmutants);
  key(b, indent, "verdict", false);
  bs_json_write_str(b, bs_result_verdict_name(r->verdict));
  key(b, indent, "duration_ms", false);
  bs_json_write_num(b, round(r->duration_ms * 10) / 10);
  key(b, indent, "detect_ms", false);
  bs_json_write_num(b, r->detect_ms < 0 ? NAN : r->detect_ms);
  key(b, indent, "oracles", false);
  oracles(b, r, indent);
  key(b, indent, "rank_outcomes", false);
  outcomes(b, r, indent);
  key(b, indent, "memory", false);
  bs_buf_printf(b,
                "{\"pinned_host_bytes_max\": %zu, "
                "\"device_resident_bytes_max\": %zu}",
                r->pinned_max, r->resident_max);
  key(b, indent, "artifacts", false);
  bs_buf_printf(b, "{\"flight_recorder\": ");
  bs_json_write_strs(b, (const char *const *)r->flight, r->nflight);
  bs_json_write_field_str(b, ", ", "trace", r->trace);
  bs_json_write_field_str(b, ", ", "report", r->report);
  bs_buf_printf(b, "}");
  key(b, indent, "note", false);
  bs_json_write_str(b, r->note);
  key(b, indent, "repro", false);
  bs_json_write_str(b, r->repro);
  bs_buf_printf(b, "%s%*s}", indent ? "\n" : "", indent, "");
}
