/* Run-record parts (process-per-rank runs): what one process writes, the
 * lead merges back to the same record, and any damaged part is refused
 * with an error, never a crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/bs_record_part.h"

enum { RANKS = 4, CYCLES = 2 };

static void digests(bs_digests *d, size_t n, int salt) {
  bs_digest dig[4];
  char names[4][32];
  const char *of[4];
  for (size_t i = 0; i < n; i++) {
    memset(&dig[i], salt + (int)i, sizeof dig[i]);
    snprintf(names[i], sizeof names[i], "layer.%d.w%zu", salt, i);
    of[i] = names[i];
  }
  assert_int_equal(bs_record_digests_set(d, dig, of, n), BS_OK);
  d->npaused = n / 2;
}

/* Rank k: k+1 phases, the last failed; digests on each; a flight string. */
static void fill_rank(bs_record *r, int k) {
  for (int i = 0; i <= k; i++) {
    bs_event *e = bs_record_begin(r, k, i ? "update_weights" : "init", i);
    assert_non_null(e);
    bs_err_clear();
    if (i == k)
      bs_err_fail(BS_ERR_ENGINE_DEAD, "w0", "rank %d died at %d", k, i);
    bs_record_end(r, k, i == k ? BS_ERR_ENGINE_DEAD : BS_OK);
    e->pinned[0] = (size_t)(100 * k + i);
    e->param_paused = i % 2;
    digests(&e->live, (size_t)(i % 3) + 1, 10 * k + i);
    digests(&e->recv, (size_t)(k % 2), 50 + k);
  }
  r->rank[k].returned = true;
  r->rank[k].end = BS_ERR_ENGINE_DEAD;
  r->rank[k].end_err = *bs_err();
  char fl[64];
  snprintf(fl, sizeof fl, "{\"rank\": %d}", k);
  r->rank[k].flight = k == 2 ? NULL : strdup(fl);
}

/* A record as the processes owning ranks first..first+n-1 would make it. */
static void make(bs_record *r, int first, int n, const char *report) {
  assert_int_equal(bs_record_init(r, RANKS, CYCLES), BS_OK);
  for (int k = first; k < first + n; k++)
    fill_rank(r, k);
  r->nfired = (size_t)n;
  r->fired = calloc((size_t)n, sizeof *r->fired);
  for (int i = 0; i < n; i++) {
    r->fired[i].point = BS_FP_ENGINE_SEND;
    r->fired[i].rank = first + i;
  }
  r->world_report = strdup(report);
  r->detect_ms = first * 10.0;
  assert_int_equal(bs_record_check(r, "c", first == 0, "from %d", first),
                   BS_OK);
}

static void part(const bs_record *r, int first, int n, bs_buf *b) {
  memset(b, 0, sizeof *b);
  bs_record_part_write(r, first, n, b);
  assert_false(b->oom);
}

/* A merge with a clean error record: the first error raised wins. */
static bs_status merge(bs_record *r, const bs_buf *b, size_t n,
                       const char *what) {
  bs_err_clear();
  return bs_record_part_merge(r, b->s, n, what);
}

static void assert_digests_equal(const bs_digests *a, const bs_digests *b) {
  assert_int_equal(a->n, b->n);
  assert_int_equal(a->npaused, b->npaused);
  if (a->n) {
    assert_memory_equal(a->d, b->d, a->n * sizeof *a->d);
    /* The same names, and the process's one copy of each. */
    assert_memory_equal(a->names, b->names, a->n * sizeof *a->names);
  }
}

static void assert_rank_equal(const bs_rank_rec *a, const bs_rank_rec *b) {
  assert_int_equal(a->n, b->n);
  assert_int_equal(a->returned, b->returned);
  assert_int_equal(a->end, b->end);
  assert_string_equal(a->end_err.message, b->end_err.message);
  assert_string_equal(a->end_err.where, b->end_err.where);
  assert_true((a->flight == NULL) == (b->flight == NULL));
  if (a->flight)
    assert_string_equal(a->flight, b->flight);
  for (size_t i = 0; i < a->n; i++) {
    assert_string_equal(a->ev[i].phase, b->ev[i].phase);
    assert_int_equal(a->ev[i].status, b->ev[i].status);
    assert_string_equal(bs_record_err(&a->ev[i])->message,
                        bs_record_err(&b->ev[i])->message);
    assert_string_equal(bs_record_err(&a->ev[i])->where,
                        bs_record_err(&b->ev[i])->where);
    assert_int_equal(a->ev[i].pinned[0], b->ev[i].pinned[0]);
    assert_int_equal(a->ev[i].param_paused, b->ev[i].param_paused);
    assert_digests_equal(&a->ev[i].live, &b->ev[i].live);
    assert_digests_equal(&a->ev[i].recv, &b->ev[i].recv);
  }
}

