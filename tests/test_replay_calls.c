/* How a replayed plan goes out as calls (bs_replay_calls_len) and the pair
 * communicators its lone p2p ops need (bs_replay_calls_pairs): every pair
 * that either member's lone ops name, once, sorted; and made in that order
 * by every rank, each blocking until its peer makes it too, they all get
 * made (no two inits wait on each other), on plans of seeded random ops. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "bs_buf.h"
#include "dumps/bs_replay_int.h"

#define RANKS 6
#define STEPS 12

static int world[RANKS] = {0, 1, 2, 3, 4, 5};
static int odd[] = {1, 3, 5};

typedef struct fixture {
  bs_replay_state r;
  bs_replay_plan plan[RANKS];
  bs_replay_step s[RANKS][STEPS];
  bs_replay_group g[2];
} fixture;

static void setup(fixture *f, int n) {
  memset(f, 0, sizeof *f);
  f->g[0] = (bs_replay_group){.world = true, .members = world, .n = n};
  f->g[1] = (bs_replay_group){.members = odd, .n = 3};
  f->r = (bs_replay_state){.n = n, .plan = f->plan, .g = f->g};
  for (int i = 0; i < RANKS; i++)
    f->plan[i].s = f->s[i];
}

/* Appends a step: a p2p op (peer >= 0, batch b, seq) or a collective. */
static void step(fixture *f, int rank, bs_coll op, int group, int peer,
                 size_t batch, uint64_t seq) {
  bs_replay_plan *p = &f->plan[rank];
  assert_true(p->n < STEPS);
  p->s[p->n++] = (bs_replay_step){
      .op = op, .group = group, .peer = peer, .batch = batch, .seq = seq};
}

static void test_call_len(void **state) {
  (void)state;
  fixture f;
  bool own;
  setup(&f, 4);
  step(&f, 0, BS_COLL_SEND, 0, 1, 1, 1);
  step(&f, 0, BS_COLL_RECV, 0, 3, 2, 2);
  step(&f, 0, BS_COLL_SEND, 1, 1, 3, 1); /* another group ends the run */
  step(&f, 0, BS_COLL_SEND, 0, 1, 4, 3); /* a batch of two ends it too */
  step(&f, 0, BS_COLL_RECV, 0, 2, 4, 3);
  step(&f, 0, BS_COLL_ALL_REDUCE, 0, -1, 0, 1);
  const bs_replay_step *s = f.plan[0].s;
  assert_int_equal(bs_replay_calls_len(&f.r, s, 6, &own), 2);
  assert_true(own);
  assert_int_equal(bs_replay_calls_len(&f.r, s + 2, 4, &own), 1);
  assert_true(own);
  assert_int_equal(bs_replay_calls_len(&f.r, s + 3, 3, &own), 2);
  assert_false(own);
  assert_int_equal(bs_replay_calls_len(&f.r, s + 5, 1, &own), 1);
  assert_false(own);
  f.r.exact = true; /* each call as planned */
  assert_int_equal(bs_replay_calls_len(&f.r, s, 6, &own), 1);
  assert_true(own);
}

static void test_pairs(void **state) {
  (void)state;
  fixture f;
  bs_replay_pair *v = NULL;
  size_t n = 0;
  setup(&f, 4);
  step(&f, 0, BS_COLL_SEND, 0, 1, 1, 1);
  step(&f, 0, BS_COLL_RECV, 0, 3, 2, 2);
  step(&f, 1, BS_COLL_RECV, 0, 0, 3, 1);
  step(&f, 1, BS_COLL_SEND, 1, 3, 4, 1); /* group 1: ranks 0 and 1 of it */
  step(&f, 2, BS_COLL_RECV, 0, 3, 5, 1); /* rank 3 never sends: made all
                                            the same, or 2 would wait */
  step(&f, 3, BS_COLL_SEND, 0, 0, 6, 4); /* a batch: no pair */
  step(&f, 3, BS_COLL_SEND, 0, 1, 6, 4);
  assert_int_equal(bs_replay_calls_pairs(&f.r, &v, &n), BS_OK);
  const bs_replay_pair want[] = {{0, 0, 1}, {0, 0, 3}, {0, 2, 3}, {1, 0, 1}};
  assert_int_equal(n, 4);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(v[i].group, want[i].group);
    assert_int_equal(v[i].lo, want[i].lo);
    assert_int_equal(v[i].hi, want[i].hi);
  }
  free(v);
}

