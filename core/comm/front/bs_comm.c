/* The front every collective passes through, whatever the backend: checks
 * the arguments, fires the comm/ fault points, numbers the collective,
 * records it in the flight recorder, runs the optional fingerprint check,
 * arms the watchdog, and turns a backend failure into an error record that
 * names the collective and the world's cause. agree() and check_same() are
 * built on the same path. */
#include "comm/front/bs_comm_state.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bs_clock.h"
#include "bs_digest.h"
#include "bs_fault.h"
#include "bs_span.h"

static const char *short_name(bs_coll c) {
  return bs_coll_name(c) + strlen("nccl:");
}

int bs_comm_rank(const bs_comm *c) {
  return c ? c->grank : -1;
}

int bs_comm_size(const bs_comm *c) {
  return c ? bs_comm_front_size(c) : 0;
}

int bs_comm_front_size(const bs_comm *c) {
  return c->pg ? c->pg->n : c->w->o.global_size;
}

int bs_comm_front_rank(const bs_comm *c) {
  return c->pg ? c->pg_rank : c->grank;
}

bs_world *bs_comm_front_world(const bs_comm *c) {
  return c->w;
}

int bs_comm_front_local(const bs_comm *c) {
  return c->rank;
}

void *bs_comm_front_impl(const bs_comm *c) {
  return c->impl;
}

void bs_comm_front_set_impl(bs_comm *c, void *impl) {
  c->impl = impl;
}

bs_pg *bs_comm_front_pg(const bs_comm *c) {
  return c->pg;
}

bs_rank_pos bs_comm_front_pos(const bs_comm *c) {
  pthread_mutex_lock(&c->w->mu);
  bs_rank_pos p = c->w->pos[c->rank];
  pthread_mutex_unlock(&c->w->mu);
  return p;
}

int bs_comm_local_size(const bs_comm *c) {
  return c ? c->w->o.size : 0;
}

bs_dev *bs_comm_dev(const bs_comm *c) {
  return c ? c->dev : NULL;
}

uint64_t bs_comm_seq(const bs_comm *c) {
  return c ? c->seq : 0;
}

double bs_comm_cpu_wait_ms(const bs_comm *c) {
  if (!c || !c->w->turns)
    return 0.0;
  const bs_comm *r = c->parent ? c->parent : c;
  return (double)(r->turn_wait_ns + bs_clock_run_delay_ns()) / 1e6;
}

bs_comm_times bs_comm_times_now(const bs_comm *c) {
  bs_comm_times t = {0};
  if (!c || !c->w->turns)
    return t;
  t.waited_ms = bs_comm_cpu_wait_ms(c);
  return t;
}

double bs_comm_cpu_wait_ms_since(const bs_comm *c, const bs_comm_times *t0) {
  bs_comm_times t = bs_comm_times_now(c);
  return t.waited_ms - t0->waited_ms;
}

void bs_comm_idle(bs_comm *c, bool idle) {
  if (c && !bs_world_sched_outside(c->w, idle))
    bs_world_turn(c, !idle);
}

void bs_comm_wait_word(bs_comm *c, _Atomic uint32_t *word, uint32_t seen,
                       uint64_t ns) {
  if (c)
    bs_world_sched_wait(c->w, word, seen, ns);
}

void bs_comm_wake_word(bs_comm *c, _Atomic uint32_t *word) {
  if (c)
    bs_world_sched_bump(c->w, word);
}

void bs_comm_spend(bs_comm *c, size_t bytes) {
  if (c)
    bs_world_sched_spend(c->w, bs_world_sched_cost(bytes));
}

void bs_comm_sleep_ms(bs_comm *c, int ms) {
  if (c && ms > 0)
    bs_world_sched_sleep(c->w, (uint64_t)ms * 1000000ull);
}

/* The counter *last (NULL: no communicator) goes on at seq. */
static bs_status set_next(uint64_t *last, uint64_t seq, const char *what) {
  uint64_t none = 0;
  if (!last || seq <= *last)
    return bs_err_fail(
        BS_ERR_INVALID, NULL, "next %s #%llu: not past the last, #%llu", what,
        (unsigned long long)seq, (unsigned long long)*(last ? last : &none));
  *last = seq - 1;
  return BS_OK;
}

bs_status bs_comm_set_next_seq(bs_comm *c, uint64_t seq) {
  return set_next(c ? &c->seq : NULL, seq, "collective");
}

/* Zero-filled past the name: the fingerprint compares every byte. */
void bs_comm_set_next_name(bs_comm *c, const char *name) {
  if (!c)
    return;
  memset(c->next_name, 0, sizeof c->next_name);
  if (name)
    memcpy(c->next_name, name, strnlen(name, sizeof c->next_name - 1));
}

bs_status bs_comm_set_next_p2p_seq(bs_comm *c, uint64_t seq) {
  return set_next(c ? &c->p2p_seq : NULL, seq, "p2p op");
}

static bool is_reduction(bs_coll op) {
  return op == BS_COLL_REDUCE_SCATTER || op == BS_COLL_ALL_REDUCE;
}

