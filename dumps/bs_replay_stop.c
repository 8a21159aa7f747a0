/* A signal ends a replay of threads (bs_replay_int.h): the ranks may wait
 * in a collective for as long as the watchdog's timeout, or outside one
 * for as long as bound, so a thread of its own looks for the signal
 * (bs_stop.h) every tenth of a second and aborts the world, which every
 * collective of every rank returns from at once, and wakes the ranks'
 * own waits. So does a replay that ends once no rank can move (every 2
 * ms): what waits then would wait out the watchdog for nothing. A
 * scheduled world knows that moment: its quiet hook ends it then. */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "bs_replay_int.h"
#include "bs_stop.h"

enum { LOOK_MS = 100 };

static struct timespec soon(long ms) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_nsec += ms * 1000000L;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000L;
  }
  return t;
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Whether rank b's last call holds collective s. */
static bool holds(const bs_replay_state *r, const bs_replay_step *s, int b) {
  const bs_replay_step *t = r->last_step[b];
  for (size_t k = 0; t && k < r->last_len[b]; k++)
    if (t[k].group == s->group && t[k].seq == s->seq &&
        t[k].op != BS_COLL_SEND && t[k].op != BS_COLL_RECV)
      return true;
  return false;
}

/* Whether a collective of a rank's last call has every member in it: it
 * will complete (its members' wake-up under way: hundreds of threads take
 * a while), and the replay has not settled. A p2p op's two ranks wake at
 * once: the quiet time covers them. */
static bool completes(const bs_replay_state *r) {
  for (int a = 0; r->last_step && a < r->n; a++)
    for (size_t k = 0; r->last_step[a] && k < r->last_len[a]; k++) {
      const bs_replay_step *s = &r->last_step[a][k];
      const bs_replay_group *g = &r->g[s->group];
      int have = 0;
      if (s->op == BS_COLL_SEND || s->op == BS_COLL_RECV)
        continue;
      for (int i = 0; i < g->n && have == i; i++)
        have += holds(r, s, g->members[i]);
      if (have == g->n)
        return true;
    }
  return false;
}

/* No rank can move (under mu): every one through its plan or in its last
 * call, none of those calls able to complete, none in or out of one for
 * settle_ms (quiet: the scheduler knows none can); or as r->settle says. */
static bool settled(bs_replay_state *r, bool quiet) {
  if (r->settled || !r->any)
    return false;
  if (r->settle)
    return r->settle(r, r->settle_ctx);
  return r->settle_ms > 0 && r->last > 0 && r->last + r->done == r->local &&
         (quiet ||
          now_ns() - r->moved_ns >= (uint64_t)r->settle_ms * 1000000ull) &&
         !completes(r);
}

/* Under mu: the replay ends, stopped or settled; unlocks around the abort
 * (which wakes the ranks, who lock). */
static void end_world(bs_replay_state *r, bool stop, bool still) {
  r->stopped = r->stopped || stop;
  r->settled = still;
  pthread_cond_broadcast(&r->cv);
  bs_comm *c = r->any;
  pthread_mutex_unlock(&r->mu);
  bs_comm_abort(c, stop ? bs_stop_name() : "no rank can move");
  bs_comm_wake_word(c, &r->word);
  pthread_mutex_lock(&r->mu);
}

void bs_replay_stop_quiet(void *ctx) {
  bs_replay_state *r = ctx;
  pthread_mutex_lock(&r->mu);
  if (!r->stopped && settled(r, true))
    end_world(r, false, true);
  pthread_mutex_unlock(&r->mu);
}

void bs_replay_stop_sched(bs_replay_state *r, const bs_world *w) {
  r->sched = bs_world_sched_on(w);
}

/* Until the world has run: once a signal came, or no rank can move, and a
 * rank has started (its handle is what an abort needs), the world is
 * aborted. */
static void *watch(void *arg) {
  bs_replay_state *r = arg;
  bool quick = !r->sched && (r->settle || r->settle_ms > 0);
  pthread_mutex_lock(&r->mu);
  while (!r->over) {
    struct timespec until = soon(quick ? 2 : LOOK_MS);
    int rc = 0;
    while (!r->over && rc != ETIMEDOUT)
      rc = pthread_cond_timedwait(&r->cv, &r->mu, &until);
    bool stop = !r->stopped && bs_stop_signal() && r->any;
    bool still = !stop && quick && settled(r, false);
    if (!r->over && (stop || still))
      end_world(r, stop, still);
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}

bs_status bs_replay_stop_start(bs_replay_state *r, pthread_t *t) {
  if (pthread_create(t, NULL, watch, r) != 0)
    return bs_err_fail(BS_ERR_INTERNAL, NULL,
                       "replay: cannot start the signal's watch");
  return BS_OK;
}

void bs_replay_stop_end(bs_replay_state *r, pthread_t t) {
  pthread_mutex_lock(&r->mu);
  r->over = true;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  pthread_join(t, NULL);
}
