#include "record/bs_schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_json.h"
#include "record/bs_record.h"

static double ns_to_ms(const bs_json *e, const char *key) {
  double ns = bs_json_get_num(e, key, -1);
  return ns < 0 ? -1 : ns / 1e6;
}

/* Appends s to out[*len..n), cut at the end (every rank's is cut alike). */
static void put(char *out, size_t n, size_t *len, const char *s) {
  size_t k = strlen(s);
  if (*len + k >= n)
    k = *len < n - 1 ? n - 1 - *len : 0;
  memcpy(out + *len, s, k);
  *len += k;
  out[*len] = '\0';
}

/* An array of sizes, "[128x4]". */
static void sizes(const bs_json *x, char *out, size_t n, size_t *len) {
  char num[32];
  for (size_t j = 0; j < x->n; j++) {
    snprintf(num, sizeof num, "%s%.0f", j ? "x" : "[", x->items[j].num);
    put(out, n, len, num);
  }
  put(out, n, len, "]");
}

/* "[[128]] BFloat16 -> [[512]] BFloat16": sizes and dtypes of an entry,
 * written in place (every rank's every collective has one: the uniform
 * schedule oracle reads thousands a run). */
static void shape_of(const bs_json *e, char *out, size_t n) {
  static const char *const keys[] = {"input_sizes", "input_dtypes",
                                     "output_sizes", "output_dtypes"};
  size_t len = 0;
  out[0] = '\0';
  for (size_t k = 0; k < 4; k++) {
    const bs_json *v = bs_json_get(e, keys[k]);
    if (k == 2)
      put(out, n, &len, " -> ");
    for (size_t i = 0; v && v->type == BS_JARR && i < v->n; i++) {
      const bs_json *x = &v->items[i];
      if (x->type == BS_JSTR) {
        put(out, n, &len, " ");
        put(out, n, &len, x->str);
      }
      if (x->type == BS_JARR)
        sizes(x, out, n, &len);
    }
  }
}

static int by_seq(const void *a, const void *b) {
  long x = ((const bs_coll_rec *)a)->seq, y = ((const bs_coll_rec *)b)->seq;
  return (x > y) - (x < y);
}

static void entry(const bs_json *e, bs_coll_rec *c) {
  memset(c, 0, sizeof *c);
  c->seq = (long)bs_json_get_num(e, "collective_seq_id", -1);
  snprintf(c->op, sizeof c->op, "%s",
           bs_json_get_str(e, "profiling_name", "?"));
  snprintf(c->label, sizeof c->label, "%s", bs_json_get_str(e, "label", ""));
  snprintf(c->state, sizeof c->state, "%s", bs_json_get_str(e, "state", "?"));
  shape_of(e, c->shape, sizeof c->shape);
  /* Backstop's frames: the front's exchange (if any), then the phase. */
  const bs_json *f = bs_json_get(e, "frames");
  if (f && f->type == BS_JARR && f->n)
    snprintf(c->phase, sizeof c->phase, "%s",
             bs_json_get_str(&f->items[f->n - 1], "name", ""));
  c->t_created_ms = ns_to_ms(e, "time_created_ns");
  c->t_started_ms = ns_to_ms(e, "time_discovered_started_ns");
  c->t_completed_ms = ns_to_ms(e, "time_discovered_completed_ns");
}

bs_status bs_schedule_parse(const char *flight_json, bs_schedule *out) {
  bs_status st = BS_OK;
  bs_json root = {0};
  memset(out, 0, sizeof *out);
  BS_CHECK(bs_json_parse(flight_json, strlen(flight_json), &root));
  const bs_json *es = bs_json_get(&root, "entries");
  if (!es || es->type != BS_JARR)
    BS_FAIL(BS_ERR_INVALID, NULL, "flight recorder dump without entries");
  if (es->n && !(out->c = calloc(es->n, sizeof *out->c)))
    BS_FAIL(BS_ERR_NOMEM, NULL, "schedule of %zu collectives", es->n);
  for (size_t i = 0; i < es->n; i++) {
    if (es->items[i].type != BS_JOBJ)
      BS_FAIL(BS_ERR_INVALID, NULL, "flight entry %zu is not an object", i);
    entry(&es->items[i], &out->c[out->n++]);
  }
  if (out->n > 1) /* an empty recorder has no array: qsort(NULL, 0) */
    qsort(out->c, out->n, sizeof *out->c, by_seq);
out:
  bs_json_free(&root);
  if (st != BS_OK)
    bs_schedule_free(out);
  return st;
}

/* The schedule of n collectives (copied), by sequence id. */
static bs_status from_colls(const bs_coll_rec *c, size_t n, bs_schedule *out) {
  memset(out, 0, sizeof *out);
  if (n && !(out->c = malloc(n * sizeof *out->c)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "schedule of %zu collectives", n);
  if (n)
    memcpy(out->c, c, n * sizeof *c);
  out->n = n;
  if (n > 1)
    qsort(out->c, out->n, sizeof *out->c, by_seq);
  return BS_OK;
}

bs_status bs_schedule_of_rank(const bs_record *r, int k, bs_schedule *out) {
  const bs_rank_rec *rr = &r->rank[k];
  memset(out, 0, sizeof *out);
  if (rr->colls)
    return from_colls(rr->colls, rr->ncolls, out);
  if (!rr->flight)
    return bs_err_fail(BS_ERR_INVALID, NULL, "rank %d: no flight recorder", k);
  return bs_schedule_parse(rr->flight, out);
}

void bs_schedule_free(bs_schedule *s) {
  free(s->c);
  memset(s, 0, sizeof *s);
}

const bs_coll_rec *bs_schedule_find(const bs_schedule *s, long seq) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->c[mid].seq < seq)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < s->n && s->c[lo].seq == seq ? &s->c[lo] : NULL;
}