static bs_status check_args(const bs_comm *c, const bs_coll_args *a) {
  bs_status st = BS_OK;
  size_t es = bs_dtype_size(a->dt);
  int size = bs_comm_front_size(c);
  if (!bs_coll_has_data(a->op))
    goto out;
  if (es == 0)
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: unknown dtype %d", short_name(a->op),
            (int)a->dt);
  if (is_reduction(a->op) && (unsigned)a->redop >= BS_REDOP_COUNT)
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: unknown reduction %d", short_name(a->op),
            (int)a->redop);
  if (a->count > SIZE_MAX / es / (size_t)size)
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: %zu elements overflow",
            short_name(a->op), a->count);
  if (a->count && (!a->send || (!a->recv && !a->view)))
    BS_FAIL(BS_ERR_INVALID, NULL, "%s: NULL buffer for %zu elements",
            short_name(a->op), a->count);
  if (a->op == BS_COLL_BROADCAST && (a->root < 0 || a->root >= size))
    BS_FAIL(BS_ERR_INVALID, NULL, "broadcast: root %d outside 0..%d", a->root,
            size - 1);
out:
  return st;
}

static void pos_enter(bs_comm *c, const bs_coll_args *shown) {
  bs_world *w = c->w;
  pthread_mutex_lock(&w->mu);
  bs_rank_pos *p = &w->pos[c->rank];
  p->state = BS_RANK_IN_COLL;
  p->at = *shown;
  p->since_ns = bs_clock_mono_ns();
  pthread_mutex_unlock(&w->mu);
}

static void pos_leave(bs_comm *c, uint64_t completed_seq) {
  bs_world *w = c->w;
  pthread_mutex_lock(&w->mu);
  bs_rank_pos *p = &w->pos[c->rank];
  p->state = BS_RANK_RUNNING;
  p->since_ns = bs_clock_mono_ns();
  if (completed_seq && c->pg)
    c->pg->last_done[c->pg_rank] = completed_seq;
  else if (completed_seq)
    p->last_seq = completed_seq;
  pthread_mutex_unlock(&w->mu);
}

/* The world communicator's teardown: in one now, and one more finished
 * (a group's teardown is its own: only the world's is counted). */
static void pos_tearing(bs_comm *c, bool now, bool finished) {
  if (c->pg)
    return;
  bs_world *w = c->w;
  pthread_mutex_lock(&w->mu);
  bs_rank_pos *p = &w->pos[c->rank];
  p->tearing = now;
  p->torn += finished;
  pthread_mutex_unlock(&w->mu);
}

void bs_comm_front_show_wait(bs_comm *c, const bs_coll_args *shown) {
  pos_enter(c, shown);
}

void bs_comm_front_show_running(bs_comm *c) {
  pos_leave(c, 0);
}

void bs_comm_leave(bs_comm *c, bs_rank_state how, const char *why) {
  bs_world_leave(c, how, why);
}

void bs_comm_die(bs_comm *c, const char *why) {
  bs_comm_leave(c, BS_RANK_DEAD, why);
}

void bs_comm_abort(bs_comm *c, const char *why) {
  if (c)
    bs_world_abort(c->w, BS_ERR_ABORTED, 0,
                   "rank %d aborted the communicator: %s", c->grank,
                   why ? why : "no reason given");
}

/* The error record of a collective the world's failure cut short: the
 * job's settled failure when the world failed (every rank of every process
 * returns the same status and cause; a timeout's record is its cause, with
 * its culprit as the record's rank, whatever call each rank was in:
 * docs/behavior.md §7.2), else the backend's own. */
/* The rank returns the failure now (bs_comm.fail_ns), after waiting for a
 * CPU since its last wait began, where it shares the cores with more ranks
 * than they run at once (queued_ns: the simulator's, not the rank's). */
static void failed_now(bs_comm *c) {
  if (c->fail_ns)
    return;
  c->fail_ns = bs_clock_mono_ns();
  uint64_t delay = c->w->turns ? bs_clock_run_delay_ns() : 0;
  if (delay > c->run_delay_ns && c->run_delay_ns)
    c->queued_ns += delay - c->run_delay_ns;
}

static bs_status fail_coll(bs_comm *c, const bs_coll_args *a, bs_status st) {
  char cause[256];
  int culprit = -1;
  bs_status settled = bs_world_settle(c->w);
  if (settled != BS_OK) {
    st = settled;
    bs_err_clear(); /* a backend's own words must not hide the job's */
    culprit = bs_world_culprit(c->w);
  }
  failed_now(c);
  bs_world_cause(c->w, cause, sizeof cause);
  if (culprit >= 0) { /* the cause names the collective */
    st = bs_err_fail(st, NULL, "%s", cause);
    bs_err()->rank = culprit;
    return st;
  }
  return bs_err_fail(st, NULL, "%s #%llu%s%s: %s", short_name(a->op),
                     (unsigned long long)a->seq, a->label ? " " : "",
                     a->label ? a->label : "", cause[0] ? cause : "failed");
}

/* One wait in the backend (op(c, arg)), watched; shown is what the report
 * says the rank is doing (the user's collective during its fingerprint).
 * The p2p ops wait the same way (bs_comm_front_wait). */