/* What the replay's head says of the pairs (over NCCL): by group name. */
static void test_pairs_said(void **state) {
  (void)state;
  fixture f;
  bs_dump_group groups[2] = {{.name = "0"}, {.name = "pipeline"}};
  bs_dumps d = {.groups = groups, .ngroups = 2};
  bs_replay_pair v[] = {{0, 0, 1}, {0, 2, 3}, {1, 0, 1}};
  bs_buf b = {0};
  setup(&f, 4);
  f.r.d = &d;
  bs_replay_calls_said(&f.r, &b);
  assert_null(b.s); /* no pairs: no line */
  f.r.pairs = v;
  f.r.npairs = 3;
  bs_replay_calls_said(&f.r, &b);
  assert_string_equal(b.s, "  lone p2p ops on a pair communicator each: "
                           "group 0: 0:1, 2:3; group pipeline: 0:1 (3, "
                           "group ranks)\n");
  bs_buf_free(&b);
}

static void test_pair_outside_group(void **state) {
  (void)state;
  fixture f;
  bs_replay_pair *v = NULL;
  size_t n = 0;
  setup(&f, 4);
  step(&f, 0, BS_COLL_SEND, 1, 1, 1, 1); /* rank 0 is not in group 1 */
  assert_int_equal(bs_replay_calls_pairs(&f.r, &v, &n), BS_ERR_INVALID);
  assert_null(v);
}

/* Each rank makes the pairs of its list in turn (pair ids: indexes of
 * pairs[], members global ranks), each init waiting until its peer is at
 * the same pair: whether they all get made. */
typedef struct order {
  int pairs[32][2];
  int list[RANKS][32];
  int n[RANKS];
} order;

static bool all_made(const order *o, int nranks) {
  int at[RANKS] = {0};
  bool moved = true;
  while (moved) {
    moved = false;
    for (int r = 0; r < nranks; r++) {
      if (at[r] == o->n[r])
        continue;
      int p = o->list[r][at[r]];
      int peer = o->pairs[p][0] == r ? o->pairs[p][1] : o->pairs[p][0];
      if (at[peer] < o->n[peer] && o->list[peer][at[peer]] == p) {
        at[r]++, at[peer]++;
        moved = true;
      }
    }
  }
  for (int r = 0; r < nranks; r++)
    if (at[r] < o->n[r])
      return false;
  return true;
}

/* Each rank's pairs of v, in v's order (as the replay's ranks take them). */
static void order_of(const fixture *f, const bs_replay_pair *v, size_t n,
                     order *o) {
  memset(o, 0, sizeof *o);
  assert_true(n <= 32);
  for (size_t i = 0; i < n; i++) {
    const bs_replay_group *g = &f->g[v[i].group];
    int lo = g->members[v[i].lo], hi = g->members[v[i].hi];
    o->pairs[i][0] = lo, o->pairs[i][1] = hi;
    o->list[lo][o->n[lo]++] = (int)i;
    o->list[hi][o->n[hi]++] = (int)i;
  }
}

/* Made at each rank's first op with the peer, a ring's pairs wait on each
 * other (0 at 0:1, 1 at 1:2, 2 at 0:2): what the check finds. */
static void test_first_use_order_waits(void **state) {
  (void)state;
  order o = {.pairs = {{0, 1}, {1, 2}, {0, 2}},
             .list = {{0, 2}, {1, 0}, {2, 1}},
             .n = {2, 2, 2}};
  assert_false(all_made(&o, 3));
}

static void test_pairs_never_wait_in_a_cycle(void **state) {
  (void)state;
  unsigned seed = 7;
  for (int round = 0; round < 200; round++) {
    fixture f;
    order o;
    bs_replay_pair *v = NULL;
    size_t n = 0;
    setup(&f, RANKS);
    for (int r = 0; r < RANKS; r++)
      for (int k = 0; k < STEPS; k++) {
        int g = (rand_r(&seed) % 3 == 0 && (r & 1)) ? 1 : 0;
        int peer = (int)(rand_r(&seed) % RANKS);
        if (peer == r || (g == 1 && !(peer & 1)))
          continue;
        bs_coll op = rand_r(&seed) % 2 ? BS_COLL_SEND : BS_COLL_RECV;
        step(&f, r, op, g, peer, (size_t)(r * STEPS + k + 1), (uint64_t)k + 1);
      }
    assert_int_equal(bs_replay_calls_pairs(&f.r, &v, &n), BS_OK);
    assert_true(n > 0);
    order_of(&f, v, n, &o);
    assert_true(all_made(&o, RANKS));
    free(v);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_call_len),
      cmocka_unit_test(test_pairs),
      cmocka_unit_test(test_pairs_said),
      cmocka_unit_test(test_pair_outside_group),
      cmocka_unit_test(test_first_use_order_waits),
      cmocka_unit_test(test_pairs_never_wait_in_a_cycle),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
