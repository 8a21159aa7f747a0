/* The worlds whose ranks run now in this process, so that a dump asked
 * for from outside (the runner's deadline) finds their flight recorders
 * and where each rank is. A fixed table: worlds are few. */
#include "comm/front/bs_world_running.h"
#include "comm/front/bs_comm_state.h"

enum { MAX_RUNNING = 64 };

static pthread_mutex_t running_mu = PTHREAD_MUTEX_INITIALIZER;
static bs_world *running[MAX_RUNNING];

void bs_world_running(bs_world *w, bool on) {
  pthread_mutex_lock(&running_mu);
  for (int i = 0; i < MAX_RUNNING; i++)
    if (on ? !running[i] : running[i] == w) {
      running[i] = on ? w : NULL;
      break;
    }
  pthread_mutex_unlock(&running_mu);
}

void bs_world_running_each(void (*fn)(const bs_world *w, void *arg),
                           void *arg) {
  pthread_mutex_lock(&running_mu);
  for (int i = 0; i < MAX_RUNNING; i++)
    if (running[i])
      fn(running[i], arg);
  pthread_mutex_unlock(&running_mu);
}

int bs_world_running_local_size(const bs_world *w) {
  return w ? w->o.size : 0;
}

int bs_world_running_first_rank(const bs_world *w) {
  return w ? w->o.first_rank : 0;
}
