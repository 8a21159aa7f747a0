#include "comm/bs_meet.h"

#include <stdio.h>
#include <string.h>

void bs_meet_world(bs_meet *m, const char *dir, int global, int first,
                   bool several, bs_world_opts *wo) {
  bool nccl = wo->backend && strcmp(wo->backend, "nccl") == 0;
  snprintf(m->dir, sizeof m->dir, "%s", dir);
  snprintf(m->uid, sizeof m->uid, "%s/nccl.uid", m->dir);
  snprintf(m->shm, sizeof m->shm, "%s/sim.shm", m->dir);
  wo->global_size = global;
  wo->first_rank = first;
  wo->uid_path = m->uid;
  wo->shm_path = several && !nccl ? m->shm : NULL;
  wo->abort_dir = several && nccl ? m->dir : NULL;
}
