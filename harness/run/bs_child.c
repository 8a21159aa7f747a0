#include "run/bs_child.h"

#include "run/bs_child_part.h"
#include "run/bs_child_spawn.h"
#include "run/bs_child_threads.h"

int bs_child_run(const bs_run_cfg *cfg, int fd) {
  if (cfg->spawn)
    return bs_child_spawn_run(cfg, fd);
  if (cfg->rendezvous)
    return bs_child_part_run(cfg, fd, NULL);
  return bs_child_threads_run(cfg, fd);
}