bs_status bs_comm_front_wait(bs_comm *c, const bs_coll_args *shown,
                             uint64_t done_seq,
                             bs_status (*op)(bs_comm *c, const void *arg),
                             const void *arg) {
  bs_world *w = c->w;
  pos_enter(c, shown);
  bs_watchdog_hold(w->wd, bs_clock_mono_ns()); /* the world moves on */
  bs_watchdog_arm(w->wd, c->rank);
  bs_world_turn(c, false); /* waiting, it lets another rank run */
  if (w->turns && !c->fail_ns)
    c->run_delay_ns = bs_clock_run_delay_ns();
  bs_status st = op(c, arg);
  bs_watchdog_disarm(w->wd, c->rank);
  if (st != BS_OK) /* returned now, runs when its turn comes */
    failed_now(c);
  bs_world_turn(c, true);
  pos_leave(c, st == BS_OK ? done_seq : 0);
  if (st != BS_OK)
    st = fail_coll(c, shown, st);
  return st;
}

static bs_status coll_op(bs_comm *c, const void *a) {
  return c->w->be->coll(c, a);
}

static bs_status run_backend(bs_comm *c, const bs_coll_args *a,
                             const bs_coll_args *shown, uint64_t done_seq) {
  return bs_comm_front_wait(c, shown, done_seq, coll_op, a);
}

/* A host all-gather of n bytes from every rank: *all, read-only until this
 * rank's next collective, is the one result the backend shares (the sim's
 * threads), else own, which this rank allocates (the caller frees it). */
