#include "verdict/bs_result.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_json.h"
#include "bs_json_write.h"
#include "bs_vec.h"
#include "catalog/bs_scenario.h"

const char *bs_result_verdict_name(bs_verdict v) {
  static const char *const names[] = {"pass",    "fail",        "hang", "crash",
                                      "vacuous", "interrupted", "known"};
  return (unsigned)v < BS_VERDICT_COUNT ? names[v] : "unknown";
}

static void free_strs(char **s, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(s[i]);
  free(s);
}

void bs_result_free(bs_result *r) {
  free_strs(r->faults, r->nfaults);
  free_strs(r->mutants, r->nmutants);
  free_strs(r->flight, r->nflight);
  free(r->armed);
  free(r->reaches);
  free(r->oracles);
  free(r->outcomes);
  free(r->trace);
  free(r->report);
  free(r->note);
  free(r->repro);
  memset(r, 0, sizeof *r);
}

/* Appends one item to an array sized to its count (results are copied
 * whole: no capacity of their own). */
static bs_status push(void *arrp, size_t *n, size_t size, const void *item) {
  return bs_vec_push(arrp, n, NULL, item, size, "result");
}

static bs_status push_str(char ***arr, size_t *n, const char *s) {
  char *dup = strdup(s);
  if (!dup)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "result: out of memory");
  bs_status st = push(arr, n, sizeof dup, &dup);
  if (st != BS_OK)
    free(dup);
  return st;
}

bs_status bs_result_add_oracle(bs_result *r, const bs_oracle_result *o) {
  return push(&r->oracles, &r->noracles, sizeof *o, o);
}

bs_status bs_result_add_outcome(bs_result *r, const bs_rank_outcome *o) {
  return push(&r->outcomes, &r->noutcomes, sizeof *o, o);
}

bs_status bs_result_add_armed(bs_result *r, const bs_armed *a) {
  return push(&r->armed, &r->narmed, sizeof *a, a);
}

bs_status bs_result_add_flight(bs_result *r, const char *path) {
  return push_str(&r->flight, &r->nflight, path);
}

bs_status bs_result_set_note(bs_result *r, const char *fmt, ...) {
  char *s = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0)
    return bs_err_fail(BS_ERR_NOMEM, NULL, "result note: out of memory");
  free(r->note);
  r->note = s;
  return BS_OK;
}

bs_status bs_result_add_note(bs_result *r, const char *what) {
  char *old = r->note;
  r->note = NULL;
  bs_status st = old ? bs_result_set_note(r, "%s; %s", old, what)
                     : bs_result_set_note(r, "%s", what);
  free(old);
  return st;
}

void bs_result_failed_oracles(const bs_result *r, char *out, size_t n) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < r->noracles && len < n; i++)
    if (!r->oracles[i].ok)
      len += (size_t)snprintf(out + len, n - len, "%s%s", len ? ", " : "",
                              r->oracles[i].name);
}

bs_status bs_result_from_cfg(const bs_run_cfg *cfg, bs_result *out) {
  bs_status st = BS_OK;
  memset(out, 0, sizeof *out);
  snprintf(out->scenario, sizeof out->scenario, "%s", cfg->scn->name);
  out->ranks = cfg->ranks;
  snprintf(out->backend, sizeof out->backend, "%s", cfg->backend);
  snprintf(out->device, sizeof out->device, "%s", cfg->device);
  out->seed = cfg->seed;
  snprintf(out->model, sizeof out->model, "%s", cfg->model);
  out->scale = cfg->scale;
  out->cycles = cfg->cycles;
  out->detect_ms = -1;
  for (const char *const *f = cfg->scn->faults; f && *f; f++) {
    char spec[256];
    bs_scenario_fault_expand(*f, cfg->ranks, spec, sizeof spec);
    BS_CHECK(push_str(&out->faults, &out->nfaults, spec));
  }
  for (size_t i = 0; i < cfg->nfaults; i++)
    BS_CHECK(push_str(&out->faults, &out->nfaults, cfg->faults[i]));
  for (size_t i = 0; i < cfg->nmutants; i++)
    BS_CHECK(push_str(&out->mutants, &out->nmutants, cfg->mutants[i]));
  bs_buf b = {0};
  bs_result_repro(cfg, &b);
  if (!(out->repro = bs_buf_take(&b)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "result: out of memory");
out:
  if (st != BS_OK)
    bs_result_free(out);
  return st;
}

/* ---- repro ---- */

static void shell_word(bs_buf *b, const char *s) {
  bool plain = *s != '\0';
  for (const char *p = s; *p; p++)
    plain = plain && (isalnum((unsigned char)*p) || strchr("_@%+=:,./-*", *p));
  bs_buf_append(b, " ", 1);
  if (plain) {
    bs_buf_printf(b, "%s", s);
    return;
  }
  bs_buf_append(b, "'", 1);
  for (const char *p = s; *p; p++)
    if (*p == '\'')
      bs_buf_printf(b, "'\\''");
    else
      bs_buf_append(b, p, 1);
  bs_buf_append(b, "'", 1);
}

static void opt(bs_buf *b, const char *name, const char *value) {
  bs_buf_printf(b, " %s", name);
  shell_word(b, value);
}

/* The user's folder: the run's is <it>/<job id> (bs_opts.h). */
static void rendezvous(bs_buf *b, const char *job_dir) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", job_dir);
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = '\0';
  opt(b, "--rendezvous", dir);
}

