/* Where the processes of one process-per-rank world meet: a folder that
 * holds the NCCL unique id, the sim's shared board (ranks in several
 * processes) and, over NCCL with ranks in several processes, each
 * process's failure note (the sim's board carries failures itself). The
 * driver's launcher-started runs and replay's spawned ranks meet so. */
#ifndef BS_MEET_H
#define BS_MEET_H

#include <stdbool.h>

#include "comm/bs_comm.h"

typedef struct bs_meet {
  char dir[1024], uid[1100], shm[1100];
} bs_meet;

/* Points wo's process-per-rank fields into folder dir (its paths kept in
 * m, which must outlive wo's use): wo's wo->size ranks are first.. of
 * global; several: the ranks are in more than one process. */
void bs_meet_world(bs_meet *m, const char *dir, int global, int first,
                   bool several, bs_world_opts *wo);

#endif
