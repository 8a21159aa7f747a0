/* The hand-overs of bs_nccl_reap.h: a thread per communicator (the
 * destroys of one sleep run side by side), kept in a list that
 * bs_nccl_reap_all joins. */
#include "comm/backend/nccl/bs_nccl_reap.h"

#include "comm/backend/nccl/bs_nccl_lib.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct reaper {
  pthread_t thread;
  ncclComm_t comm;
  bool abort;
  struct reaper *next;
} reaper;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static reaper *reapers;
static pthread_once_t at_exit = PTHREAD_ONCE_INIT;

/* No NCCL thread may be left in a communicator while the process's exit
 * unloads CUDA under it. */
static void join_at_exit(void) {
  atexit(bs_nccl_reap_all);
}

static void free_comm(ncclComm_t comm, bool abort) {
  const bs_nccl_lib *nc = NULL;
  if (bs_nccl_lib_get(&nc) != BS_OK)
    return;
  if (abort)
    nc->CommAbort(comm);
  else
    nc->CommDestroy(comm);
}

static void *reap_main(void *arg) {
  const reaper *r = arg;
  free_comm(r->comm, r->abort);
  return NULL;
}

void bs_nccl_reap(ncclComm_t comm, bool abort) {
  pthread_once(&at_exit, join_at_exit);
  reaper *r = malloc(sizeof *r);
  if (r) {
    *r = (reaper){.comm = comm, .abort = abort};
    pthread_mutex_lock(&mu);
    bool started = pthread_create(&r->thread, NULL, reap_main, r) == 0;
    if (started) {
      r->next = reapers;
      reapers = r;
    }
    pthread_mutex_unlock(&mu);
    if (started)
      return;
    free(r);
  }
  free_comm(comm, abort);
}

void bs_nccl_reap_all(void) {
  pthread_mutex_lock(&mu);
  reaper *list = reapers;
  reapers = NULL;
  pthread_mutex_unlock(&mu);
  while (list) {
    reaper *next = list->next;
    pthread_join(list->thread, NULL);
    free(list);
    list = next;
  }
}