/* The shortest text of v that reads back as v (num: 32 bytes at least). */
static const char *shortest(double v, char *num) {
  for (int digits = 6; digits <= 17; digits++) {
    snprintf(num, 32, "%.*g", digits, v);
    if (strtod(num, NULL) == v)
      break;
  }
  return num;
}

void bs_result_repro(const bs_run_cfg *cfg, bs_buf *b) {
  const bs_scenario *s = cfg->scn;
  char num[64];
  if (cfg->nprocs > 1 && !cfg->spawned)
    bs_buf_printf(b, "mpirun -np %d ", cfg->nprocs);
  bs_buf_printf(b, "backstop run");
  shell_word(b, s->name);
  bs_buf_printf(b, " --ranks %d --seed %llu", cfg->ranks,
                (unsigned long long)cfg->seed);
  if (strcmp(cfg->backend, "sim") != 0)
    opt(b, "--backend", cfg->backend);
  if (strcmp(cfg->device, strcmp(cfg->backend, "sim") ? "cuda" : "host"))
    opt(b, "--device", cfg->device);
  if (!s->model || strcmp(cfg->model, s->model) != 0)
    opt(b, "--model", cfg->model);
  if (cfg->scale != 1.0)
    opt(b, "--scale", shortest(cfg->scale, num));
  if (cfg->cycles != s->cycles)
    bs_buf_printf(b, " --cycles %d", cfg->cycles);
  if (cfg->timeout_ms > 0 && cfg->timeout_ms != s->timeout_ms)
    bs_buf_printf(b, " --timeout-ms %d", cfg->timeout_ms);
  /* A deadline decides a hang (and whether a slow watchdog got its turn). */
  if (cfg->deadline_s > 0 && !cfg->deadline_scaled &&
      cfg->deadline_s != BS_RUN_DEADLINE_S)
    bs_buf_printf(b, " --deadline-s %s", shortest(cfg->deadline_s, num));
  for (size_t i = 0; i < cfg->nsets; i++)
    opt(b, "--set", cfg->sets[i]);
  for (size_t i = 0; i < cfg->nfaults; i++)
    opt(b, "--fault", cfg->faults[i]);
  for (size_t i = 0; i < cfg->nmutants; i++)
    opt(b, "--mutant", cfg->mutants[i]);
  if (cfg->spawned || cfg->spawn) /* the spawned processes', or the parent's */
    bs_buf_printf(b, " --spawn");
  else if (cfg->rendezvous)
    rendezvous(b, cfg->rendezvous);
}

/* ---- JSON ---- */

static void key(bs_buf *b, int indent, const char *k, bool first) {
  bs_buf_printf(b, "%s%s%*s\"%s\": ", first ? "" : ",",
                indent ? "\n" : (first ? "" : " "), indent ? indent + 2 : 0, "",
                k);
}