/* Two processes' parts merged give each rank exactly as recorded. */
static void test_merge_two_parts(void **state) {
  (void)state;
  bs_record p0, p1, lead;
  bs_buf b0, b1;
  make(&p0, 0, 2, "");
  make(&p1, 2, 2, "rank 3 stuck in all_gather");
  part(&p0, 0, 2, &b0);
  part(&p1, 2, 2, &b1);
  assert_int_equal(bs_record_init(&lead, RANKS, CYCLES), BS_OK);
  assert_int_equal(merge(&lead, &b0, b0.len, "part0"), BS_OK);
  assert_int_equal(merge(&lead, &b1, b1.len, "part1"), BS_OK);
  for (int k = 0; k < RANKS; k++)
    assert_rank_equal(k < 2 ? &p0.rank[k] : &p1.rank[k], &lead.rank[k]);
  assert_non_null(
      strstr(lead.rank[3].end_err.where, "test_cli_record_part.c:"));
  assert_int_equal(lead.nfired, 4);
  assert_int_equal(lead.fired[3].rank, 3);
  assert_int_equal(lead.nchecks, 2);
  assert_true(lead.checks[0].ok);
  assert_false(lead.checks[1].ok);
  assert_string_equal(lead.checks[1].detail, "from 2");
  /* Only the part with a report adds one, under its ranks. */
  assert_string_equal(lead.world_report,
                      "ranks 2..3 (one process):\nrank 3 stuck in all_gather");
  assert_true(lead.detect_ms == 20.0);
  bs_buf_free(&b0);
  bs_buf_free(&b1);
  bs_record_free(&p0);
  bs_record_free(&p1);
  bs_record_free(&lead);
}

/* A part from a process that started later has its event times moved onto
 * the lead's clock (the collectives-per-phase checks compare windows). */
static void test_merge_rebases_times(void **state) {
  (void)state;
  bs_record p1, lead;
  bs_buf b1;
  make(&p1, 2, 2, "");
  assert_int_equal(bs_record_init(&lead, RANKS, CYCLES), BS_OK);
  p1.start_real_ms = lead.start_real_ms + 100;
  double t0 = p1.rank[3].ev[1].t0_ms, t1 = p1.rank[3].ev[1].t1_ms;
  part(&p1, 2, 2, &b1);
  assert_int_equal(merge(&lead, &b1, b1.len, "part1"), BS_OK);
  assert_true(lead.rank[3].ev[1].t0_ms == t0 + 100);
  assert_true(lead.rank[3].ev[1].t1_ms == t1 + 100);
  bs_buf_free(&b1);
  bs_record_free(&p1);
  bs_record_free(&lead);
}

/* Every truncation and a flipped header byte are refused by name; the
 * record keeps what it had. */
static void test_damaged_parts(void **state) {
  (void)state;
  bs_record p, lead;
  bs_buf b;
  make(&p, 1, 2, "report");
  part(&p, 1, 2, &b);
  assert_int_equal(bs_record_init(&lead, RANKS, CYCLES), BS_OK);
  for (size_t n = 0; n < b.len; n++) {
    assert_int_equal(merge(&lead, &b, n, "cut"), BS_ERR_INVALID);
    assert_non_null(strstr(bs_err()->message, "cut"));
    assert_int_equal(lead.rank[1].n, 0);
  }
  char *bad = malloc(b.len + 1);
  memcpy(bad, b.s, b.len);
  bad[b.len] = 'x';
  bs_buf badb = {.s = bad, .len = b.len + 1};
  assert_int_equal(merge(&lead, &badb, badb.len, "long"), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "past its end"));
  bad[0] ^= 1;
  assert_int_equal(merge(&lead, &badb, b.len, "other"), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "this build"));
  free(bad);
  bs_buf_free(&b);
  bs_record_free(&p);
  bs_record_free(&lead);
}

/* A part of another world size, or ranks outside the run, is refused. */
static void test_wrong_world(void **state) {
  (void)state;
  bs_record p, lead;
  bs_buf b;
  make(&p, 2, 2, "");
  part(&p, 2, 2, &b);
  assert_int_equal(bs_record_init(&lead, RANKS + 1, CYCLES), BS_OK);
  assert_int_equal(merge(&lead, &b, b.len, "p"), BS_ERR_INVALID);
  assert_non_null(strstr(bs_err()->message, "do not fit"));
  bs_record_free(&lead);
  bs_buf_free(&b);
  bs_record_free(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_merge_two_parts),
      cmocka_unit_test(test_merge_rebases_times),
      cmocka_unit_test(test_damaged_parts),
      cmocka_unit_test(test_wrong_world),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
