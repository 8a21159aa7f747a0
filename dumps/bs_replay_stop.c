/* A signal ends a replay of threads (bs_replay_int.h): the ranks may wait
 * in a collective for as long as the watchdog's timeout, or outside one
 * for as long as bound, so a thread of its own looks for the signal
 * (bs_stop.h) every tenth of a second and aborts the world, which every
 * collective of every rank returns from at once, and wakes the ranks'
 * own waits. */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "bs_replay_int.h"
#include "bs_stop.h"

enum { LOOK_MS = 100 };

static struct timespec soon(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  t.tv_nsec += LOOK_MS * 1000000L;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000L;
  }
  return t;
}

/* Until the world has run: once a signal came and a rank has started (its
 * handle is what an abort needs), the world is aborted. */
static void *watch(void *arg) {
  bs_replay_state *r = arg;
  pthread_mutex_lock(&r->mu);
  while (!r->over) {
    struct timespec until = soon();
    int rc = 0;
    while (!r->over && rc != ETIMEDOUT)
      rc = pthread_cond_timedwait(&r->cv, &r->mu, &until);
    if (r->over || r->stopped || !bs_stop_signal() || !r->any)
      continue;
    r->stopped = true;
    pthread_cond_broadcast(&r->cv);
    bs_comm *c = r->any;
    pthread_mutex_unlock(&r->mu); /* the abort wakes the ranks, who lock */
    bs_comm_abort(c, bs_stop_name());
    pthread_mutex_lock(&r->mu);
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