static void oracles(bs_buf *b, const bs_result *r, int indent) {
  bs_buf_printf(b, "[");
  for (size_t i = 0; i < r->noracles; i++) {
    const bs_oracle_result *o = &r->oracles[i];
    bs_buf_printf(b, "%s%s%*s{\"name\": ", i ? "," : "", indent ? "\n" : "",
                  indent ? indent + 4 : 0, "");
    bs_json_write_str(b, o->name);
    bs_buf_printf(b, ", \"ok\": %s, \"detail\": ", o->ok ? "true" : "false");
    bs_json_write_str(b, o->detail);
    bs_buf_printf(b, "}");
  }
  bs_buf_printf(b, "%s%*s]", indent && r->noracles ? "\n" : "",
                indent && r->noracles ? indent + 2 : 0, "");
}

static void outcomes(bs_buf *b, const bs_result *r, int indent) {
  bs_buf_printf(b, "[");
  for (size_t i = 0; i < r->noutcomes; i++) {
    const bs_rank_outcome *o = &r->outcomes[i];
    bs_buf_printf(b, "%s%s%*s{\"rank\": %d, \"status\": ", i ? "," : "",
                  indent ? "\n" : "", indent ? indent + 4 : 0, "", o->rank);
    bs_json_write_str(b, o->status);
    bs_json_write_field_str(b, ", ", "phase", o->phase);
    bs_json_write_field_str(b, ", ", "message", o->message);
    bs_json_write_field_str(b, ", ", "where", o->where);
    bs_buf_printf(b, "}");
  }
  bs_buf_printf(b, "%s%*s]", indent && r->noutcomes ? "\n" : "",
                indent && r->noutcomes ? indent + 2 : 0, "");
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
    bs_buf_printf(b, "%s%s%*s{\"spec\": ", i ? "," : "", indent ? "\n" : "",
                  indent ? indent + 4 : 0, "");
    bs_json_write_str(b, a->spec);
    bs_buf_printf(
        b, ", \"external\": %s, \"fired\": ", a->external ? "true" : "false");
    firings(b, a);
    bs_buf_printf(b, ", \"fired_total\": %zu, \"reached\": %ld}",
                  a->fired_total, a->reached);
  }
  bs_buf_printf(b, "%s%*s]", indent && r->narmed ? "\n" : "",
                indent && r->narmed ? indent + 2 : 0, "");
}

static void reaches(bs_buf *b, const bs_result *r) {
  bs_buf_printf(b, "[");
  for (size_t i = 0; i < r->nreaches; i++)
    point_entry(b, i == 0, r->reaches[i].point, r->reaches[i].rank,
                r->reaches[i].cycle, "count", r->reaches[i].count);
  bs_buf_printf(b, "]");
}