static bs_status host_gather(bs_comm *c, const void *mine, size_t n,
                             const void **all, void **own, bs_coll_args *a) {
  int size = bs_comm_front_size(c);
  *all = *own = NULL;
  *a = (bs_coll_args){.op = BS_COLL_ALL_GATHER,
                      .send = mine,
                      .count = n,
                      .dt = BS_U8,
                      .host = true};
  if (c->w->be->shares && !c->pg) { /* a group's: its own (scan_once) */
    a->view = all;
    return BS_OK;
  }
  if (!(*own = calloc((size_t)size, n)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "%d ranks' %zu bytes", size, n);
  a->recv = *own;
  *all = *own;
  return BS_OK;
}

/* What scan(all, n) finds (an index, or -1) in the result of collective
 * seq: where every rank reads one shared result (own is NULL) the first
 * rank to ask scans it and the others take its answer, so the world's
 * work stays N, not N ranks x N entries. */
typedef int (*scan_fn)(const void *all, int n);
static int scan_once(bs_comm *c, uint64_t seq, scan_fn scan, const void *all,
                     const void *own) {
  bs_world *w = c->w;
  int n = bs_comm_front_size(c);
  if (own)
    return scan(all, n);
  pthread_mutex_lock(&w->settle_mu);
  if (w->scan_seq != seq || w->scan_fn != (const void *)scan) {
    w->scan_found = scan(all, n);
    w->scan_seq = seq;
    w->scan_fn = (const void *)scan;
  }
  int found = w->scan_found;
  pthread_mutex_unlock(&w->settle_mu);
  return found;
}

/* What ranks compare before a collective; no padding, so memcmp works.
 * The seal (a magic and a hash of the rest) tells a fingerprint from the
 * bytes of an exchange that a rank's departure cut short: those are not a
 * mismatch. */
typedef struct fingerprint {
  uint64_t seq, count;
  int32_t op, dt, redop, root;
  char name[BS_COLL_NAME]; /* a stand-in's (zero-filled past its end) */
  uint32_t magic, seal;
} fingerprint;

#define FINGERPRINT_MAGIC 0x42534650u /* "BSFP" */

static uint32_t seal_of(const fingerprint *f) {
  const unsigned char *p = (const unsigned char *)f;
  uint32_t h = 2166136261u; /* FNV-1a over everything before the seal */
  for (size_t i = 0; i < offsetof(fingerprint, seal); i++)
    h = (h ^ p[i]) * 16777619u;
  return h;
}

static bool sealed(const fingerprint *f) {
  return f->magic == FINGERPRINT_MAGIC && f->seal == seal_of(f);
}

static fingerprint fingerprint_of(const bs_coll_args *a) {
  fingerprint f;
  memset(&f, 0, sizeof f);
  f.seq = a->seq;
  f.op = (int32_t)a->op;
  if (bs_coll_has_data(a->op)) {
    f.count = a->count;
    f.dt = (int32_t)a->dt;
  }
  f.redop = is_reduction(a->op) ? (int32_t)a->redop : 0;
  f.root = a->op == BS_COLL_BROADCAST ? a->root : 0;
  memcpy(f.name, a->name, sizeof f.name); /* NUL-filled past its end */
  f.magic = FINGERPRINT_MAGIC;
  f.seal = seal_of(&f);
  return f;
}

static bs_coll_args args_of(const fingerprint *f) {
  bs_coll_args a = {.op = (bs_coll)f->op,
                    .count = f->count,
                    .dt = (bs_dtype)f->dt,
                    .redop = (bs_redop)f->redop,
                    .root = f->root,
                    .seq = f->seq};
  memcpy(a.name, f->name, sizeof a.name);
  a.name[sizeof a.name - 1] = '\0';
  return a;
}

/* The world's failure as the fingerprints tell it, with where every rank
 * is (what a mismatch's report shows). */
static bs_status fingerprint_report(bs_comm *c, const fingerprint *all, int n,
                                    int bad) {
  bs_status st = BS_OK;
  int npos = c->w->o.global_size; /* by global rank: a group's members */
  bs_rank_pos *pos = calloc((size_t)npos, sizeof *pos);
  if (!pos)
    BS_FAIL(BS_ERR_NOMEM, NULL, "fingerprint report for %d ranks", n);
  uint64_t now = bs_clock_mono_ns();
  for (int i = 0; i < n; i++) {
    bs_rank_pos *p = &pos[c->pg ? c->pg->members[i] : i];
    *p = (bs_rank_pos){.state = BS_RANK_IN_COLL,
                       .at = args_of(&all[i]),
                       .since_ns = now,
                       .last_seq = all[i].seq ? all[i].seq - 1 : 0};
    p->at.pg = c->pg ? c->pg->id : 0;
  }
  bool other = all[bad].op != all[0].op || all[bad].seq != all[0].seq ||
               memcmp(all[bad].name, all[0].name, sizeof all[0].name) != 0;
  const char *what = other ? "a different collective"
                           : "a different count, dtype, root or reduction";
  bs_world_fail(c->w, BS_ERR_DESYNC, now, pos, npos,
                "fingerprint mismatch before #%llu%s%s: rank %d issues %s than "
                "rank %d",
                (unsigned long long)all[0].seq, c->pg ? " in group " : "",
                c->pg ? c->pg->name : "", c->pg ? c->pg->members[bad] : bad,
                what, c->pg ? c->pg->members[0] : 0);
out:
  free(pos);
  return st;
}

/* Every rank holds the same fingerprints, so every rank reaches the same
 * verdict and the same report without another round trip. The first rank
 * to get settle_mu makes the report; the others find the world failed
 * (every rank making N positions would be N x N again). */
static bs_status fingerprint_desync(bs_comm *c, const fingerprint *all, int n,
                                    int bad) {
  bs_status st = BS_OK;
  pthread_mutex_lock(&c->w->settle_mu);
  if (bs_world_abort_status(c->w) == BS_OK)
    st = fingerprint_report(c, all, n, bad);
  pthread_mutex_unlock(&c->w->settle_mu);
  if (st != BS_OK)
    return st;
  c->w->be->wake(c->w);
  bs_coll_args mine = args_of(&all[bs_comm_front_rank(c)]);
  mine.pg = c->pg ? c->pg->id : 0;
  return fail_coll(c, &mine, BS_ERR_DESYNC);
}

/* An exchange that returned without rank bad's fingerprint: it left, or the
 * communicator was torn down under the exchange. The world fails as
 * aborted; a rank death behind it (reported by its own process) wins when
 * the job settles. */
static bs_status fingerprint_torn(bs_comm *c, const bs_coll_args *a, int bad) {
  bs_world_fail(c->w, BS_ERR_ABORTED, bs_clock_mono_ns(), NULL, 0,
                "fingerprint exchange before #%llu cut short: rank %d's "
                "fingerprint is missing or torn (it left, or the exchange "
                "was aborted)",
                (unsigned long long)a->seq, bad);
  c->w->be->wake(c->w);
  return fail_coll(c, a, BS_ERR_ABORTED);
}

/* One of the fingerprint check's own trips through the backend for a:
 * the report shows the rank in a, in its fingerprint stage. */
static bs_status fingerprint_exchange(bs_comm *c, const bs_coll_args *a,
                                      bs_coll_args ex) {
  ex.host = true;
  ex.seq = a->seq;
  ex.label = "fingerprint";
  bs_coll_args shown = *a;
  shown.label = "fingerprint";
  return run_backend(c, &ex, &shown, 0);
}

static int first_torn(const void *all, int n) {
  for (int i = 0; i < n; i++)
    if (!sealed((const fingerprint *)all + i))
      return i;
  return -1;
}

static int first_other(const void *all, int n) {
  const fingerprint *f = all;
  for (int i = 1; i < n; i++)
    if (memcmp(&f[i], &f[0], sizeof *f) != 0)
      return i;
  return -1;
}

/* The first torn fingerprint i as -2 - i, else the first that differs
 * from rank 0's, else -1: one scan, as scan_once keeps one answer (two
 * scans in turn had ranks take the other's answer away, each rank then
 * scanning all N again: seconds at 16,384 ranks). */
static int first_torn_or_other(const void *all, int n) {
  int torn = first_torn(all, n);
  return torn >= 0 ? -2 - torn : first_other(all, n);
}

/* Every rank's fingerprint, for the report of a mismatch. */
static bs_status gather_fingerprints(bs_comm *c, const bs_coll_args *a,
                                     const fingerprint *mine) {
  bs_status st = BS_OK;
  int n = bs_comm_front_size(c);
  const void *got = NULL;
  void *own = NULL;
  bs_coll_args ex;
  BS_CHECK(host_gather(c, mine, sizeof *mine, &got, &own, &ex));
  BS_CHECK(fingerprint_exchange(c, a, ex));
  const fingerprint *all = got;
  int found = scan_once(c, a->seq, first_torn_or_other, all, own);
  if (found <= -2)
    BS_CHECK(fingerprint_torn(c, a, -2 - found));
  if (found >= 0)
    BS_CHECK(fingerprint_desync(c, all, n, found));
  /* Equal after all (cannot happen: the all-reduce said otherwise). */
  BS_FAIL(BS_ERR_INTERNAL, NULL, "#%llu: fingerprints differ and agree",
          (unsigned long long)a->seq);
out:
  free(own);
  return st;
}

enum { FP_WORDS = sizeof(fingerprint) / sizeof(int64_t) };
_Static_assert(sizeof(fingerprint) % sizeof(int64_t) == 0,
               "a fingerprint is whole words");

/* The fingerprints are equal on every rank iff, word by word, their
 * maximum is their minimum: one all-reduce (the maximum of the words and
 * of their complements) rather than every rank gathering every rank's,
 * which grows with the square of the ranks. Every rank gets the same
 * answer; only a mismatch gathers them all, for the report. */
static bs_status check_fingerprint(bs_comm *c, const bs_coll_args *a) {
  bs_status st = BS_OK;
  fingerprint mine = fingerprint_of(a);
  int64_t w[2 * FP_WORDS];
  memcpy(w, &mine, sizeof mine);
  for (int k = 0; k < FP_WORDS; k++)
    w[FP_WORDS + k] = ~w[k];
  bs_coll_args ex = {.op = BS_COLL_ALL_REDUCE,
                     .send = w,
                     .recv = w,
                     .count = 2 * FP_WORDS,
                     .dt = BS_I64,
                     .redop = BS_MAX};
  BS_CHECK(fingerprint_exchange(c, a, ex));
  for (int k = 0; k < FP_WORDS; k++)
    if (w[k] != ~w[FP_WORDS + k])
      BS_CHECK(gather_fingerprints(c, a, &mine));
out:
  return st;
}

/* Number, record, fingerprint, run. */
static bs_status issue(bs_comm *c, bs_coll_args *a) {
  bs_status st = BS_OK;
  int size = bs_comm_front_size(c);
  size_t es = bs_coll_has_data(a->op) ? bs_dtype_size(a->dt) : 1;
  a->seq = ++c->seq;
  a->pg = c->pg ? c->pg->id : 0;
  memcpy(a->name, c->next_name, sizeof a->name);
  memset(c->next_name, 0, sizeof c->next_name);
  bs_flight_entry e = {.collective_seq_id = a->seq,
                       .p2p_seq_id = c->p2p_seq,
                       .pg = a->pg,
                       .profiling_name = bs_coll_name(a->op),
                       .label = a->label,
                       .has_data = bs_coll_has_data(a->op),
                       .input_numel = bs_coll_in_bytes(a, size) / es,
                       .output_numel = bs_coll_out_bytes(a, size) / es,
                       .input_dtype = a->dt,
                       .output_dtype = a->dt};
  memcpy(e.name, a->name, sizeof e.name);
  uint64_t id = bs_flight_record(c->fr, &e);
  /* An init has no communicator to exchange fingerprints over yet. */
  if (c->w->o.fingerprint && a->op != BS_COLL_COMM_INIT)
    BS_CHECK(check_fingerprint(c, a));
  if (a->make)
    a->make(a->make_ctx);
  bs_flight_advance(c->fr, id, BS_FLIGHT_STARTED);
  BS_CHECK(run_backend(c, a, a, a->seq));
  bs_flight_advance(c->fr, id, BS_FLIGHT_COMPLETED);
out:
  return st;
}

/* A shared result (bs_coll_args.view) has no buffer of this rank's to swap
 * in: the swap gets one of its own, zeroed, which the caller then reads. */
static bs_status swap_buffer(bs_comm *c, bs_coll_args *a) {
  size_t n = a->count * bs_dtype_size(a->dt) * (size_t)bs_comm_front_size(c);
  if (!a->view || a->recv)
    return BS_OK;
  free(c->swapped);
  if (!(c->swapped = calloc(n ? n : 1, 1)))
    return bs_err_fail(BS_ERR_NOMEM, NULL, "swapped collective: %zu bytes", n);
  a->recv = c->swapped;
  *a->view = c->swapped;
  a->view = NULL;
  return BS_OK;
}

/* comm/diverge: this rank issues something else than its peers. The swap
 * keeps to the caller's buffers (all in place), so it can only desync. */
static bs_status swap_op(bs_comm *c, bs_coll_args *a) {
  size_t chunk = a->count * bs_dtype_size(a->dt);
  bs_status st = swap_buffer(c, a);
  if (st != BS_OK)
    return st;
  switch (a->op) {
  case BS_COLL_ALL_GATHER:
    a->op = BS_COLL_REDUCE_SCATTER;
    a->send = a->recv;
    a->recv = (char *)a->recv + (size_t)c->grank * chunk;
    a->redop = BS_SUM;
    break;
  case BS_COLL_REDUCE_SCATTER:
    a->op = BS_COLL_ALL_REDUCE;
    a->send = a->recv;
    break;
  case BS_COLL_ALL_REDUCE:
    a->op = BS_COLL_BROADCAST;
    a->send = a->recv;
    a->root = 0;
    break;
  default:
    a->op = BS_COLL_ALL_REDUCE;
    a->send = a->recv;
    a->redop = BS_SUM;
    break;
  }
  return BS_OK;
}

/* A fault's wait: on the world's clock, virtual where it is scheduled. */
static void sleep_ms(bs_comm *c, uint64_t ms) {
  bs_world_sched_sleep(c->w, ms * 1000000ull);
}

/* failinfo of comm/diverge: odd issues an extra barrier first, even swaps
 * the collective (a barrier has nothing to swap: it gets the extra one). */
static bs_status inject_faults(bs_comm *c, bs_coll_args *a) {
  bs_status st = BS_OK;
  uint64_t info = 0;
  if (bs_fault_hit(BS_FP_COMM_RANK_EXIT, &info)) {
    bs_comm_die(c, "fault comm/rank_exit");
    BS_FAIL(BS_ERR_RANK_DEAD, NULL,
            "rank %d died before %s #%llu (fault comm/rank_exit)", c->grank,
            short_name(a->op), (unsigned long long)c->seq + 1);
  }
  if (bs_fault_hit(BS_FP_COMM_STALL, &info))
    sleep_ms(c, info);
  if (bs_fault_hit(BS_FP_COMM_DIVERGE, &info)) {
    if ((info & 1) || a->op == BS_COLL_BARRIER) {
      bs_coll_args extra = {.op = BS_COLL_BARRIER};
      BS_CHECK(issue(c, &extra));
    } else {
      BS_CHECK(swap_op(c, a));
    }
  }
out:
  return st;
}

/* What every call checks before it issues: the rank is still here, and
 * the world has not failed (then the call returns that failure). */
static bs_status admit(bs_comm *c, bs_coll_args *a) {
  bs_status st = BS_OK;
  if (c->gone || (c->parent && c->parent->gone))
    BS_FAIL(BS_ERR_RANK_DEAD, NULL, "%s: rank %d already left the communicator",
            short_name(a->op), c->grank);
  st = bs_world_abort_status(c->w);
  if (st != BS_OK) {
    a->seq = c->seq + 1; /* the one it would have been */
    st = fail_coll(c, a, st);
  }
out:
  return st;
}

static bs_status front(bs_comm *c, bs_coll_args *a) {
  bs_status st = BS_OK;
  if (!c)
    BS_FAIL(BS_ERR_INVALID, NULL, "%s on a NULL communicator",
            short_name(a->op));
  BS_CHECK(check_args(c, a));
  BS_CHECK(admit(c, a));
  if (c->destroyed)
    BS_FAIL(BS_ERR_STATE, NULL,
            "%s on rank %d: its communicator was destroyed (asleep) and not "
            "created again",
            short_name(a->op), c->grank);
  BS_CHECK(inject_faults(c, a));
  BS_CHECK(issue(c, a));
out:
  return st;
}

/* comm/init_skip: the rank never joins; it waits, outside any collective,
 * for the world to fail (its peers' watchdog), within twice the timeout. */
static bs_status skip_init(bs_comm *c, bs_coll_args *a) {
  uint64_t until = bs_world_sched_now(c->w) +
                   2ull * (uint64_t)c->w->o.timeout_ms * 1000000ull;
  bs_world_sched_until_failed(c->w, until);
  if (bs_world_abort_status(c->w) == BS_OK)
    bs_world_abort(c->w, BS_ERR_TIMEOUT, 0,
                   "rank %d never joined comm_init #%llu (fault "
                   "comm/init_skip) and nothing noticed",
                   c->grank, (unsigned long long)c->seq + 1);
  a->seq = c->seq + 1;
  return fail_coll(c, a, bs_world_abort_status(c->w));
}

/* The init's fault points: a rank that never joins, joins late, or whose
 * init fails (the world fails with it, so its peers stop waiting). */
static bs_status init_faults(bs_comm *c, bs_coll_args *a) {
  uint64_t info = 0;
  if (bs_fault_hit(BS_FP_COMM_INIT_SKIP, &info))
    return skip_init(c, a);
  if (bs_fault_hit(BS_FP_COMM_INIT_LATE, &info))
    sleep_ms(c, info);
  if (bs_fault_hit(BS_FP_COMM_INIT_FAIL, &info)) {
    bs_world_abort(c->w, BS_ERR_ABORTED, 0,
                   "rank %d: communicator init #%llu failed (fault "
                   "comm/init_fail)",
                   c->grank, (unsigned long long)c->seq + 1);
    a->seq = c->seq + 1;
    return fail_coll(c, a, BS_ERR_ABORTED);
  }
  return BS_OK;
}

/* Which part of a run's set-up a communicator's creation is (bs_span.h). */
static bs_span_kind init_span(const char *why) {
  static const struct {
    const char *why;
    bs_span_kind k;
  } kinds[] = {{"init", BS_SPAN_COMM_INIT},
               {"wake_up", BS_SPAN_COMM_WAKE},
               {"update_weights", BS_SPAN_COMM_TEMP}};
  for (size_t i = 0; why && i < sizeof kinds / sizeof *kinds; i++)
    if (strcmp(why, kinds[i].why) == 0)
      return kinds[i].k;
  return BS_SPAN_COMM_OTHER;
}

bs_status bs_comm_init(bs_comm *c, const char *why) {
  bs_status st = BS_OK;
  bs_coll_args a = {.op = BS_COLL_COMM_INIT, .label = why};
  uint64_t t0 = bs_span_now();
  if (!c)
    BS_FAIL(BS_ERR_INVALID, NULL, "comm_init on a NULL communicator");
  if (!c->destroyed)
    BS_FAIL(BS_ERR_STATE, NULL,
            "comm_init on rank %d: it has a communicator (destroy it first)",
            c->grank);
  /* A rank that calls the init reaches its fault points whether or not
   * the world failed meanwhile (when it learnt of that is timing), so one
   * seed counts the same reaches and fires the same faults. */
  if (!c->gone)
    BS_CHECK(init_faults(c, &a));
  BS_CHECK(admit(c, &a));
  BS_CHECK(issue(c, &a));
  c->destroyed = false;
out:
  bs_span_since(init_span(why), t0);
  return st;
}

bs_status bs_comm_destroy(bs_comm *c) {
  bs_status st = BS_OK;
  if (!c)
    BS_FAIL(BS_ERR_INVALID, NULL, "comm_destroy on a NULL communicator");
  if (c->destroyed || c->gone)
    goto out;
  c->destroyed = true;
  uint64_t t0 = bs_span_now();
  /* A failed teardown is the job's failure, not this rank's alone: every
   * rank then fails its next collective (the init that follows) alike. */
  pos_tearing(c, true, false);
  st = c->w->be->comm_destroy ? c->w->be->comm_destroy(c) : BS_OK;
  pos_tearing(c, false, st == BS_OK);
  bs_span_since(BS_SPAN_COMM_DESTROY, t0);
  if (st != BS_OK)
    bs_world_abort(c->w, st, 0, "rank %d: communicator teardown failed: %s",
                   c->grank, bs_err()->message);
out:
  return st;
}

bool bs_comm_ready(const bs_comm *c) {
  return c && !c->destroyed && !c->gone;
}

/* The public collectives: each only names its arguments for the front. */
static bs_coll_args coll_args(bs_coll op, const void *send, void *recv,
                              size_t count, bs_dtype dt, bs_redop redop,
                              int root) {
  return (bs_coll_args){.op = op,
                        .send = send,
                        .recv = recv,
                        .count = count,
                        .dt = dt,
                        .redop = redop,
                        .root = root};
}

static bs_status coll(bs_comm *c, bs_coll op, const void *send, void *recv,
                      size_t count, bs_dtype dt, bs_redop redop, int root) {
  bs_coll_args a = coll_args(op, send, recv, count, dt, redop, root);
  return front(c, &a);
}

bs_status bs_comm_all_gather(bs_comm *c, const void *send, void *recv,
                             size_t count, bs_dtype dt) {
  return coll(c, BS_COLL_ALL_GATHER, send, recv, count, dt, BS_SUM, 0);
}

bs_status bs_comm_reduce_scatter(bs_comm *c, const void *send, void *recv,
                                 size_t count, bs_dtype dt, bs_redop op) {
  return coll(c, BS_COLL_REDUCE_SCATTER, send, recv, count, dt, op, 0);
}

bs_status bs_comm_all_reduce(bs_comm *c, const void *send, void *recv,
                             size_t count, bs_dtype dt, bs_redop op) {
  return coll(c, BS_COLL_ALL_REDUCE, send, recv, count, dt, op, 0);
}

bs_status bs_comm_reduce_scatter_made(bs_comm *c, void (*make)(void *ctx),
                                      void *ctx, void *send, void *recv,
                                      size_t count, bs_dtype dt) {
  bs_coll_args a =
      coll_args(BS_COLL_REDUCE_SCATTER, send, recv, count, dt, BS_SUM, 0);
  a.make = make;
  a.make_ctx = ctx;
  a.consume = true;
  return front(c, &a);
}

bs_status bs_comm_broadcast(bs_comm *c, void *buf, size_t count, bs_dtype dt,
                            int root) {
  return coll(c, BS_COLL_BROADCAST, buf, buf, count, dt, BS_SUM, root);
}

bs_status bs_comm_barrier(bs_comm *c) {
  return coll(c, BS_COLL_BARRIER, NULL, NULL, 0, BS_U8, BS_SUM, 0);
}

/* An all-gather of host bytes through the front (recorded and watched):
 * host_gather's *all and own. */
static bs_status gather_host(bs_comm *c, const void *mine, size_t n,
                             const char *label, const void **all, void **own) {
  bs_status st = BS_OK;
  bs_coll_args a;
  if (!c)
    BS_FAIL(BS_ERR_INVALID, NULL, "%s on a NULL communicator", label);
  BS_CHECK(host_gather(c, mine, n, all, own, &a));
  a.label = label;
  BS_CHECK(front(c, &a));
out:
  return st;
}

/* What each rank sends to agree: its record, stamped with the sender (a
 * record's own rank is the rank that raised it, which after an earlier
 * agree is the winner's on every rank). 1-based, so that a zeroed slot
 * names no sender. */
typedef struct agree_env {
  int32_t sender; /* rank + 1 */
  int32_t pad;
  bs_error rec;
} agree_env;

/* The slot of the worst record, or -1 when a slot holds another sender's
 * (garbled): looked at once for the world where its ranks share the result
 * (scan_once), since every rank looking at every rank's record was N x N
 * (16,384 ranks: 2.7e8 records an agree). */
static int agree_scan(const void *all_v, int n) {
  const agree_env *all = all_v;
  int who = 0;
  for (int i = 0; i < n; i++) {
    if (all[i].sender != i + 1)
      return -1;
    if (all[i].rec.code > all[who].rec.code)
      who = i;
  }
  return who;
}

/* Whether the records came back as they went: this rank's own intact, and
 * every rank's in its own slot (who >= 0). */
static bool intact(const bs_comm *c, const agree_env *all,
                   const agree_env *mine, int who) {
  int me = bs_comm_front_rank(c), n = bs_comm_size(c);
  return me >= 0 && me < n && memcmp(&all[me], mine, sizeof *mine) == 0 &&
         who >= 0;
}

/* A collective that a fault swapped on every rank passes the fingerprint
 * (every rank issues the same wrong one) and garbles the records. Every
 * rank then finds them garbled and fails the phase alike, as a desync
 * (unless its own failure is worse), instead of some reading all-ok and
 * going on. */
static bool garbled(bs_comm *c, const agree_env *all, const agree_env *env,
                    bs_status mine, int who) {
  int me = bs_comm_rank(c);
  /* Alone, a rank agrees with itself (the rule below keeps its status). */
  if (bs_comm_size(c) < 2 || intact(c, all, env, who))
    return false;
  if (mine > BS_ERR_DESYNC) {
    *bs_err() = env->rec;
    return true;
  }
  char was[200] = "";
  if (mine != BS_OK)
    snprintf(was, sizeof was, " (this rank had %s: %.150s)",
             bs_status_name(mine), env->rec.message);
  bs_err_clear(); /* the agreed failure replaces this rank's own */
  bs_err_fail(BS_ERR_DESYNC, NULL,
              "agree: the gathered statuses came back garbled (seen by rank "
              "%d): a collective swapped on every rank%s",
              me, was);
  return true;
}

/* One gather of every rank's record does the max, the min rank and the
 * broadcast of §7.2 in a single collective. */
bs_status bs_comm_agree(bs_comm *c, bs_status mine) {
  bs_status st = BS_OK;
  agree_env env = {.sender = bs_comm_front_rank(c) + 1,
                   .rec = {.code = BS_OK, .rank = bs_err_rank()}};
  const void *got = NULL;
  void *own = NULL;
  int n = bs_comm_size(c);
  if (mine != BS_OK) {
    env.rec = *bs_err();
    if (env.rec.code == BS_OK) { /* a status without a record: say so */
      snprintf(env.rec.phase, sizeof env.rec.phase, "%s", bs_err_phase());
      snprintf(env.rec.message, sizeof env.rec.message, "%s (no error record)",
               bs_status_name(mine));
    }
    env.rec.code = mine; /* the status passed in is what this rank agrees on */
  }
  BS_CHECK(gather_host(c, &env, sizeof env, "agree", &got, &own));
  const agree_env *all = got;
  int who = n > 1 ? scan_once(c, c->seq, agree_scan, all, own) : 0;
  if (garbled(c, all, &env, mine, who)) {
    st = bs_err()->code;
    goto out;
  }
  /* Never better than this rank's own status: an exchange that a fault
   * garbled on every rank must not wash a rank's own failure away. */
  const agree_env *win = all[who].rec.code < (int)mine ? &env : &all[who];
  st = (bs_status)win->rec.code;
  if (st != BS_OK)
    *bs_err() = win->rec;
out:
  free(own);
  return st;
}

static int first_other_digest(const void *all, int n) {
  const bs_digest *d = all;
  for (int i = 1; i < n; i++)
    if (!bs_digest_eq(&d[i], &d[0]))
      return i;
  return -1;
}

bs_status bs_comm_check_same(bs_comm *c, const void *data, size_t n,
                             const char *what) {
  bs_status st = BS_OK;
  bs_digest mine;
  const void *got = NULL;
  void *own = NULL;
  BS_CHECK(bs_digest_sha256(data, n, &mine));
  BS_CHECK(gather_host(c, &mine, sizeof mine, "check_same", &got, &own));
  const bs_digest *all = got;
  int i = scan_once(c, c->seq, first_other_digest, all, own);
  if (i >= 0) {
    char a[65], b[65];
    bs_digest_hex(&all[0], a);
    bs_digest_hex(&all[i], b);
    BS_FAIL(BS_ERR_TENSOR_SET, what,
            "%s differs across ranks: rank %d has sha256 %.16s..., rank 0 "
            "has %.16s...",
            what ? what : "data", i, b, a);
  }
out:
  free(own);
  return st;
}

/* The steps point-to-point shares (bs_comm_backend.h). */
bs_status bs_comm_front_admit(bs_comm *c, bs_coll_args *a) {
  return admit(c, a);
}