void bs_result_write_json(bs_buf *b, const bs_result *r, int indent) {
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

/* ---- reading it back ---- */

static bs_status want(const bs_json *j, const char *k, bs_jtype t,
                      const bs_json **out) {
  const bs_json *v = bs_json_get(j, k);
  if (!v || v->type != t)
    return bs_err_fail(BS_ERR_INVALID, NULL,
                       "run object: '%s' missing or not "
                       "a%s %s",
                       k, t == BS_JARR || t == BS_JOBJ ? "n" : "",
                       t == BS_JSTR   ? "string"
                       : t == BS_JNUM ? "number"
                       : t == BS_JARR ? "array"
                                      : "object");
  *out = v;
  return BS_OK;
}

static bs_status copy_str(const bs_json *j, const char *k, char *dst,
                          size_t n) {
  const bs_json *v = NULL;
  bs_status st = want(j, k, BS_JSTR, &v);
  if (st == BS_OK)
    snprintf(dst, n, "%s", v->str);
  return st;
}

/* A point's name back to its catalogue id. */
static bs_status read_point(const bs_json *j, bs_fault_point_id *out) {
  char name[BS_FAULT_NAME_MAX];
  bs_status st = copy_str(j, "point", name, sizeof name);
  const bs_fault_point *p = st == BS_OK ? bs_fault_catalogue_find(name) : NULL;
  if (st == BS_OK && !p)
    st = bs_err_fail(BS_ERR_INVALID, NULL,
                     "run object: 'point' %s is not a fault point", name);
  if (p)
    *out = p->id;
  return st;
}

static bs_status read_strs(const bs_json *j, const char *k, char ***arr,
                           size_t *n) {
  bs_status st = BS_OK;
  const bs_json *v = NULL;
  BS_CHECK(want(j, k, BS_JARR, &v));
  for (size_t i = 0; i < v->n; i++) {
    if (v->items[i].type != BS_JSTR)
      BS_FAIL(BS_ERR_INVALID, NULL, "run object: '%s' holds a non-string", k);
    BS_CHECK(push_str(arr, n, v->items[i].str));
  }
out:
  return st;
}

static bs_status opt_str(const bs_json *j, const char *k, char **dst) {
  const char *s = bs_json_get_str(j, k, NULL);
  if (!s)
    return BS_OK;
  *dst = strdup(s);
  return *dst ? BS_OK
              : bs_err_fail(BS_ERR_NOMEM, NULL, "result: out of memory");
}

static bs_status read_oracles(const bs_json *j, bs_result *r) {
  bs_status st = BS_OK;
  const bs_json *v = NULL;
  BS_CHECK(want(j, "oracles", BS_JARR, &v));
  for (size_t i = 0; i < v->n; i++) {
    bs_oracle_result o = {.ok = bs_json_get_bool(&v->items[i], "ok", false)};
    BS_CHECK(copy_str(&v->items[i], "name", o.name, sizeof o.name));
    BS_CHECK(copy_str(&v->items[i], "detail", o.detail, sizeof o.detail));
    BS_CHECK(bs_result_add_oracle(r, &o));
  }
out:
  return st;
}

static bs_status read_outcomes(const bs_json *j, bs_result *r) {
  bs_status st = BS_OK;
  const bs_json *v = NULL;
  BS_CHECK(want(j, "rank_outcomes", BS_JARR, &v));
  for (size_t i = 0; i < v->n; i++) {
    const bs_json *x = &v->items[i];
    bs_rank_outcome o = {.rank = (int)bs_json_get_num(x, "rank", -1)};
    BS_CHECK(copy_str(x, "status", o.status, sizeof o.status));
    BS_CHECK(copy_str(x, "phase", o.phase, sizeof o.phase));
    BS_CHECK(copy_str(x, "message", o.message, sizeof o.message));
    BS_CHECK(copy_str(x, "where", o.where, sizeof o.where));
    BS_CHECK(bs_result_add_outcome(r, &o));
  }
out:
  return st;
}

static bs_status read_firings(const bs_json *j, bs_armed *a) {
  bs_status st = BS_OK;
  const bs_json *v = NULL;
  BS_CHECK(want(j, "fired", BS_JARR, &v));
  for (size_t i = 0; i < v->n && a->nfired < BS_ARMED_FIRED_MAX; i++) {
    const bs_json *x = &v->items[i];
    bs_fault_fired *f = &a->fired[a->nfired++];
    *f = (bs_fault_fired){.rank = (int)bs_json_get_num(x, "rank", -1),
                          .cycle = (int)bs_json_get_num(x, "cycle", -1),
                          .nth = (long)bs_json_get_num(x, "nth", 0),
                          .spec = -1};
    BS_CHECK(read_point(x, &f->point));
  }
out:
  return st;
}

static bs_status read_armed(const bs_json *j, bs_result *r) {
  bs_status st = BS_OK;
  const bs_json *v = NULL;
  BS_CHECK(want(j, "armed", BS_JARR, &v));
  for (size_t i = 0; i < v->n; i++) {
    const bs_json *x = &v->items[i];
    bs_armed a = {
        .external = bs_json_get_bool(x, "external", false),
        .fired_total = (size_t)bs_json_get_num(x, "fired_total", 0),
        .reached = (long)bs_json_get_num(x, "reached", 0),
        .reached_rank = -1,
        .reached_cycle = -1,
    };
    BS_CHECK(copy_str(x, "spec", a.spec, sizeof a.spec));
    BS_CHECK(read_firings(x, &a));
    BS_CHECK(bs_result_add_armed(r, &a));
  }
out:
  return st;
}

/* Only a counting pass has them. */
static bs_status read_reaches(const bs_json *j, bs_result *r) {
  bs_status st = BS_OK;
  const bs_json *v = bs_json_get(j, "reaches");
  if (!v)
    return BS_OK;
  if (v->type != BS_JARR)
    BS_FAIL(BS_ERR_INVALID, NULL, "run object: 'reaches' is not an array");
  if (v->n && !(r->reaches = calloc(v->n, sizeof *r->reaches)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "result: %zu reach counts", v->n);
  for (size_t i = 0; i < v->n; i++) {
    const bs_json *x = &v->items[i];
    bs_fault_reach *e = &r->reaches[r->nreaches++];
    e->rank = (int)bs_json_get_num(x, "rank", -1);
    e->cycle = (int)bs_json_get_num(x, "cycle", -1);
    e->count = (long)bs_json_get_num(x, "count", 0);
    BS_CHECK(read_point(x, &e->point));
  }
out:
  return st;
}

static bs_status read_verdict(const bs_json *j, bs_result *r) {
  char v[16];
  bs_status st = copy_str(j, "verdict", v, sizeof v);
  for (int i = BS_PASS; st == BS_OK && i < BS_VERDICT_COUNT; i++)
    if (strcmp(v, bs_result_verdict_name((bs_verdict)i)) == 0) {
      r->verdict = (bs_verdict)i;
      return BS_OK;
    }
  return st != BS_OK ? st
                     : bs_err_fail(BS_ERR_INVALID, NULL,
                                   "run object: unknown "
                                   "verdict '%s'",
                                   v);
}

static bs_status read_memory(const bs_json *j, bs_result *r) {
  bs_status st = BS_OK;
  const bs_json *m = NULL, *a = NULL;
  BS_CHECK(want(j, "memory", BS_JOBJ, &m));
  r->pinned_max = (size_t)bs_json_get_num(m, "pinned_host_bytes_max", 0);
  r->resident_max = (size_t)bs_json_get_num(m, "device_resident_bytes_max", 0);
  BS_CHECK(want(j, "artifacts", BS_JOBJ, &a));
  BS_CHECK(read_strs(a, "flight_recorder", &r->flight, &r->nflight));
  BS_CHECK(opt_str(a, "trace", &r->trace));
  BS_CHECK(opt_str(a, "report", &r->report));
out:
  return st;
}

static bs_status read_run(const bs_json *j, bs_result *r) {
  bs_status st = BS_OK;
  BS_CHECK(copy_str(j, "scenario", r->scenario, sizeof r->scenario));
  BS_CHECK(copy_str(j, "backend", r->backend, sizeof r->backend));
  BS_CHECK(copy_str(j, "device", r->device, sizeof r->device));
  BS_CHECK(copy_str(j, "model", r->model, sizeof r->model));
  r->ranks = (int)bs_json_get_num(j, "ranks", 0);
  r->seed = (uint64_t)bs_json_get_num(j, "seed", 0);
  r->scale = bs_json_get_num(j, "scale", 1);
  r->cycles = (int)bs_json_get_num(j, "cycles", 0);
  r->duration_ms = bs_json_get_num(j, "duration_ms", 0);
  r->detect_ms = bs_json_get_num(j, "detect_ms", -1);
  BS_CHECK(read_strs(j, "faults", &r->faults, &r->nfaults));
  BS_CHECK(read_armed(j, r));
  BS_CHECK(read_reaches(j, r));
  BS_CHECK(read_strs(j, "mutants", &r->mutants, &r->nmutants));
  BS_CHECK(read_verdict(j, r));
  BS_CHECK(read_oracles(j, r));
  BS_CHECK(read_outcomes(j, r));
  BS_CHECK(read_memory(j, r));
  BS_CHECK(opt_str(j, "note", &r->note));
  BS_CHECK(opt_str(j, "repro", &r->repro));
out:
  return st;
}

bs_status bs_result_parse_json(const char *text, size_t len, bs_result *out) {
  bs_status st = BS_OK;
  bs_json root = {0};
  memset(out, 0, sizeof *out);
  BS_CHECK(bs_json_parse(text, len, &root));
  if (root.type != BS_JOBJ)
    BS_FAIL(BS_ERR_INVALID, NULL, "run object: not a JSON object");
  BS_CHECK(read_run(&root, out));
out:
  bs_json_free(&root);
  if (st != BS_OK)
    bs_result_free(out);
  return st;
}
